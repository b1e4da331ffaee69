#include "ccsynth/plan/reference.h"

#include <algorithm>

#include "ccsynth/core/error.h"
#include "ccsynth/synth/baselines.h"

namespace ccsynth::plan {

namespace {

using CK = CollectiveKind;

// A baseline with NCCL's pipelining, or nullopt where it does not apply. `end_to_end`: every
// send straight to its peer, routed by the network (NCCL's p2p).
std::optional<Algorithm> pipelined(synth::BaselineKind kind, const Collective& collective,
                                   const Topology& topology, int chunks, bool end_to_end = false) {
  synth::BaselineOptions options;
  options.pipeline_chunks = kNcclPipeline;
  options.end_to_end = end_to_end;
  try {
    return synth::make_baseline(
        kind, make_collective(collective.kind, topology.num_ranks, chunks, collective.root),
        topology, options);
  } catch (const UserError&) {
    return std::nullopt;
  }
}

// Whether `algorithm` can beat `o.time_to_beat` at one of `o.sizes` in one of `o.protocols`.
bool any_protocol_can_win(const Algorithm& algorithm, const Topology& topology,
                          const EvaluateOptions& o) {
  return std::any_of(o.protocols.begin(), o.protocols.end(), [&](Protocol protocol) {
    return !sizes_protocol_can_win(algorithm.collective, algorithm.routed, topology, protocol,
                                   o.sizes, o.time_to_beat)
                .empty();
  });
}

}  // namespace

std::vector<NcclCandidate> reference_nccl(const Collective& collective, const Topology& topology) {
  std::vector<NcclCandidate> out;
  auto add = [&out](const std::string& algo, std::optional<Algorithm> a) {
    if (a) out.push_back({algo, std::move(*a)});
  };
  switch (collective.kind) {
    case CK::kAllGather:
    case CK::kReduceScatter:
    case CK::kAllReduce:
      try {
        add("ring", synth::nccl_ring(topology, collective.kind, collective.root));
      } catch (const UserError&) {
        // no ring through every rank
      }
      if (collective.kind == CK::kAllReduce && topology.nodes.size() > 1)
        add("dbt", pipelined(synth::BaselineKind::kDbt, collective, topology, 1));
      break;
    case CK::kAllToAll:
    case CK::kGather:
    case CK::kScatter:
      add("direct", pipelined(synth::BaselineKind::kDirect, collective, topology, 1, true));
      break;
    case CK::kBroadcast:
    case CK::kReduce:
      add("chain", pipelined(synth::BaselineKind::kChain, collective, topology, kNcclPipeline));
      break;
    case CK::kCustom: break;
  }
  return out;
}

void keep_faster(std::optional<Evaluated>& best, Evaluated&& e) {
  if (!best || (!best->ok() && e.ok())) {
    best = std::move(e);
    return;
  }
  if (!e.ok() || e.results.empty()) return;
  std::vector<SizedResult> results = best->results;
  for (const SizedResult& r : e.results) {
    for (SizedResult& kept : results) {
      if (kept.bytes == r.bytes && r.time_us < kept.time_us) kept = r;
    }
  }
  const bool faster_at_last = !best->results.empty() &&
                              e.results.back().bytes == best->results.back().bytes &&
                              e.results.back().time_us < best->results.back().time_us;
  if (faster_at_last) best = std::move(e);
  best->results = std::move(results);
}

bool beyond_runtime_limits(const Evaluated& nccl) {
  return nccl.options.max_steps_per_threadblock >= kNcclUnlimited;
}

std::optional<Evaluated> evaluate_nccl(const Collective& collective, const Topology& topology,
                                       const compiler::CompileOptions& base,
                                       const VariantSpace& space, const EvaluateOptions& options,
                                       const std::vector<Protocol>& protocols) {
  std::optional<Evaluated> best;
  if (protocols.empty()) return best;
  bool over_limits = false;
  for (const NcclCandidate& candidate : reference_nccl(collective, topology)) {
    compiler::CompileOptions compile = base;
    compile.name = "nccl_" + candidate.algo;
    compile.protocol = protocols.front();
    EvaluateOptions some = options;
    some.protocols = protocols;
    // Per size the time so far (an earlier candidate wins a tie), once there is one per size.
    if (options.topology != nullptr && best && best->ok() &&
        best->results.size() == options.sizes.size()) {
      some.time_to_beat.clear();
      for (const SizedResult& r : best->results) some.time_to_beat.push_back(r.time_us);
      if (!any_protocol_can_win(candidate.algorithm, *options.topology, some)) continue;
    }
    // Known from the algorithm: over the step limit in every variant (NCCL's rings at
    // thousands of ranks); skipped before its verification and lowering (minutes there).
    compiler::CompileOptions fewest_instances = compile;
    if (!space.instances.empty())
      fewest_instances.instances =
          *std::min_element(space.instances.begin(), space.instances.end());
    if (!compiler::step_limit_shortfall(candidate.algorithm, fewest_instances).empty()) {
      over_limits = true;
      continue;
    }
    try {
      keep_faster(best, evaluate_variants(candidate.algorithm, compile, space, some));
    } catch (const UserError&) {
      over_limits = true;  // over the runtime's limits in every variant
    }
  }
  if (best || !over_limits || base.max_steps_per_threadblock >= kNcclUnlimited) return best;
  compiler::CompileOptions unlimited = base;
  unlimited.max_steps_per_threadblock = kNcclUnlimited;
  unlimited.max_threadblocks_per_rank = kNcclUnlimited;
  return evaluate_nccl(collective, topology, unlimited, space, options, protocols);
}

}  // namespace ccsynth::plan
