#include "compiler/aggregation.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace ccsynth::compiler {

namespace {

bool adjacent(BufferRef a, int count, BufferRef b) {
  return a.buffer == b.buffer && a.index + count == b.index;
}

// Merges transfer `b` into `a` when both ends (and the reduce operand) continue `a`.
// Slots (rank, step, buffer, index) written by more than one receive of a step: reduces into
// them run in op order, so they are never merged (that would reorder them).
using SlotCount = std::map<std::tuple<int, int, BufferRef>, int>;

bool multiply_written(const SlotCount& writes, const Instruction& r) {
  for (int j = 0; j < r.count; ++j) {
    auto it = writes.find({r.rank, r.key.step, BufferRef{r.dst.buffer, r.dst.index + j}});
    if (it != writes.end() && it->second > 1) return true;
  }
  return false;
}

// Threadblock hints of merged transfers: -1 follows the other; two different ones never merge
// (threadblock assignment reports the conflict, naming the op).
bool hints_agree(int a, int b) { return a < 0 || b < 0 || a == b; }

bool try_merge(Lowered& l, Transfer& a, Transfer& b, int max_count, const SlotCount& writes) {
  Instruction& as = l.instructions[a.sender];
  Instruction& ar = l.instructions[a.receiver];
  const Instruction& bs = l.instructions[b.sender];
  const Instruction& br = l.instructions[b.receiver];
  if (a.count + b.count > max_count) return false;
  if (!hints_agree(a.send_tb, b.send_tb) || !hints_agree(a.recv_tb, b.recv_tb)) return false;
  if (multiply_written(writes, ar) || multiply_written(writes, br)) return false;
  if (!adjacent(as.src, a.count, bs.src) || !adjacent(ar.dst, a.count, br.dst)) return false;
  if (ar.type == StepType::kRecvReduceCopy && !adjacent(ar.src, a.count, br.src)) return false;
  a.count += b.count;
  a.send_tb = std::max(a.send_tb, b.send_tb);
  a.recv_tb = std::max(a.recv_tb, b.recv_tb);
  as.count = ar.count = a.count;
  as.key = std::min(as.key, bs.key);
  ar.key = std::min(ar.key, br.key);
  b.removed = true;
  l.instructions[b.sender].removed = true;
  l.instructions[b.receiver].removed = true;
  return true;
}

void aggregate_transfers(Lowered& l, int max_count) {
  // Group by (step, src, dst, receive type, channel hint), then merge in source order.
  std::map<std::tuple<int, int, int, int, int>, std::vector<int>> groups;
  SlotCount writes;
  for (const Transfer& tr : l.transfers) {
    const Instruction& r = l.instructions[tr.receiver];
    if (tr.removed) continue;
    for (int j = 0; j < r.count; ++j) {
      ++writes[{r.rank, r.key.step, BufferRef{r.dst.buffer, r.dst.index + j}}];
    }
  }
  for (int t = 0; t < static_cast<int>(l.transfers.size()); ++t) {
    const Transfer& tr = l.transfers[t];
    if (tr.removed) continue;
    const Instruction& r = l.instructions[tr.receiver];
    groups[{r.key.step, tr.src_rank, tr.dst_rank, static_cast<int>(r.type), tr.channel}].push_back(
        t);
  }
  for (auto& [key, members] : groups) {
    std::sort(members.begin(), members.end(), [&](int x, int y) {
      return l.instructions[l.transfers[x].sender].src < l.instructions[l.transfers[y].sender].src;
    });
    int head = members.front();
    for (size_t i = 1; i < members.size(); ++i) {
      if (!try_merge(l, l.transfers[head], l.transfers[members[i]], max_count, writes))
        head = members[i];
    }
  }
}

void aggregate_copies(Lowered& l, int max_count) {
  std::map<std::pair<int, int>, std::vector<int>> groups;  // (rank, step) -> copies
  for (int i = 0; i < static_cast<int>(l.instructions.size()); ++i) {
    const Instruction& in = l.instructions[i];
    if (!in.removed && in.type == StepType::kCopy) groups[{in.rank, in.key.step}].push_back(i);
  }
  for (auto& [key, members] : groups) {
    // Copies of one step may be ordered (in-place aliasing); only merge when no copy reads
    // what another one writes.
    std::set<BufferRef> written;
    for (int m : members) written.insert(l.instructions[m].dst);
    const bool independent = std::none_of(members.begin(), members.end(), [&](int m) {
      return written.count(l.instructions[m].src) > 0;
    });
    if (!independent) continue;
    std::sort(members.begin(), members.end(),
              [&](int x, int y) { return l.instructions[x].src < l.instructions[y].src; });
    int head = members.front();
    for (size_t i = 1; i < members.size(); ++i) {
      Instruction& h = l.instructions[head];
      Instruction& n = l.instructions[members[i]];
      if (h.count + n.count <= max_count && adjacent(h.src, h.count, n.src) &&
          adjacent(h.dst, h.count, n.dst)) {
        h.count += n.count;
        h.key = std::min(h.key, n.key);
        n.removed = true;
      } else {
        head = members[i];
      }
    }
  }
}

}  // namespace

void aggregate(Lowered& lowered, int max_count) {
  aggregate_transfers(lowered, max_count);
  aggregate_copies(lowered, max_count);
}

int aggregated_transfers(const Lowered& lowered, int rank, int max_count) {
  // Aggregates a copy holding only the rank's transfers.
  Lowered part;
  for (const Transfer& t : lowered.transfers) {
    if (t.removed || (t.src_rank != rank && t.dst_rank != rank)) continue;
    Transfer copy = t;
    copy.sender = static_cast<int>(part.instructions.size());
    part.instructions.push_back(lowered.instructions[t.sender]);
    copy.receiver = static_cast<int>(part.instructions.size());
    part.instructions.push_back(lowered.instructions[t.receiver]);
    part.transfers.push_back(copy);
  }
  aggregate_transfers(part, max_count);
  return static_cast<int>(std::count_if(part.transfers.begin(), part.transfers.end(),
                                        [](const Transfer& t) { return !t.removed; }));
}

}  // namespace ccsynth::compiler
