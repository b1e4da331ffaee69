#pragma once
// The compiler's intermediate form between the Algorithm and the Program: MSCCLang's
// Instruction DAG (sec. 4.2) kept as a flat list. Every instruction belongs to one rank and has
// a global order key; every remote op becomes a Transfer linking a sending and a receiving
// instruction. Passes rewrite this list; dependency insertion turns it into a Program.

#include <cstdint>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/program.h"

namespace ccsynth::compiler {

/// Position in the global topological order: algorithm step, phase (0 = sends and local reads,
/// 1 = receives), then op index and piece. Sends of a step precede its receives, so a send
/// always reads the value held at the start of the step (core/algorithm.h semantics).
struct OrderKey {
  int step = 0;
  int phase = 0;
  int op = 0;
  int piece = 0;

  auto operator<=>(const OrderKey&) const = default;
};

/// A buffer slot of one rank as one number, dense per rank (a table index): the index times
/// four, the buffer in the low two bits.
inline int64_t slot_code(BufferRef ref) {
  return static_cast<int64_t>(ref.index) * 4 + static_cast<int64_t>(ref.buffer);
}

/// One instruction on one rank (an MSCCL-IR step before threadblock assignment).
struct Instruction {
  int rank = 0;
  StepType type = StepType::kNop;
  bool removed = false;                // merged away by aggregation or fusion
  BufferRef src{Buffer::kInput, -1};   // read operand (send source, local reduce operand)
  BufferRef dst{Buffer::kOutput, -1};  // written location
  int count = 1;
  OrderKey key;
  int send_transfer = -1;  // transfer this instruction sends, or -1
  int recv_transfer = -1;  // transfer this instruction receives, or -1
  int fused_send = -1;     // the send instruction folded into this one by fusion, or -1
  int threadblock = -1;    // assigned by threadblock assignment

  bool operator==(const Instruction&) const = default;
};
static_assert(sizeof(Instruction) == 60);  // two per transfer: 4 GB at 4096 ranks

/// One remote transfer: `sender` sends, `receiver` receives (indices into instructions).
struct Transfer {
  int src_rank = 0;
  int dst_rank = 0;
  int sender = -1;
  int receiver = -1;
  int channel = -1;  // hint from the algorithm until channel assignment
  int count = 1;
  bool removed = false;
  int op = -1;       // index of the algorithm op it lowers (the first, when aggregated)
  int send_tb = -1;  // threadblock hint on src (ChunkOp::send_tb), or -1
  int recv_tb = -1;  // threadblock hint on dst (ChunkOp::recv_tb), or -1

  bool operator==(const Transfer&) const = default;
};

/// A threadblock being built: its connections and its instructions in key order.
struct PlannedThreadblock {
  int send_peer = -1;
  int recv_peer = -1;
  int channel = 0;
  std::vector<int> instructions;
  int hint = -1;  // the threadblock id the algorithm asked for (send_tb / recv_tb), or -1

  bool operator==(const PlannedThreadblock&) const = default;
};

/// The whole lowered program.
struct Lowered {
  const Collective* collective = nullptr;  // the algorithm's, which outlives the lowering
  bool inplace = false;
  bool timed = false;               // every op of the algorithm has a start time (TACCL, TACOS)
  std::vector<int> scratch_chunks;  // per rank
  std::vector<Instruction> instructions;
  std::vector<Transfer> transfers;
  std::vector<std::vector<PlannedThreadblock>> threadblocks;  // per rank, after assignment
  /// Set by channel assignment in a timed lowering: for the first transfer of each channel a
  /// connection spilled into, the last transfer of the channel before it (its send is ordered
  /// after that one, keeping the order the synthesizer timed).
  std::unordered_map<int, int> spill_after;

  /// For every rank, its instructions that are not removed, sorted by key (one pass).
  std::vector<std::vector<int>> rank_orders() const;
};

/// What belongs to each rank of a Lowered, so that the per-rank scheduling passes (pairing,
/// fusion, threadblocks, dependencies) can run on some ranks only: a rank's program depends
/// only on its own instructions and on the transfers it sends or receives.
struct RankIndex {
  std::vector<std::vector<int>> instructions;  // per rank: not removed, in (key, index) order
  std::vector<std::vector<int>> transfers;     // per rank: not removed, sent or received
  std::vector<char> has_local;                 // per rank: has a local instruction (copy)
};

/// Indexes `lowered` by rank.
RankIndex index_ranks(const Lowered& lowered);

/// Moves every rank's instructions next to each other (ranks in order, each rank's in their
/// order before) and renumbers the transfers' ends. The scheduling passes run rank by rank, and
/// a rank's instructions were spread over the whole vector in the order of the algorithm's
/// steps (a cache miss per instruction at thousands of ranks). Needs no fusion or
/// threadblocks yet: only the transfers refer to instructions. Up to `copy_limit_bytes` of
/// instructions they are grouped into a copy (each rank's written in a stream of its own: several
/// times faster than following the permutation's cycles, 1 s of the 1024-rank mesh allgather's
/// 20); above it (4 GB for the nccl ring at 4096 ranks, where a copy was the lowering's peak)
/// they are moved in place.
inline constexpr size_t kGroupByCopyBytes = size_t{1} << 30;
void group_by_rank(Lowered& lowered, size_t copy_limit_bytes = kGroupByCopyBytes);

}  // namespace ccsynth::compiler
