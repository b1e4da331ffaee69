#include "compiler/fusion.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace ccsynth::compiler {

namespace {

// Output locations of every rank's post slots: values there are never "unused".
std::vector<std::set<BufferRef>> post_locations(const Lowered& l) {
  std::vector<std::set<BufferRef>> out(l.collective.num_ranks);
  for (const ChunkSpec& spec : l.collective.chunks) {
    for (const Slot& s : spec.post) out[s.rank].insert(output_location(l.collective, s, l.inplace));
  }
  return out;
}

// A buffer slot of one rank as one hashable number.
int64_t slot_code(BufferRef ref) {
  return static_cast<int64_t>(ref.index) * 4 + static_cast<int>(ref.buffer);
}

// (rank, peer, channel, direction 0 = send / 1 = receive) as one hashable number.
int64_t connection_key(int rank, int peer, int channel, int direction) {
  return ((static_cast<int64_t>(rank) << 32 | static_cast<int64_t>(peer)) << 8 | channel) << 1 |
         direction;
}

bool is_receive(StepType t) { return t == StepType::kRecv || t == StepType::kRecvReduceCopy; }

struct ReceiveUse {
  int readers = 0;      // instructions reading what the receive wrote
  int overwritten = 0;  // its slots written again later
  int send = -1;        // first send reading exactly its range
};

void scan_rank(const Lowered& l, const std::vector<int>& order, const std::set<BufferRef>& posts,
               std::vector<FusionCandidate>& out) {
  std::unordered_map<int64_t, int> last_writer;  // slot_code(slot) -> instruction
  std::unordered_map<int, ReceiveUse> uses;
  std::vector<int> receives;
  std::vector<int> seen;  // receives already counted as read by this instruction
  for (int i : order) {
    const Instruction& in = l.instructions[i];
    if (reads_src(in.type)) {
      seen.clear();
      bool exact = true;
      int writer = -1;
      for (int j = 0; j < in.count; ++j) {
        auto it = last_writer.find(slot_code({in.src.buffer, in.src.index + j}));
        const int w = it == last_writer.end() ? -1 : it->second;
        if (j == 0) writer = w;
        if (w != writer) exact = false;
        if (w < 0 || std::find(seen.begin(), seen.end(), w) != seen.end()) continue;
        auto use = uses.find(w);
        if (use == uses.end()) continue;
        seen.push_back(w);
        ++use->second.readers;
      }
      if (in.type == StepType::kSend && exact && writer >= 0 && uses.count(writer)) {
        const Instruction& r = l.instructions[writer];
        if (r.dst == in.src && r.count == in.count && uses[writer].send < 0) {
          uses[writer].send = i;
        }
      }
    }
    if (writes_dst(in.type)) {
      for (int j = 0; j < in.count; ++j) {
        int& w = last_writer[slot_code({in.dst.buffer, in.dst.index + j})];
        auto it = uses.find(w);
        if (it != uses.end() && w != i) ++it->second.overwritten;
        w = i;
      }
      if (in.type == StepType::kCopy || in.type == StepType::kReduce) {
        // a local write after a receive counts as overwrite above; nothing else to track
      }
    }
    if (is_receive(in.type)) {
      uses[i] = ReceiveUse{};
      receives.push_back(i);
      // last_writer already points at i for its slots (set above)
    }
  }
  for (int r : receives) {
    const ReceiveUse& u = uses[r];
    if (u.send < 0) continue;
    const Instruction& in = l.instructions[r];
    bool is_output = false;
    for (int j = 0; j < in.count; ++j) {
      if (posts.count({in.dst.buffer, in.dst.index + j})) is_output = true;
    }
    const bool unused = u.readers == 1 && (u.overwritten == in.count || !is_output);
    out.push_back({r, u.send, unused});
  }
}

}  // namespace

std::vector<std::vector<FusionCandidate>> find_fusion_candidates(const Lowered& l) {
  std::vector<std::vector<FusionCandidate>> out(l.collective.num_ranks);
  const auto orders = l.rank_orders();
  const auto posts = post_locations(l);
  for (int rank = 0; rank < l.collective.num_ranks; ++rank) {
    scan_rank(l, orders[rank], posts[rank], out[rank]);
  }
  return out;
}

int fuse_instructions(Lowered& l, int rank, const std::vector<FusionCandidate>& candidates,
                      const std::vector<int>& transfers,
                      const std::vector<PlannedThreadblock>& planned,
                      const std::set<int>& no_fuse) {
  // Threadblock of each connection: (peer, channel, direction) -> index.
  std::unordered_map<int64_t, int> tb_of;
  for (int t = 0; t < static_cast<int>(planned.size()); ++t) {
    if (planned[t].send_peer >= 0)
      tb_of[connection_key(rank, planned[t].send_peer, planned[t].channel, 0)] = t;
    if (planned[t].recv_peer >= 0)
      tb_of[connection_key(rank, planned[t].recv_peer, planned[t].channel, 1)] = t;
  }
  // Keys of the sends of every send connection (peer, channel), sorted.
  std::unordered_map<int64_t, std::vector<OrderKey>> send_keys;
  for (const int t : transfers) {
    const Transfer& tr = l.transfers[t];
    if (tr.removed || tr.src_rank != rank) continue;
    send_keys[connection_key(tr.src_rank, tr.dst_rank, tr.channel, 0)].push_back(
        l.instructions[tr.sender].key);
  }
  for (auto& [connection, keys] : send_keys) std::sort(keys.begin(), keys.end());
  int fused = 0;
  for (const FusionCandidate& c : candidates) {
    if (no_fuse.count(c.receive)) continue;
    Instruction& recv = l.instructions[c.receive];
    Instruction& send = l.instructions[c.send];
    const Transfer& in = l.transfers[recv.recv_transfer];
    Transfer& out = l.transfers[send.send_transfer];
    auto rt = tb_of.find(connection_key(recv.rank, in.src_rank, in.channel, 1));
    auto st = tb_of.find(connection_key(send.rank, out.dst_rank, out.channel, 0));
    if (rt == tb_of.end() || st == tb_of.end() || rt->second != st->second) continue;
    // The send moves up to the receive's place: no other send of its connection may lie
    // in between, or the receiver would match them in the wrong order.
    // With none in between, the send's key becomes the receive's in place: still sorted.
    auto& keys = send_keys[connection_key(send.rank, out.dst_rank, out.channel, 0)];
    auto next = std::upper_bound(keys.begin(), keys.end(), recv.key);
    if (next == keys.end() || !(*next == send.key)) continue;
    *next = recv.key;
    if (recv.type == StepType::kRecv) {
      recv.type = StepType::kRecvCopySend;
    } else {
      recv.type = c.result_unused ? StepType::kRecvReduceSend : StepType::kRecvReduceCopySend;
    }
    recv.send_transfer = send.send_transfer;
    out.sender = c.receive;
    recv.fused_send = c.send;
    send.removed = true;
    ++fused;
  }
  return fused;
}

}  // namespace ccsynth::compiler
