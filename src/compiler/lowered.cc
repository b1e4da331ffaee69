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

}  // namespace ccsynth::compiler
