#include "ccsynth/compiler/lowered.h"

#include <algorithm>

namespace ccsynth::compiler {

std::vector<int> Lowered::rank_order(int rank) const {
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(instructions.size()); ++i) {
    const Instruction& in = instructions[i];
    if (!in.removed && in.rank == rank) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return instructions[a].key < instructions[b].key;
  });
  return order;
}

bool reads_src(StepType type) {
  switch (type) {
    case StepType::kSend:
    case StepType::kRecvReduceSend:
    case StepType::kRecvReduceCopy:
    case StepType::kRecvReduceCopySend:
    case StepType::kCopy:
    case StepType::kReduce:
      return true;
    default:
      return false;
  }
}

bool writes_dst(StepType type) {
  switch (type) {
    case StepType::kRecv:
    case StepType::kRecvCopySend:
    case StepType::kRecvReduceCopy:
    case StepType::kRecvReduceCopySend:
    case StepType::kCopy:
    case StepType::kReduce:
      return true;
    default:
      return false;
  }
}

}  // namespace ccsynth::compiler
