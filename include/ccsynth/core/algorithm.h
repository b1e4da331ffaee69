#pragma once
// The abstract Algorithm IR (docs/architecture.md sec. 1): chunk copies and reductions between ranks, with
// an order (step) and optionally a start time; no buffers, threadblocks or channels. Produced by
// every synthesizer, baseline and the DSL; consumed by the compiler and the verifier.
//
// Semantics. Each rank holds at most one current value per logical chunk of the collective.
// Initially rank r holds chunk k iff r has a pre slot of k (for combining collectives that value
// is r's own contribution). Ops run step by step, ascending; all ops of one step read the values
// held at the start of the step and take effect at its end (SCCL's synchronous steps). A copy
// sets dst's value of the chunk to src's; a reduce combines src's value into dst's (dst must
// already hold a value). An op with count n moves chunks chunk..chunk+n-1 as one transfer.
// At the end every post slot's rank must hold the chunk's full value.

#include <ostream>
#include <string>
#include <vector>

#include "ccsynth/core/collective.h"

namespace ccsynth {

/// Whether an op overwrites (copy) or reduces into (reduce) the destination's value.
enum class OpKind { kCopy, kReduce };

std::string to_string(OpKind kind);

/// One transfer of `count` consecutive logical chunks from src to dst.
struct ChunkOp {
  int chunk = 0;
  int src = 0;
  int dst = 0;
  OpKind kind = OpKind::kCopy;
  int step = 0;          // ops of a step depend only on ops of earlier steps
  double start_us = -1;  // start time from timed synthesizers (TACCL, TACOS); -1 if none
  int count = 1;         // chunks chunk..chunk+count-1 travel together
  int channel = -1;      // optional channel hint for the compiler; -1 lets it choose
  int send_tb = -1;      // optional threadblock on src that sends (MSCCLang `sendtb`); -1 = any
  int recv_tb = -1;      // optional threadblock on dst that receives (MSCCLang `recvtb`); -1 = any

  bool operator==(const ChunkOp&) const = default;
};

/// An algorithm for one collective on one topology.
struct Algorithm {
  std::string name;
  std::string topology;  // topology name it was made for (informational)
  Collective collective;
  std::vector<ChunkOp> ops;          // sorted by step by convention (sort_ops restores it)
  std::vector<int> rounds_per_step;  // SCCL rounds per step; empty when not meaningful
  /// Ops may join ranks that no link or switch connects: the network routes such a transfer
  /// over a shortest path, holding every hop (ASTRA-sim's Direct and logical Ring, NCCL's p2p
  /// through PCIe / host memory; docs/simulator.md "Routed sends"). Without it every op must
  /// follow a connection, which catches synthesizers that invent links.
  bool routed = false;

  bool operator==(const Algorithm&) const = default;

  /// 1 + the largest step, or 0 without ops.
  int num_steps() const;
};

/// Sorts ops by (step, start time, src, dst, chunk), keeping the relative order of equal ones.
void sort_ops(Algorithm& algorithm);

std::ostream& operator<<(std::ostream& os, const ChunkOp& op);
std::ostream& operator<<(std::ostream& os, const Algorithm& algorithm);

}  // namespace ccsynth
