#include "compiler/aggregation.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace ccsynth::compiler {

namespace {

bool adjacent(BufferRef a, int count, BufferRef b) {
  return a.buffer == b.buffer && a.index + count == b.index;
}

// Merges transfer `b` into `a` when both ends (and the reduce operand) continue `a`.
// Threadblock hints of merged transfers: -1 follows the other; two different ones never merge
// (threadblock assignment reports the conflict, naming the op).
bool hints_agree(int a, int b) { return a < 0 || b < 0 || a == b; }

bool try_merge(Lowered& l, Transfer& a, Transfer& b, int max_count, const RepeatedWrites& writes) {
  Instruction& as = l.instructions[a.sender];
  Instruction& ar = l.instructions[a.receiver];
  const Instruction& bs = l.instructions[b.sender];
  const Instruction& br = l.instructions[b.receiver];
  if (a.count + b.count > max_count) return false;
  if (!hints_agree(a.send_tb, b.send_tb) || !hints_agree(a.recv_tb, b.recv_tb)) return false;
  if (writes.touches(ar) || writes.touches(br)) return false;
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
  const RepeatedWrites writes(l);
  const TransferGroups groups = transfer_groups(l);
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<int> members = groups.group(g);
    // Merged in source order (ties by index, so the result does not depend on the sort).
    std::sort(members.begin(), members.end(), [&](int x, int y) {
      const BufferRef& sx = l.instructions[l.transfers[x].sender].src;
      const BufferRef& sy = l.instructions[l.transfers[y].sender].src;
      return sx != sy ? sx < sy : x < y;
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

TransferGroups transfer_groups(const Lowered& l) {
  // (step, src, dst, receive type, channel hint, index), sorted: groups are runs of equal
  // leading fields.
  using Key = std::tuple<int, int, int, int, int, int>;
  std::vector<Key> keys;
  keys.reserve(l.transfers.size());
  for (int t = 0; t < static_cast<int>(l.transfers.size()); ++t) {
    const Transfer& tr = l.transfers[t];
    if (tr.removed) continue;
    const Instruction& r = l.instructions[tr.receiver];
    keys.emplace_back(r.key.step, tr.src_rank, tr.dst_rank, static_cast<int>(r.type), tr.channel,
                      t);
  }
  sort_in_runs(keys, [](const Key& k) { return std::get<0>(k); });
  auto same_group = [](const Key& a, const Key& b) {
    return std::get<0>(a) == std::get<0>(b) && std::get<1>(a) == std::get<1>(b) &&
           std::get<2>(a) == std::get<2>(b) && std::get<3>(a) == std::get<3>(b) &&
           std::get<4>(a) == std::get<4>(b);
  };
  TransferGroups out;
  out.starts.push_back(0);
  for (size_t i = 0; i < keys.size();) {
    size_t end = i + 1;
    while (end < keys.size() && same_group(keys[i], keys[end])) ++end;
    if (end - i >= 2) {
      for (size_t k = i; k < end; ++k) out.members.push_back(std::get<5>(keys[k]));
      out.starts.push_back(out.members.size());
    }
    i = end;
  }
  return out;
}

RepeatedWrites::RepeatedWrites(const Lowered& l) {
  std::vector<SortKey128> slots;
  slots.reserve(l.transfers.size());
  for (const Transfer& tr : l.transfers) {
    if (tr.removed) continue;
    const Instruction& r = l.instructions[tr.receiver];
    for (int j = 0; j < r.count; ++j) slots.push_back(slot(r, j));
  }
  sort_in_runs(slots, [](SortKey128 slot) { return static_cast<uint64_t>(slot >> 96); });
  for (size_t i = 1; i < slots.size(); ++i) {
    if (slots[i] == slots[i - 1] && (repeated_.empty() || repeated_.back() != slots[i]))
      repeated_.push_back(slots[i]);
  }
}

SortKey128 RepeatedWrites::slot(const Instruction& r, int j) {
  return pack(r.key.step, r.rank, static_cast<int>(r.dst.buffer), r.dst.index + j);
}

bool RepeatedWrites::touches(const Instruction& r) const {
  if (repeated_.empty()) return false;
  for (int j = 0; j < r.count; ++j) {
    if (std::binary_search(repeated_.begin(), repeated_.end(), slot(r, j))) return true;
  }
  return false;
}

void aggregate(Lowered& lowered, int max_count) {
  aggregate_transfers(lowered, max_count);
  aggregate_copies(lowered, max_count);
}

int aggregated_transfers(const Lowered& lowered, const std::vector<int>& transfers, int max_count) {
  // Aggregates a copy holding only those transfers.
  Lowered part;
  for (const int t : transfers) {
    const Transfer& original = lowered.transfers[t];
    Transfer copy = original;
    copy.sender = static_cast<int>(part.instructions.size());
    part.instructions.push_back(lowered.instructions[original.sender]);
    copy.receiver = static_cast<int>(part.instructions.size());
    part.instructions.push_back(lowered.instructions[original.receiver]);
    part.transfers.push_back(copy);
  }
  aggregate_transfers(part, max_count);
  return static_cast<int>(std::count_if(part.transfers.begin(), part.transfers.end(),
                                        [](const Transfer& t) { return !t.removed; }));
}

}  // namespace ccsynth::compiler
