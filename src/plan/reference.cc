#include "ccsynth/plan/reference.h"

#include "ccsynth/core/error.h"
#include "ccsynth/sim/bounds.h"
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

// Folds `e` into `best`, matching results by size (`e` may cover only some of best's sizes):
// per size the faster; the program of `e` when it is faster at best's last size.
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

std::vector<int64_t> sizes_protocol_can_win(const Collective& collective, bool routed,
                                            const Topology& topology, Protocol protocol,
                                            const std::vector<int64_t>& sizes,
                                            const std::vector<double>& best_us) {
  const sim::BoundOptions bound = sim::bound_options_for(topology, protocol, routed);
  std::vector<int64_t> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double floor = sim::lower_bound(topology, collective, sizes[i], bound).lower_bound_us;
    if (i >= best_us.size() || floor < best_us[i]) out.push_back(sizes[i]);
  }
  return out;
}

std::optional<Evaluated> evaluate_nccl(const Collective& collective, const Topology& topology,
                                       const compiler::CompileOptions& base,
                                       const VariantSpace& space, const EvaluateOptions& options,
                                       const std::vector<Protocol>& protocols) {
  std::optional<Evaluated> best;
  for (const NcclCandidate& candidate : reference_nccl(collective, topology)) {
    for (const Protocol protocol : protocols) {
      compiler::CompileOptions compile = base;
      compile.name = "nccl_" + candidate.algo;
      compile.protocol = protocol;
      EvaluateOptions some = options;
      if (options.topology != nullptr && !options.sizes.empty()) {
        std::vector<double> best_us;  // empty (nothing to beat) until one result per size
        if (best && best->ok() && best->results.size() == options.sizes.size())
          for (const SizedResult& r : best->results) best_us.push_back(r.time_us);
        some.sizes =
            sizes_protocol_can_win(candidate.algorithm.collective, candidate.algorithm.routed,
                                   *options.topology, protocol, options.sizes, best_us);
        if (some.sizes.empty()) continue;
      }
      try {
        keep_faster(best, evaluate_variants(candidate.algorithm, compile, space, some));
      } catch (const UserError&) {
        continue;  // over the runtime's limits in every variant
      }
    }
  }
  return best;
}

}  // namespace ccsynth::plan
