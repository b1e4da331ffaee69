#include "compiler/lowered.h"

#include <algorithm>

namespace ccsynth::compiler {

std::vector<std::vector<int>> Lowered::rank_orders() const {
  std::vector<std::vector<int>> orders(collective.num_ranks);
  for (int i = 0; i < static_cast<int>(instructions.size()); ++i) {
    const Instruction& in = instructions[i];
    if (!in.removed) orders[in.rank].push_back(i);
  }
  for (auto& order : orders) {
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return instructions[a].key < instructions[b].key; });
  }
  return orders;
}

}  // namespace ccsynth::compiler
