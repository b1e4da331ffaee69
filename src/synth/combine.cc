#include "ccsynth/synth/combine.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ccsynth/core/error.h"

namespace ccsynth::synth {

namespace {

// The collective whose algorithms are the inverses of `kind`'s (SCCL sec. 3.5).
CollectiveKind inverse_kind(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllGather: return CollectiveKind::kReduceScatter;
    case CollectiveKind::kReduceScatter: return CollectiveKind::kAllGather;
    case CollectiveKind::kBroadcast: return CollectiveKind::kReduce;
    case CollectiveKind::kReduce: return CollectiveKind::kBroadcast;
    case CollectiveKind::kGather: return CollectiveKind::kScatter;
    case CollectiveKind::kScatter: return CollectiveKind::kGather;
    default: break;
  }
  throw UserError("", "collective",
                  "cannot invert a " + to_string(kind) +
                      " algorithm (invertible: allgather, reducescatter, broadcast, reduce, "
                      "gather, scatter)");
}

// Appends to `out` the maximal runs of kept chunks of `op` as separate ops.
void append_kept_runs(const ChunkOp& op, const std::vector<bool>& kept, std::vector<ChunkOp>& out) {
  int i = 0;
  while (i < op.count) {
    if (!kept[i]) {
      ++i;
      continue;
    }
    int j = i;
    while (j < op.count && kept[j]) ++j;
    ChunkOp run = op;
    run.chunk = op.chunk + i;
    run.count = j - i;
    out.push_back(run);
    i = j;
  }
}

// Drops deliveries of a chunk to a rank that already holds it (from the precondition, an earlier
// step or an earlier op of the same step): in the inverse each delivery becomes one reduction
// of the receiver's partial value, so a duplicate would count contributions twice. Only the
// first delivery of each (chunk, rank) in step order is kept, and none where the precondition
// holds it: one sort of all deliveries (a set of held pairs cost a tree node per delivery,
// most of an inversion at hundreds of ranks).
std::vector<ChunkOp> without_redundant_deliveries(const Algorithm& a) {
  Algorithm sorted = a;
  sort_ops(sorted);
  const Collective& c = a.collective;
  // A delivery of (chunk, rank) as chunk * ranks + rank, and when: -1 for the precondition, else
  // its place among the chunks the ops deliver, in step order.
  struct Delivery {
    int64_t pair = 0;
    int64_t order = -1;
    bool operator<(const Delivery& o) const {
      return pair != o.pair ? pair < o.pair : order < o.order;
    }
  };
  const auto pair_of = [&c](int chunk, int rank) {
    return static_cast<int64_t>(chunk) * c.num_ranks + rank;
  };
  std::vector<Delivery> deliveries;
  for (int k = 0; k < c.num_chunks(); ++k) {
    for (int r : c.pre_ranks(k)) deliveries.push_back({pair_of(k, r), -1});
  }
  int64_t delivered = 0;
  for (const ChunkOp& op : sorted.ops) {
    for (int n = 0; n < op.count; ++n)
      deliveries.push_back({pair_of(op.chunk + n, op.dst), delivered++});
  }
  std::sort(deliveries.begin(), deliveries.end());
  std::vector<bool> first(static_cast<size_t>(delivered), false);
  for (size_t i = 0; i < deliveries.size(); ++i) {
    const bool starts_pair = i == 0 || deliveries[i - 1].pair != deliveries[i].pair;
    if (starts_pair && deliveries[i].order >= 0) first[deliveries[i].order] = true;
  }
  std::vector<ChunkOp> out;
  int64_t at = 0;
  for (const ChunkOp& op : sorted.ops) {
    std::vector<bool> kept(op.count, false);
    for (int n = 0; n < op.count; ++n) kept[n] = first[at++];
    append_kept_runs(op, kept, out);
  }
  return out;
}

}  // namespace

