#include "ccsynth/plan/reference.h"

#include "ccsynth/core/error.h"
#include "ccsynth/synth/baselines.h"

namespace ccsynth::plan {

namespace {

using CK = CollectiveKind;

// A baseline with NCCL's pipelining, or nullopt where it does not apply.
std::optional<Algorithm> pipelined(synth::BaselineKind kind, const Collective& collective,
                                   const Topology& topology, int chunks) {
  synth::BaselineOptions options;
  options.pipeline_chunks = kNcclPipeline;
  try {
    return synth::make_baseline(
        kind, make_collective(collective.kind, topology.num_ranks, chunks, collective.root),
        topology, options);
  } catch (const UserError&) {
    return std::nullopt;
  }
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
      add("direct", pipelined(synth::BaselineKind::kDirect, collective, topology, 1));
      break;
    case CK::kBroadcast:
    case CK::kReduce:
      add("chain", pipelined(synth::BaselineKind::kChain, collective, topology, kNcclPipeline));
      break;
    case CK::kCustom: break;
  }
  return out;
}

std::optional<Evaluated> evaluate_nccl(const Collective& collective, const Topology& topology,
                                       const compiler::CompileOptions& base,
                                       const VariantSpace& space, const EvaluateOptions& options) {
  std::optional<Evaluated> best;
  for (const NcclCandidate& candidate : reference_nccl(collective, topology)) {
    compiler::CompileOptions compile = base;
    compile.name = "nccl_" + candidate.algo;
    Evaluated e;
    try {
      e = evaluate_variants(candidate.algorithm, compile, space, options);
    } catch (const UserError&) {
      continue;  // over the runtime's limits in every variant
    }
    if (!best || (!best->ok() && e.ok())) {
      best = std::move(e);
      continue;
    }
    if (!e.ok() || e.results.size() != best->results.size()) continue;
    // Per size the faster; the program of the one faster at the last size.
    std::vector<SizedResult> results = best->results;
    for (size_t i = 0; i < results.size(); ++i)
      if (e.results[i].time_us < results[i].time_us) results[i] = e.results[i];
    if (!results.empty() && e.results.back().time_us < best->results.back().time_us)
      best = std::move(e);
    best->results = std::move(results);
  }
  return best;
}

}  // namespace ccsynth::plan
