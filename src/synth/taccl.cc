// The TACCL pipeline (TACCL sec. 5): sketch -> logical topology -> routing -> ordering ->
// contiguity and exact scheduling -> Algorithm.

#include "ccsynth/synth/taccl.h"

#include <chrono>
#include <map>

#include "ccsynth/core/error.h"

namespace ccsynth::synth {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Allreduce = reducescatter in-trees then allgather trees (TACCL sec. 5.3), scheduled as one
// problem: chunk j's allgather starts at its owner once every reduction into the owner arrived.
std::vector<Transfer> allreduce_transfers(const std::vector<Transfer>& reduce_trees,
                                          const std::vector<Transfer>& allgather,
                                          const LogicalTopology& logical, const Collective& base) {
  std::vector<Transfer> out = invert_transfers(reduce_trees, logical);
  const int offset = static_cast<int>(out.size());
  std::map<std::pair<int, int>, std::vector<int>> reduced_into;  // (chunk, rank) -> transfers
  for (int i = 0; i < offset; ++i) reduced_into[{out[i].chunk, out[i].dst}].push_back(i);
  for (const Transfer& t : allgather) {
    Transfer copy = t;
    for (int& p : copy.preds) p += offset;
    if (copy.preds.empty()) {
      const int owner = base.pre_ranks(t.chunk)[0];
      copy.preds = reduced_into[{t.chunk, owner}];
    }
    out.push_back(std::move(copy));
  }
  return out;
}

SynthStatus overall_status(const std::vector<StageReport>& stages) {
  SynthStatus status = SynthStatus::kOptimal;
  for (const StageReport& s : stages) {
    if (s.status == "heuristic") continue;  // stage 2 has no optimality notion
    if (s.status.rfind("timed-out", 0) == 0) return SynthStatus::kTimedOut;
    if (s.status.rfind("optimal", 0) != 0) status = SynthStatus::kFeasible;
  }
  return status;
}

// TACCL's stages grow faster than linearly in the chunk count and only the MILP stages honour
// the time limit (building the routing model and the ordering heuristic do not), so chunkup is
// capped (docs/taccl.md "Status, limits, gap"); `from_sketch` says whether the sketch set it.
void check_chunkup(int chunkup, bool from_sketch, const Sketch& sketch) {
  if (chunkup <= kMaxTacclChunkup) return;
  const std::string reason = "chunkup " + std::to_string(chunkup) +
                             " is more than TACCL's cap of " + std::to_string(kMaxTacclChunkup) +
                             " chunks per rank";
  if (from_sketch) throw UserError(sketch.file, "hyperparameters.input_chunkup", reason);
  throw UserError("", "chunks", reason);
}

}  // namespace

TacclResult synthesize_taccl(const Topology& topology, const Sketch& sketch, CollectiveKind kind,
                             const TacclOptions& options) {
  if (kind != CollectiveKind::kAllGather && kind != CollectiveKind::kAllToAll &&
      kind != CollectiveKind::kReduceScatter && kind != CollectiveKind::kAllReduce) {
    throw UserError("", "collective",
                    "TACCL synthesizes allgather, alltoall, reducescatter and allreduce, not " +
                        to_string(kind));
  }
  TacclResult result;
  result.chunkup = options.chunkup > 0 ? options.chunkup : sketch.input_chunkup;
  check_chunkup(result.chunkup, options.chunkup <= 0, sketch);
  const int64_t bytes =
      options.bytes > 0 ? options.bytes : sketch.input_size.value_or(int64_t{1} << 20);
  const LogicalTopology logical = make_logical_topology(sketch, topology);
  const int ranks = topology.num_ranks;
  const Collective target = make_collective(kind, ranks, result.chunkup);
  result.chunk_bytes = static_cast<double>(bytes) / target.input_chunks;
  // Routing is solved on the non-combining base collective.
  const CollectiveKind base_kind =
      kind == CollectiveKind::kAllToAll ? CollectiveKind::kAllToAll : CollectiveKind::kAllGather;
  const Collective base = make_collective(base_kind, ranks, result.chunkup);

  // Stage 1. A reducescatter is the inverse of an allgather routed on the reversed links
  // (TACCL sec. 5.3), so that the inverted trees use links the sketch keeps.
  std::vector<Transfer> transfers;
  Routing forward, backward;
  if (kind != CollectiveKind::kReduceScatter) {
    StageReport report;
    forward = route(logical, sketch, base, result.chunk_bytes, options, &report);
    result.stages.push_back(report);
  }
  if (kind == CollectiveKind::kReduceScatter || kind == CollectiveKind::kAllReduce) {
    StageReport report;
    backward = route(reversed(logical), sketch, base, result.chunk_bytes, options, &report);
    report.name = "routing-reduce";
    result.stages.push_back(report);
  }
  auto t0 = std::chrono::steady_clock::now();
  switch (kind) {
    case CollectiveKind::kReduceScatter:
      transfers = invert_transfers(backward.transfers, logical);
      break;
    case CollectiveKind::kAllReduce:
      transfers = allreduce_transfers(backward.transfers, forward.transfers, logical, base);
      break;
    default: transfers = forward.transfers;
  }
  const Ordering ordering = order_transfers(transfers, logical, sketch, result.chunk_bytes, options,
                                            transfer_symmetries(transfers, logical, base));
  StageReport ordering_report;
  ordering_report.name = "ordering";
  ordering_report.status = "heuristic";
  ordering_report.seconds = seconds_since(t0);
  ordering_report.objective_us = ordering.greedy.makespan_us;
  result.stages.push_back(ordering_report);

  Schedule schedule = ordering.greedy;
  if (options.exact_schedule) {
    StageReport scheduling_report;
    schedule = schedule_transfers(transfers, ordering, logical, result.chunk_bytes, options,
                                  &scheduling_report);
    result.stages.push_back(scheduling_report);
  }
  result.makespan_us = schedule.makespan_us;
  const std::string name =
      "taccl-" + to_string(kind) + "-" + (sketch.name.empty() ? "sketch" : sketch.name);
  result.algorithm = to_algorithm(transfers, schedule, target, name, topology.name);
  result.status = overall_status(result.stages);
  return result;
}

}  // namespace ccsynth::synth
