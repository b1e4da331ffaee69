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

// A connection's threadblock hint and the first op that asked for it.
struct Hint {
  int tb = -1;
  int op = -1;
};

struct RankConnections {
  std::set<Connection> sends, recvs;
  bool local = false;                                        // has local instructions (copies)
  std::map<std::pair<Connection, Connection>, int> fusable;  // (recv, send) -> candidates
  std::map<Connection, Hint> send_hints, recv_hints;         // hinted connections
};

std::string op_field(int op, bool send) {
  return "ops[" + std::to_string(op) + "]." + (send ? "send_tb" : "recv_tb");
}

std::string describe(int rank, bool send, const Connection& c) {
  return "rank " + std::to_string(rank) + (send ? " sending to " : " receiving from ") +
         std::to_string(c.first) + " on channel " + std::to_string(c.second);
}

// Records that connection `c` of `rank` is hinted into threadblock `tb` by `op`; one
// connection lives in one threadblock.
void add_hint(std::map<Connection, Hint>& hints, int rank, bool send, const Connection& c, int tb,
              int op) {
  if (tb < 0) return;
  const auto [it, fresh] = hints.emplace(c, Hint{tb, op});
  if (fresh || it->second.tb == tb) return;
  throw UserError("", op_field(op, send),
                  describe(rank, send, c) + " is hinted into threadblock " + std::to_string(tb) +
                      " and, by ops[" + std::to_string(it->second.op) + "], into threadblock " +
                      std::to_string(it->second.tb) + "; a connection lives in one threadblock");
}

// The distinct connections among `all`, as a set.
std::set<Connection> distinct(std::vector<Connection> all) {
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return {all.begin(), all.end()};
}

// The connections, hints and fusable pairs of one rank (`candidates`: the rank's).
RankConnections collect(const Lowered& l, int rank, const RankIndex& index,
                        const std::vector<FusionCandidate>& candidates) {
  RankConnections rc;
  // Thousands of transfers per rank over a few dozen connections: gathered in vectors and
  // counted after one sort each (tree inserts per transfer were most of this pass).
  std::vector<Connection> sends, recvs;
  for (const int t : index.transfers[rank]) {
    const Transfer& tr = l.transfers[t];
    if (tr.src_rank == rank) {
      sends.push_back({tr.dst_rank, tr.channel});
      add_hint(rc.send_hints, rank, true, {tr.dst_rank, tr.channel}, tr.send_tb, tr.op);
    }
    if (tr.dst_rank == rank) {
      recvs.push_back({tr.src_rank, tr.channel});
      add_hint(rc.recv_hints, rank, false, {tr.src_rank, tr.channel}, tr.recv_tb, tr.op);
    }
  }
  rc.sends = distinct(std::move(sends));
  rc.recvs = distinct(std::move(recvs));
  rc.local = index.has_local[rank] != 0;
  std::vector<std::pair<Connection, Connection>> pairs;
  for (const FusionCandidate& c : candidates) {
    const Transfer& in = l.transfers[l.instructions[c.receive].recv_transfer];
    const Transfer& out = l.transfers[l.instructions[c.send].send_transfer];
    if (in.channel != out.channel) continue;  // a threadblock has one channel
    pairs.push_back({{in.src_rank, in.channel}, {out.dst_rank, out.channel}});
  }
  std::sort(pairs.begin(), pairs.end());
  for (size_t i = 0; i < pairs.size();) {
    size_t end = i;
    while (end < pairs.size() && pairs[end] == pairs[i]) ++end;
    rc.fusable.emplace_hint(rc.fusable.end(), pairs[i], static_cast<int>(end - i));
    i = end;
  }
  return rc;
}

// (hint, is send) -> the op that put the connection of that direction into the threadblock.
using PlacedBy = std::map<std::pair<int, bool>, int>;

// Puts the hinted connections of one direction into their threadblocks (by hint) and takes
// them off `free`; a threadblock has one send and one receive connection, on one channel.
void place_hinted(int rank, bool send, const std::map<Connection, Hint>& hints,
                  std::map<int, PlannedThreadblock>& hinted, PlacedBy& placed_by,
                  std::set<Connection>& free) {
  for (const auto& [c, h] : hints) {
    PlannedThreadblock& tb = hinted[h.tb];
    tb.hint = h.tb;
    int& peer = send ? tb.send_peer : tb.recv_peer;
    if (peer >= 0) {
      throw UserError("", op_field(h.op, send),
                      describe(rank, send, c) + " is hinted into threadblock " +
                          std::to_string(h.tb) + ", which ops[" +
                          std::to_string(placed_by.at({h.tb, send})) + "] already gave the peer " +
                          std::to_string(peer) + " on channel " + std::to_string(tb.channel) +
                          "; a threadblock has one " + (send ? "send" : "receive") + " peer");
    }
    if ((tb.send_peer >= 0 || tb.recv_peer >= 0) && tb.channel != c.second) {
      throw UserError(
          "", op_field(h.op, send),
          describe(rank, send, c) + " is hinted into threadblock " + std::to_string(h.tb) +
              ", which runs on channel " + std::to_string(tb.channel) + " for ops[" +
              std::to_string(placed_by.at({h.tb, !send})) + "]; a threadblock has one channel");
    }
    peer = c.first;
    tb.channel = c.second;
    placed_by[{h.tb, send}] = h.op;
    free.erase(c);
  }
}

