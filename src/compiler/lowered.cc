#include "compiler/lowered.h"

#include <algorithm>
#include <utility>

namespace ccsynth::compiler {

std::vector<std::vector<int>> Lowered::rank_orders() const {
  // Sorted by (key, index) with the keys copied next to the indices: the order of a stable sort
  // by key, without an indirect lookup per comparison.
  std::vector<std::vector<std::pair<OrderKey, int>>> keyed(collective.num_ranks);
  for (int i = 0; i < static_cast<int>(instructions.size()); ++i) {
    const Instruction& in = instructions[i];
    if (!in.removed) keyed[in.rank].emplace_back(in.key, i);
  }
  std::vector<std::vector<int>> orders(collective.num_ranks);
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
  index.transfers.resize(l.collective.num_ranks);
  index.has_local.assign(l.collective.num_ranks, 0);
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

}  // namespace ccsynth::compiler
