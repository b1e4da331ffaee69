#include "ccsynth/core/algorithm.h"

#include <algorithm>
#include <tuple>

namespace ccsynth {

std::string to_string(OpKind kind) { return kind == OpKind::kCopy ? "copy" : "reduce"; }

int Algorithm::num_steps() const {
  int steps = 0;
  for (const ChunkOp& op : ops) steps = std::max(steps, op.step + 1);
  return steps;
}

void sort_ops(Algorithm& algorithm) {
  auto before = [](const ChunkOp& a, const ChunkOp& b) {
    return std::tie(a.step, a.start_us, a.src, a.dst, a.chunk) <
           std::tie(b.step, b.start_us, b.src, b.dst, b.chunk);
  };
  // Synthesizers mostly make their ops in this order already: a stable sort of a sorted range
  // changes nothing, and it would still merge every op through a buffer as large as the ops
  // (1.6 GB for NCCL's ring at 4096 ranks).
  if (std::is_sorted(algorithm.ops.begin(), algorithm.ops.end(), before)) return;
  std::stable_sort(algorithm.ops.begin(), algorithm.ops.end(), before);
}

std::ostream& operator<<(std::ostream& os, const ChunkOp& op) {
  os << "step " << op.step << ": " << to_string(op.kind) << " chunk " << op.chunk;
  if (op.count > 1) os << "+" << op.count - 1;
  os << " " << op.src << " -> " << op.dst;
  if (op.start_us >= 0) os << " at " << op.start_us << "us";
  if (op.channel >= 0) os << " ch " << op.channel;
  if (op.send_tb >= 0) os << " sendtb " << op.send_tb;
  if (op.recv_tb >= 0) os << " recvtb " << op.recv_tb;
  return os;
}

std::ostream& operator<<(std::ostream& os, const Algorithm& a) {
  os << "Algorithm " << a.name << " on " << a.topology << ": " << a.collective << ", "
     << a.ops.size() << " ops in " << a.num_steps() << " steps\n";
  for (const ChunkOp& op : a.ops) os << "  " << op << "\n";
  return os;
}

}  // namespace ccsynth