// The threadblocks the algorithm's hints ask for, with their connections taken off the free
// ones. A hinted pair whose receive connection the deadlock check unpaired is split (the repair
// wins over the hint): the receive connection becomes free again.
std::vector<PlannedThreadblock> hinted_threadblocks(int rank, const RankConnections& rc,
                                                    std::set<Connection>& free_sends,
                                                    std::set<Connection>& free_recvs,
                                                    const std::set<Unpaired>& unpaired) {
  std::map<int, PlannedThreadblock> hinted;
  PlacedBy placed_by;
  place_hinted(rank, true, rc.send_hints, hinted, placed_by, free_sends);
  place_hinted(rank, false, rc.recv_hints, hinted, placed_by, free_recvs);
  std::vector<PlannedThreadblock> out;
  for (auto& [hint, tb] : hinted) {
    if (tb.send_peer >= 0 && tb.recv_peer >= 0 &&
        unpaired.count({rank, tb.recv_peer, tb.channel})) {
      free_recvs.insert({tb.recv_peer, tb.channel});
      tb.recv_peer = -1;
    }
    out.push_back(tb);
  }
  return out;
}

// Threadblock ids: hinted threadblocks keep their hint as id, the others fill the remaining
// ids in their order. Hints beyond the rank's number of threadblocks n cannot be kept with
// dense ids 0..n-1: those move down to the highest ids, keeping their relative order
// (hint j of h sorted hints gets min(hint, n - h + j)).
std::vector<PlannedThreadblock> number_threadblocks(std::vector<PlannedThreadblock> hinted,
                                                    std::vector<PlannedThreadblock> unhinted) {
  const int n = static_cast<int>(hinted.size() + unhinted.size());
  const int h = static_cast<int>(hinted.size());
  std::vector<int> id_of_slot(n, -1);  // id -> index into hinted, or -1 for an unhinted one
  for (int j = 0; j < h; ++j) id_of_slot[std::min(hinted[j].hint, n - h + j)] = j;
  std::vector<PlannedThreadblock> out;
  out.reserve(n);
  size_t next = 0;
  for (int id = 0; id < n; ++id) {
    out.push_back(id_of_slot[id] >= 0 ? std::move(hinted[id_of_slot[id]])
                                      : std::move(unhinted[next++]));
  }
  return out;
}

std::vector<PlannedThreadblock> plan_rank(int rank, RankConnections& rc, int max_threadblocks,
                                          const std::set<Unpaired>& unpaired) {
  std::set<Connection> free_sends = rc.sends, free_recvs = rc.recvs;
  const std::vector<PlannedThreadblock> hinted =
      hinted_threadblocks(rank, rc, free_sends, free_recvs, unpaired);
  std::vector<PlannedThreadblock> tbs;
  // Pair connections with most fusion candidates first (MSCCLang's rcs chains, e.g. a ring).
  std::vector<std::pair<int, std::pair<Connection, Connection>>> pairs;
  for (const auto& [p, n] : rc.fusable) pairs.push_back({n, p});
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
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
    return static_cast<int>(hinted.size() + tbs.size() + free_sends.size() + free_recvs.size()) +
           local;
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
  tbs = number_threadblocks(hinted, std::move(tbs));
  if (static_cast<int>(tbs.size()) > max_threadblocks) {
    throw UserError("", "threadblocks",
                    "rank " + std::to_string(rank) + " needs " + std::to_string(tbs.size()) +
                        " threadblocks, more than the limit of " +
                        std::to_string(max_threadblocks));
  }
  return tbs;
}

}  // namespace

std::vector<PlannedThreadblock> pair_connections(const Lowered& l, int rank, const RankIndex& index,
                                                 const std::vector<FusionCandidate>& candidates,
                                                 int max_threadblocks,
                                                 const std::set<Unpaired>& unpaired) {
  RankConnections rc = collect(l, rank, index, candidates);
  return plan_rank(rank, rc, max_threadblocks, unpaired);
}

void assign_threadblocks(Lowered& l, int rank, const std::vector<int>& order,
                         const std::vector<PlannedThreadblock>& planned) {
  std::vector<PlannedThreadblock>& tbs = l.threadblocks[rank];
  tbs = planned;
  std::map<std::tuple<int, int, int>, int> tb_of;  // (peer, channel, direction) -> threadblock
  for (int t = 0; t < static_cast<int>(tbs.size()); ++t) {
    if (tbs[t].send_peer >= 0) tb_of[{tbs[t].send_peer, tbs[t].channel, 0}] = t;
    if (tbs[t].recv_peer >= 0) tb_of[{tbs[t].recv_peer, tbs[t].channel, 1}] = t;
    if (tbs[t].send_peer < 0 && tbs[t].recv_peer < 0) tb_of[{-1, -1, 2}] = t;
  }
  for (const int i : order) {
    Instruction& in = l.instructions[i];
    int tb = -1;
    if (in.send_transfer >= 0) {
      const Transfer& tr = l.transfers[in.send_transfer];
      tb = tb_of.at({tr.dst_rank, tr.channel, 0});
    }
    if (in.recv_transfer >= 0) {
      const Transfer& tr = l.transfers[in.recv_transfer];
      const int recv_tb = tb_of.at({tr.src_rank, tr.channel, 1});
      CCSYNTH_CHECK(tb < 0 || tb == recv_tb) << "fused instruction split over threadblocks";
      tb = recv_tb;
    }
    if (tb < 0) tb = tb_of.at({-1, -1, 2});
    in.threadblock = tb;
    tbs[tb].instructions.push_back(i);
  }
}

}  // namespace ccsynth::compiler
