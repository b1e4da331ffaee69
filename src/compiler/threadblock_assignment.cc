#include "compiler/threadblock_assignment.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "ccsynth/core/error.h"

namespace ccsynth::compiler {

namespace {

using Connection = std::pair<int, int>;  // (peer, channel)

struct RankConnections {
  std::set<Connection> sends, recvs;
  bool local = false;                                        // has local instructions (copies)
  std::map<std::pair<Connection, Connection>, int> fusable;  // (recv, send) -> candidates
};

std::vector<RankConnections> collect(const Lowered& l,
                                     const std::vector<FusionCandidate>& candidates) {
  std::vector<RankConnections> ranks(l.collective.num_ranks);
  for (const Transfer& tr : l.transfers) {
    if (tr.removed) continue;
    ranks[tr.src_rank].sends.insert({tr.dst_rank, tr.channel});
    ranks[tr.dst_rank].recvs.insert({tr.src_rank, tr.channel});
  }
  for (const Instruction& in : l.instructions) {
    if (!in.removed && in.send_transfer < 0 && in.recv_transfer < 0) ranks[in.rank].local = true;
  }
  for (const FusionCandidate& c : candidates) {
    const Transfer& in = l.transfers[l.instructions[c.receive].recv_transfer];
    const Transfer& out = l.transfers[l.instructions[c.send].send_transfer];
    if (in.channel != out.channel) continue;  // a threadblock has one channel
    ++ranks[in.dst_rank].fusable[{{in.src_rank, in.channel}, {out.dst_rank, out.channel}}];
  }
  return ranks;
}

std::vector<PlannedThreadblock> plan_rank(int rank, RankConnections& rc, int max_threadblocks,
                                          const std::set<Unpaired>& unpaired) {
  std::vector<PlannedThreadblock> tbs;
  // Pair connections with most fusion candidates first (MSCCLang's rcs chains, e.g. a ring).
  std::vector<std::pair<int, std::pair<Connection, Connection>>> pairs;
  for (const auto& [p, n] : rc.fusable) pairs.push_back({n, p});
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::set<Connection> free_sends = rc.sends, free_recvs = rc.recvs;
  for (const auto& [n, p] : pairs) {
    const auto& [recv, send] = p;
    if (!free_recvs.count(recv) || !free_sends.count(send)) continue;
    if (unpaired.count({rank, recv.first, recv.second})) continue;
    free_recvs.erase(recv);
    free_sends.erase(send);
    tbs.push_back({send.first, recv.first, recv.second, {}});
  }
  const int local = rc.local ? 1 : 0;
  auto total = [&] {
    return static_cast<int>(tbs.size() + free_sends.size() + free_recvs.size()) + local;
  };
  // Over the limit: pair leftover send and receive connections of the same channel.
  for (auto s = free_sends.begin(); total() > max_threadblocks && s != free_sends.end();) {
    auto r = std::find_if(free_recvs.begin(), free_recvs.end(), [&](const Connection& c) {
      return c.second == s->second && !unpaired.count({rank, c.first, c.second});
    });
    if (r == free_recvs.end()) {
      ++s;
      continue;
    }
    tbs.push_back({s->first, r->first, s->second, {}});
    free_recvs.erase(r);
    s = free_sends.erase(s);
  }
  for (const Connection& s : free_sends) tbs.push_back({s.first, -1, s.second, {}});
  for (const Connection& r : free_recvs) tbs.push_back({-1, r.first, r.second, {}});
  std::stable_sort(tbs.begin(), tbs.end(), [](const auto& a, const auto& b) {
    return std::tie(a.channel, a.send_peer, a.recv_peer) <
           std::tie(b.channel, b.send_peer, b.recv_peer);
  });
  if (local) tbs.push_back({-1, -1, 0, {}});
  if (static_cast<int>(tbs.size()) > max_threadblocks) {
    throw UserError("", "threadblocks",
                    "rank " + std::to_string(rank) + " needs " + std::to_string(tbs.size()) +
                        " threadblocks, more than the limit of " +
                        std::to_string(max_threadblocks));
  }
  return tbs;
}

}  // namespace

ConnectionPlan pair_connections(const Lowered& l, const std::vector<FusionCandidate>& candidates,
                                int max_threadblocks, const std::set<Unpaired>& unpaired) {
  std::vector<RankConnections> ranks = collect(l, candidates);
  ConnectionPlan plan;
  plan.threadblocks.resize(l.collective.num_ranks);
  for (int r = 0; r < l.collective.num_ranks; ++r) {
    plan.threadblocks[r] = plan_rank(r, ranks[r], max_threadblocks, unpaired);
  }
  return plan;
}

void assign_threadblocks(Lowered& l, const ConnectionPlan& plan) {
  l.threadblocks = plan.threadblocks;
  std::vector<std::map<std::tuple<int, int, int>, int>> tb_of(l.collective.num_ranks);
  for (int r = 0; r < l.collective.num_ranks; ++r) {
    const auto& tbs = l.threadblocks[r];
    for (int t = 0; t < static_cast<int>(tbs.size()); ++t) {
      if (tbs[t].send_peer >= 0) tb_of[r][{tbs[t].send_peer, tbs[t].channel, 0}] = t;
      if (tbs[t].recv_peer >= 0) tb_of[r][{tbs[t].recv_peer, tbs[t].channel, 1}] = t;
      if (tbs[t].send_peer < 0 && tbs[t].recv_peer < 0) tb_of[r][{-1, -1, 2}] = t;
    }
  }
  const auto orders = l.rank_orders();
  for (int r = 0; r < l.collective.num_ranks; ++r) {
    for (int i : orders[r]) {
      Instruction& in = l.instructions[i];
      int tb = -1;
      if (in.send_transfer >= 0) {
        const Transfer& tr = l.transfers[in.send_transfer];
        tb = tb_of[r].at({tr.dst_rank, tr.channel, 0});
      }
      if (in.recv_transfer >= 0) {
        const Transfer& tr = l.transfers[in.recv_transfer];
        const int recv_tb = tb_of[r].at({tr.src_rank, tr.channel, 1});
        CCSYNTH_CHECK(tb < 0 || tb == recv_tb) << "fused instruction split over threadblocks";
        tb = recv_tb;
      }
      if (tb < 0) tb = tb_of[r].at({-1, -1, 2});
      in.threadblock = tb;
      l.threadblocks[r][tb].instructions.push_back(i);
    }
  }
}

}  // namespace ccsynth::compiler