Algorithm invert(const Algorithm& algorithm) {
  const Collective& c = algorithm.collective;
  const CollectiveKind kind = inverse_kind(c.kind);
  Algorithm out;
  out.name = algorithm.name + ".inverse";
  out.topology = algorithm.topology;
  out.collective = make_collective(kind, c.num_ranks, c.chunks_per_rank, c.root);
  CCSYNTH_CHECK(out.collective.num_chunks() == c.num_chunks())
      << "inverse collective has " << out.collective.num_chunks() << " chunks, not "
      << c.num_chunks();
  std::vector<ChunkOp> ops;
  if (c.combining) {
    for (const ChunkOp& op : algorithm.ops) {
      if (op.kind == OpKind::kCopy) {
        throw UserError("", "ops",
                        "cannot invert a " + c.name +
                            " algorithm that copies chunks (only reductions have an inverse)");
      }
    }
    ops = algorithm.ops;
  } else {
    ops = without_redundant_deliveries(algorithm);
  }
  const int steps = algorithm.num_steps();
  const bool to_combining = out.collective.combining;
  const bool was_combining = c.combining;
  for (ChunkOp op : ops) {
    std::swap(op.src, op.dst);
    op.step = steps - 1 - op.step;
    op.start_us = -1;
    // Copies of a broadcast/allgather become reductions; reductions become copies; gather and
    // scatter keep copies.
    if (to_combining) op.kind = OpKind::kReduce;
    if (was_combining) op.kind = OpKind::kCopy;
    out.ops.push_back(op);
  }
  out.rounds_per_step.assign(algorithm.rounds_per_step.rbegin(), algorithm.rounds_per_step.rend());
  out.routed = algorithm.routed;
  sort_ops(out);
  return out;
}

Algorithm allreduce_from(const Algorithm& reducescatter, const Algorithm& allgather) {
  const Collective& rs = reducescatter.collective;
  const Collective& ag = allgather.collective;
  if (rs.kind != CollectiveKind::kReduceScatter) {
    throw UserError("", "reducescatter", "expected a reducescatter algorithm, got " + rs.name);
  }
  if (ag.kind != CollectiveKind::kAllGather) {
    throw UserError("", "allgather", "expected an allgather algorithm, got " + ag.name);
  }
  if (rs.num_ranks != ag.num_ranks || rs.chunks_per_rank != ag.chunks_per_rank) {
    throw UserError("", "allgather",
                    "reducescatter over " + std::to_string(rs.num_ranks) + " ranks x " +
                        std::to_string(rs.chunks_per_rank) +
                        " chunks does not match allgather over " + std::to_string(ag.num_ranks) +
                        " ranks x " + std::to_string(ag.chunks_per_rank) + " chunks");
  }
  Algorithm out;
  out.name = reducescatter.name + "+" + allgather.name;
  out.topology = reducescatter.topology.empty() ? allgather.topology : reducescatter.topology;
  out.collective = make_collective(CollectiveKind::kAllReduce, rs.num_ranks, rs.chunks_per_rank);
  out.routed = reducescatter.routed || allgather.routed;
  const int shift = reducescatter.num_steps();
  for (ChunkOp op : reducescatter.ops) {
    op.start_us = -1;
    out.ops.push_back(op);
  }
  for (ChunkOp op : allgather.ops) {
    op.step += shift;
    op.start_us = -1;
    out.ops.push_back(op);
  }
  // Rounds per step only make sense when both halves report them for every step.
  if (static_cast<int>(reducescatter.rounds_per_step.size()) == shift &&
      static_cast<int>(allgather.rounds_per_step.size()) == allgather.num_steps()) {
    out.rounds_per_step = reducescatter.rounds_per_step;
    out.rounds_per_step.insert(out.rounds_per_step.end(), allgather.rounds_per_step.begin(),
                               allgather.rounds_per_step.end());
  }
  sort_ops(out);
  return out;
}

}  // namespace ccsynth::synth
