#include "compiler/fusion.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <unordered_map>

namespace ccsynth::compiler {

namespace {

// Per rank, the slot codes of its post slots' output locations, sorted: values there are never
// "unused".
std::vector<std::vector<int64_t>> post_locations(const Lowered& l) {
  std::vector<std::vector<int64_t>> out(l.collective->num_ranks);
  for (const ChunkSpec& spec : l.collective->chunks) {
    for (const Slot& s : spec.post)
      out[s.rank].push_back(slot_code(output_location(*l.collective, s, l.inplace)));
  }
  for (std::vector<int64_t>& codes : out) std::sort(codes.begin(), codes.end());
  return out;
}

// (rank, peer, channel, direction 0 = send / 1 = receive) as one hashable number.
int64_t connection_key(int rank, int peer, int channel, int direction) {
  return ((static_cast<int64_t>(rank) << 32 | static_cast<int64_t>(peer)) << 8 | channel) << 1 |
         direction;
}

bool is_receive(StepType t) { return t == StepType::kRecv || t == StepType::kRecvReduceCopy; }

struct ReceiveUse {
  int receive = -1;     // the receive instruction
  int readers = 0;      // instructions reading what the receive wrote
  int overwritten = 0;  // its slots written again later
  int send = -1;        // first send reading exactly its range
};

// Tables reused from rank to rank: per slot code of the rank its last writer (instruction or
// -1), and per instruction its entry in the rank's receive uses (or -1; reset after each rank).
struct ScanTables {
  std::vector<int> last_writer;
  std::vector<int> use_of;
  std::vector<ReceiveUse> uses;
  std::vector<int> seen;  // receives already counted as read by one instruction
};

// One past the largest slot code the instructions in `order` touch.
size_t slot_codes(const Lowered& l, const std::vector<int>& order) {
  int64_t end = 0;
  for (int i : order) {
    const Instruction& in = l.instructions[i];
    if (reads_src(in.type))
      end = std::max(end, slot_code({in.src.buffer, in.src.index + in.count}));
    if (writes_dst(in.type))
      end = std::max(end, slot_code({in.dst.buffer, in.dst.index + in.count}));
  }
  return static_cast<size_t>(end);
}

// Counts, for the receive that last wrote each slot instruction `i` reads, one more reader;
// when `i` is a send reading exactly one receive's whole range, records it as that receive's
// send.
void count_reads(const Lowered& l, int i, ScanTables& t) {
  const Instruction& in = l.instructions[i];
  t.seen.clear();
  bool exact = true;
  int writer = -1;
  for (int j = 0; j < in.count; ++j) {
    const int w = t.last_writer[slot_code({in.src.buffer, in.src.index + j})];
    if (j == 0) writer = w;
    if (w != writer) exact = false;
    if (w < 0 || t.use_of[w] < 0 || std::find(t.seen.begin(), t.seen.end(), w) != t.seen.end())
      continue;
    t.seen.push_back(w);
    ++t.uses[t.use_of[w]].readers;
  }
  if (in.type != StepType::kSend || !exact || writer < 0 || t.use_of[writer] < 0) return;
  ReceiveUse& use = t.uses[t.use_of[writer]];
  const Instruction& r = l.instructions[writer];
  if (r.dst == in.src && r.count == in.count && use.send < 0) use.send = i;
}

void scan_rank(const Lowered& l, const std::vector<int>& order, const std::vector<int64_t>& posts,
               ScanTables& t, std::vector<FusionCandidate>& out) {
  t.last_writer.assign(slot_codes(l, order), -1);
  t.uses.clear();
  for (int i : order) {
    const Instruction& in = l.instructions[i];
    if (reads_src(in.type)) count_reads(l, i, t);
    if (writes_dst(in.type)) {
      for (int j = 0; j < in.count; ++j) {
        int& w = t.last_writer[slot_code({in.dst.buffer, in.dst.index + j})];
        if (w >= 0 && w != i && t.use_of[w] >= 0) ++t.uses[t.use_of[w]].overwritten;
        w = i;
      }
    }
    if (is_receive(in.type)) {
      t.use_of[i] = static_cast<int>(t.uses.size());
      t.uses.push_back({i, 0, 0, -1});
    }
  }
  for (const ReceiveUse& u : t.uses) {
    t.use_of[u.receive] = -1;
    if (u.send < 0) continue;
    const Instruction& in = l.instructions[u.receive];
    bool is_output = false;
    for (int j = 0; j < in.count; ++j) {
      if (std::binary_search(posts.begin(), posts.end(),
                             slot_code({in.dst.buffer, in.dst.index + j})))
        is_output = true;
    }
    const bool unused = u.readers == 1 && (u.overwritten == in.count || !is_output);
    out.push_back({u.receive, u.send, unused});
  }
}

}  // namespace

std::vector<std::vector<FusionCandidate>> find_fusion_candidates(
    const Lowered& l, const std::vector<std::vector<int>>& orders) {
  std::vector<std::vector<FusionCandidate>> out(l.collective->num_ranks);
  const auto posts = post_locations(l);
  ScanTables tables;
  tables.use_of.assign(l.instructions.size(), -1);
  for (int rank = 0; rank < l.collective->num_ranks; ++rank) {
    scan_rank(l, orders[rank], posts[rank], tables, out[rank]);
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
