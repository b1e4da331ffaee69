#include "ccsynth/plan/reference.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ccsynth/core/error.h"
#include "ccsynth/sim/bounds.h"
#include "ccsynth/sim/simulate.h"
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

// `base` as a candidate `algo` of the reference is compiled: named nccl_<algo>, in the first
// of `protocols` (the others are simulated on the same program).
compiler::CompileOptions candidate_options(const compiler::CompileOptions& base,
                                           const std::string& algo,
                                           const std::vector<Protocol>& protocols) {
  compiler::CompileOptions out = base;
  out.name = "nccl_" + algo;
  out.protocol = protocols.front();
  return out;
}

// Whether `algorithm` compiled as `options` is over the step limit in every variant of
// `space`, known from the algorithm (step_limit_shortfall with the fewest instances).
bool over_step_limit_everywhere(const Algorithm& algorithm, const compiler::CompileOptions& options,
                                const VariantSpace& space) {
  compiler::CompileOptions fewest_instances = options;
  if (!space.instances.empty())
    fewest_instances.instances = *std::min_element(space.instances.begin(), space.instances.end());
  return !compiler::step_limit_shortfall(algorithm, fewest_instances).empty();
}

// `base` without the runtime's limits on steps per threadblock and threadblocks per rank.
compiler::CompileOptions without_runtime_limits(const compiler::CompileOptions& base) {
  compiler::CompileOptions out = base;
  out.max_steps_per_threadblock = kNcclUnlimited;
  out.max_threadblocks_per_rank = kNcclUnlimited;
  return out;
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
    const compiler::CompileOptions compile = candidate_options(base, candidate.algo, protocols);
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
    if (over_step_limit_everywhere(candidate.algorithm, compile, space)) {
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
  return evaluate_nccl(collective, topology, without_runtime_limits(base), space, options,
                       protocols);
}

namespace {

// The sizes divided by `parts`, or empty when one of them is not a multiple of it.
std::vector<int64_t> divided_sizes(const std::vector<int64_t>& sizes, int parts) {
  std::vector<int64_t> out;
  for (const int64_t bytes : sizes) {
    if (bytes % parts != 0) return {};
    out.push_back(bytes / parts);
  }
  return out;
}

// `r`, the time of one of `parts` rings that time alike at bytes / parts, as the result of all
// of them at `bytes`: the same time, bandwidths of the whole size (sim::simulate's formulas) and
// the lower bound of the whole collective where it is higher (the program's per-link load is
// the same: each link carries one ring).
SizedResult as_whole(const SizedResult& r, int64_t bytes, const Collective& collective,
                     const Topology& topology, bool routed) {
  SizedResult out = r;
  out.bytes = bytes;
  if (r.time_us > 0 && std::isfinite(r.time_us)) {  // not pruned
    out.algbw_gbps =
        sim::nccl_size_bytes(collective.kind, collective.num_ranks, bytes) / (r.time_us * 1e3);
    out.busbw_gbps = out.algbw_gbps * sim::bus_factor(collective.kind, collective.num_ranks);
  }
  const sim::BoundOptions bound = sim::bound_options_for(topology, r.protocol, routed);
  out.lower_bound_us = std::max(
      r.lower_bound_us, sim::lower_bound(topology, collective, bytes, bound).lower_bound_us);
  return out;
}

// NCCL's ring timed through its first ring alone, where that is exact and needed: the ring is
// the only candidate, over `base`'s runtime limits (so compiled without them, kNcclUnlimited),
// its rings time alike (synth::rings_time_alike) and every size splits evenly over them. The
// program is not kept. nullopt where it does not apply.
std::optional<Evaluated> evaluate_first_ring(const Collective& collective, const Topology& topology,
                                             const compiler::CompileOptions& base,
                                             const VariantSpace& space,
                                             const EvaluateOptions& options,
                                             const std::vector<Protocol>& protocols) {
  const bool ring_only = collective.kind == CK::kAllGather ||
                         collective.kind == CK::kReduceScatter ||
                         (collective.kind == CK::kAllReduce && topology.nodes.size() <= 1);
  if (!ring_only || options.topology == nullptr || protocols.empty()) return std::nullopt;
  synth::NcclRings rings;
  try {
    rings = synth::nccl_rings(topology);
  } catch (const UserError&) {
    return std::nullopt;
  }
  const int parts = static_cast<int>(rings.rings.size());
  if (!synth::rings_time_alike(topology, rings)) return std::nullopt;
  // Every variant must give each ring a channel of its own, as the whole ring's program needs
  // (a variant with fewer channels per instance than rings fails there, out of the race).
  const int most_instances =
      space.instances.empty() ? base.instances
                              : *std::max_element(space.instances.begin(), space.instances.end());
  if (parts * most_instances > base.max_channels) return std::nullopt;
  const std::vector<int64_t> sizes = divided_sizes(options.sizes, parts);
  if (sizes.empty()) return std::nullopt;
  const Algorithm first = synth::nccl_first_ring(topology, collective.kind, collective.root, rings);
  const compiler::CompileOptions compile = candidate_options(base, "ring", protocols);
  if (!over_step_limit_everywhere(first, compile, space)) return std::nullopt;
  EvaluateOptions some = options;
  some.protocols = protocols;
  some.sizes = sizes;
  Evaluated e = evaluate_variants(first, without_runtime_limits(compile), space, some);
  e.program = Program{};
  for (size_t i = 0; i < e.results.size(); ++i)
    e.results[i] = as_whole(e.results[i], options.sizes[i], collective, topology, first.routed);
  return e;
}

}  // namespace

std::optional<Evaluated> evaluate_nccl_times(const Collective& collective, const Topology& topology,
                                             const compiler::CompileOptions& base,
                                             const VariantSpace& space,
                                             const EvaluateOptions& options,
                                             const std::vector<Protocol>& protocols) {
  if (std::optional<Evaluated> e =
          evaluate_first_ring(collective, topology, base, space, options, protocols)) {
    return e;
  }
  std::optional<Evaluated> e = evaluate_nccl(collective, topology, base, space, options, protocols);
  if (e) e->program = Program{};
  return e;
}

}  // namespace ccsynth::plan
