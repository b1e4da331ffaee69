#include "compiler/lowered.h"

#include <algorithm>
#include <utility>

namespace ccsynth::compiler {

std::vector<std::vector<int>> Lowered::rank_orders() const {
  // Sorted by (key, index) with the keys copied next to the indices: the order of a stable sort
  // by key, without an indirect lookup per comparison.
  std::vector<std::vector<std::pair<OrderKey, int>>> keyed(collective->num_ranks);
  for (int i = 0; i < static_cast<int>(instructions.size()); ++i) {
    const Instruction& in = instructions[i];
    if (!in.removed) keyed[in.rank].emplace_back(in.key, i);
  }
  std::vector<std::vector<int>> orders(collective->num_ranks);
  for (size_t r = 0; r < keyed.size(); ++r) {
    std::sort(keyed[r].begin(), keyed[r].end());
    orders[r].reserve(keyed[r].size());
    for (const auto& [key, i] : keyed[r]) orders[r].push_back(i);
    keyed[r] = {};
  }
  return orders;
}

RankIndex index_ranks(const Lowered& l) {
  RankIndex index;
  index.instructions = l.rank_orders();
  index.transfers.resize(l.collective->num_ranks);
  index.has_local.assign(l.collective->num_ranks, 0);
  for (int t = 0; t < static_cast<int>(l.transfers.size()); ++t) {
    const Transfer& tr = l.transfers[t];
    if (tr.removed) continue;
    index.transfers[tr.src_rank].push_back(t);
    if (tr.dst_rank != tr.src_rank) index.transfers[tr.dst_rank].push_back(t);
  }
  for (const Instruction& in : l.instructions) {
    if (!in.removed && in.send_transfer < 0 && in.recv_transfer < 0) index.has_local[in.rank] = 1;
  }
  return index;
}

void group_by_rank(Lowered& l, size_t copy_limit_bytes) {
  std::vector<int> next(l.collective->num_ranks + 1, 0);  // per rank its next new index
  for (const Instruction& in : l.instructions) ++next[in.rank + 1];
  for (size_t r = 1; r < next.size(); ++r) next[r] += next[r - 1];
  std::vector<int> moved_to(l.instructions.size());
  for (size_t i = 0; i < l.instructions.size(); ++i) moved_to[i] = next[l.instructions[i].rank]++;
  for (Transfer& t : l.transfers) {
    if (t.sender >= 0) t.sender = moved_to[t.sender];
    if (t.receiver >= 0) t.receiver = moved_to[t.receiver];
  }
  if (l.instructions.size() * sizeof(Instruction) <= copy_limit_bytes) {
    std::vector<Instruction> grouped(l.instructions.size());
    for (size_t i = 0; i < l.instructions.size(); ++i) grouped[moved_to[i]] = l.instructions[i];
    l.instructions = std::move(grouped);
    return;
  }
  // Moved in place, cycle by cycle: position i holds an instruction bound for moved_to[i] until
  // that is i.
  for (size_t i = 0; i < l.instructions.size(); ++i) {
    for (int to = moved_to[i]; to != static_cast<int>(i); to = moved_to[i]) {
      std::swap(l.instructions[i], l.instructions[to]);
      std::swap(moved_to[i], moved_to[to]);
    }
  }
}

}  // namespace ccsynth::compiler
