// The compiled program of NCCL's ring allgather, built directly (compile_ring_allgather).

#include <optional>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/collective.h"

namespace ccsynth::compiler {

namespace {

// NCCL's rings as an allgather algorithm carries them: per ring k (chunk k of every rank, ops
// on channel k, or without a channel hint where there is one ring) the ranks in ring order
// from rank 0. Empty unless every rank sends ring k's chunks to one next rank, those form one
// cycle of all ranks (three or more), and chunk c leaves the rank j places after its owner at
// step j (j = 0 .. N-2), one chunk per copy, with no other hints, for the built-in allgather.
std::vector<std::vector<int>> forwarding_rings(const Algorithm& algorithm) {
  const Collective& c = algorithm.collective;
  const int n = c.num_ranks;
  const int rings = c.chunks_per_rank;
  // Two ranks: no forwarding step to pair a rank's send and receive, which the compiler puts
  // on threadblocks of their own.
  if (c.kind != CollectiveKind::kAllGather || n < 3 || rings < 1 ||
      algorithm.ops.size() != static_cast<size_t>(n) * static_cast<size_t>(n - 1) * rings)
    return {};
  const auto at = [n](int ring, int rank) { return static_cast<size_t>(ring) * n + rank; };
  std::vector<int> next(static_cast<size_t>(rings) * n, -1);  // per (ring, rank)
  for (const ChunkOp& op : algorithm.ops) {
    const int ring = op.chunk % rings;
    if (op.chunk < 0 || op.chunk >= n * rings || op.src < 0 || op.src >= n || op.dst < 0 ||
        op.dst >= n || op.src == op.dst || op.channel != (rings == 1 && op.channel < 0 ? -1 : ring))
      return {};
    int& peer = next[at(ring, op.src)];
    if (peer >= 0 && peer != op.dst) return {};
    peer = op.dst;
  }
  std::vector<std::vector<int>> out(static_cast<size_t>(rings));
  std::vector<int> position(static_cast<size_t>(rings) * n, -1);
  for (int ring = 0; ring < rings; ++ring) {
    std::vector<int>& order = out[static_cast<size_t>(ring)];
    order.push_back(0);
    position[at(ring, 0)] = 0;
    for (int r = next[at(ring, 0)]; r != 0; r = next[at(ring, r)]) {
      if (r < 0 || position[at(ring, r)] >= 0) return {};
      position[at(ring, r)] = static_cast<int>(order.size());
      order.push_back(r);
    }
    if (static_cast<int>(order.size()) != n) return {};
  }
  std::vector<char> seen(static_cast<size_t>(n) * rings * (n - 1), 0);  // (chunk, hop)
  for (const ChunkOp& op : algorithm.ops) {
    const int ring = op.chunk % rings;
    const int owner = op.chunk / rings;
    const int hop = (position[at(ring, op.src)] - position[at(ring, owner)] + n) % n;
    if (op.kind != OpKind::kCopy || op.count != 1 || op.step != hop || hop > n - 2 ||
        op.send_tb != -1 || op.recv_tb != -1)
      return {};
    char& once = seen[static_cast<size_t>(op.chunk) * (n - 1) + hop];
    if (once) return {};
    once = 1;
  }
  // Last: the built-in allgather's chunk lists take N^2 R slots (0.6 GB at 4096 ranks), too
  // much to build for every allgather of N(N-1)R ops that is no ring (TACOS's on a mesh).
  if (!(c == make_collective(CollectiveKind::kAllGather, n, rings, c.root))) return {};
  return out;
}

Step make_step(StepType type, Buffer src, int src_offset, int dst_offset, int count = 1) {
  Step s;
  s.type = type;
  s.src_buffer = src;
  s.src_offset = src_offset;
  s.dst_buffer = Buffer::kOutput;
  s.dst_offset = dst_offset;
  s.count = count;
  return s;
}

// Ring `k`'s threadblock on the rank at `at` in `order`: its chunk out; then each received one
// into the output and on (the first one's source is the input slot of the send it was fused
// with); the last one only received. Chunk k of rank q is output slot q * rings + k.
Threadblock ring_threadblock(const std::vector<int>& order, int at, int k, int rings) {
  const int n = static_cast<int>(order.size());
  const auto slot = [&](int back) {
    return order[static_cast<size_t>((at - back + n) % n)] * rings + k;
  };
  Threadblock tb;
  tb.id = k;
  tb.channel = k;
  tb.send_peer = order[static_cast<size_t>((at + 1) % n)];
  tb.recv_peer = order[static_cast<size_t>((at - 1 + n) % n)];
  tb.steps.reserve(static_cast<size_t>(n));
  tb.steps.push_back(make_step(StepType::kSend, Buffer::kInput, k, slot(0)));
  for (int back = 1; back <= n - 2; ++back) {
    tb.steps.push_back(
        back == 1 ? make_step(StepType::kRecvCopySend, Buffer::kInput, k, slot(1))
                  : make_step(StepType::kRecvCopySend, Buffer::kOutput, slot(back), slot(back)));
  }
  tb.steps.push_back(make_step(StepType::kRecv, Buffer::kOutput, slot(n - 1), slot(n - 1)));
  return tb;
}

// Whether `options` compile the rings of `algorithm` as compile_ring_allgather builds them:
// one instance, fused, out of place, in step order, each ring in one threadblock, and FIFOs of
// two slots or more (with one, every rank's first fused step waits for its successor's full
// FIFO, and the compiler unfuses the ring: DeadlockCheck.FusedRingNeedsTwoSlots).
bool ring_options(const Algorithm& algorithm, const CompileOptions& options) {
  const int n = algorithm.collective.num_ranks;
  const int rings = algorithm.collective.chunks_per_rank;
  return options.instances == 1 && options.fuse && !options.inplace && !options.schedule_order &&
         options.aggregate && options.max_steps_per_threadblock >= n &&
         options.max_threadblocks_per_rank >= rings + 1 && options.max_channels >= rings &&
         options.max_count >= rings && options.fifo_slots >= 2;
}

}  // namespace

bool compiles_as_ring_allgather(const Algorithm& algorithm, const CompileOptions& options) {
  return ring_options(algorithm, options) && !forwarding_rings(algorithm).empty();
}

std::optional<Program> compile_ring_allgather(const Algorithm& algorithm,
                                              const CompileOptions& options) {
  if (!ring_options(algorithm, options)) return std::nullopt;
  const std::vector<std::vector<int>> orders = forwarding_rings(algorithm);
  if (orders.empty()) return std::nullopt;
  const int n = algorithm.collective.num_ranks;
  const int rings = algorithm.collective.chunks_per_rank;
  Program p;
  p.name = options.name.empty() ? algorithm.name : options.name;
  if (p.name.empty()) p.name = algorithm.collective.name;
  p.collective = CollectiveKind::kAllGather;
  p.root = algorithm.collective.root;
  p.protocol = options.protocol;
  p.num_channels = rings;
  p.chunks_per_loop = n * rings;
  p.num_ranks = n;
  p.min_bytes = options.min_bytes;
  p.max_bytes = options.max_bytes;
  p.gpus.resize(static_cast<size_t>(n));
  for (int rank = 0; rank < n; ++rank) {
    GpuProgram& gpu = p.gpus[static_cast<size_t>(rank)];
    gpu.rank = rank;
    gpu.input_chunks = rings;
    gpu.output_chunks = n * rings;
    gpu.threadblocks.reserve(static_cast<size_t>(rings) + 1);
  }
  for (int k = 0; k < rings; ++k) {
    const std::vector<int>& order = orders[static_cast<size_t>(k)];
    for (int at = 0; at < n; ++at) {
      p.gpus[static_cast<size_t>(order[static_cast<size_t>(at)])].threadblocks.push_back(
          ring_threadblock(order, at, k, rings));
    }
  }
  for (int rank = 0; rank < n; ++rank) {
    Threadblock copy;  // the rank's own chunks, input to output
    copy.id = rings;
    copy.steps.push_back(make_step(StepType::kCopy, Buffer::kInput, 0, rank * rings, rings));
    p.gpus[static_cast<size_t>(rank)].threadblocks.push_back(std::move(copy));
  }
  return p;
}

}  // namespace ccsynth::compiler
