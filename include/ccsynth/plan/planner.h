#pragma once
// The library's front door (docs/architecture.md "The planner"): from a topology, a collective
// and a method name to the best verified program. plan() runs the registered synthesizer
// (synth/registry.h), evaluates the algorithm's compiled variants within the runtime's limits
// (plan/evaluate.h, plan/limits.h), and the `nccl` reference beside it (what NCCL
// would run, plan/reference.h), so every front end — CLI verbs, benches, bindings — gets the same answer.
//
//   plan::PlanRequest request;
//   request.topology = topologies::make_builtin("dgx1");
//   request.method = "tacos";
//   request.sizes = {1 << 20};
//   const plan::PlanResult result = plan::plan(request);
//   if (result.ok()) std::cout << result.best_time_us() << " us\n" << result.xml();

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/collective.h"
#include "ccsynth/core/topology.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/plan/evaluate.h"
#include "ccsynth/plan/limits.h"
#include "ccsynth/synth/registry.h"

namespace ccsynth::plan {

/// What to make and how to judge it.
struct PlanRequest {
  Topology topology;
  std::string method = "tacos";  // a synth::synthesizers() name
  CollectiveKind kind = CollectiveKind::kAllGather;
  int chunks = 0;  // per rank in the method's units (0 = its default)
  int root = 0;    // rooted collectives
  /// A custom (or fully specified) collective; overrides kind / chunks / root.
  std::optional<Collective> collective;
  synth::SynthOptions synth;         // cost-model size, time limit, method parameters
  std::vector<int64_t> sizes;        // bytes per rank simulated; empty = synth.bytes or 1 MiB
  compiler::CompileOptions compile;  // protocol, in-place, name; limits from `dialect`
  formats::XmlDialect dialect = formats::XmlDialect::kExecutor;
  RuntimeLimits limit_overrides;  // positive fields replace the dialect's limits
  VariantSpace variants;          // compilations tried; the fastest per size is kept
  bool compare_with_nccl = true;  // also evaluate the nccl reference (evaluate_nccl) alike
  /// Evaluations run at once (the algorithm's lowerings, the nccl reference; 0 = the hardware
  /// threads, capped by memory: plan::concurrent_evaluations). The result does not depend on it.
  int threads = 0;
  /// Memory the evaluations may hold together (EvaluateOptions::memory_budget_bytes); where only
  /// one fits, the nccl reference is evaluated first and keeps its results, not its program.
  int64_t memory_budget_bytes = kDefaultMemoryBudgetBytes;
};

/// What plan() found.
struct PlanResult {
  Collective collective;         // the collective the method was asked for
  synth::SynthResult synthesis;  // status, algorithm, per-method stats
  double synthesis_seconds = 0;
  std::vector<int64_t> sizes;        // the sizes simulated
  std::optional<Evaluated> program;  // absent when the method found no algorithm
  // The nccl reference, when asked for and applicable; its `program` is empty where only one
  // evaluation fits in memory at a time (plan::one_evaluation_at_a_time: thousands of ranks).
  std::optional<Evaluated> nccl;
  formats::XmlDialect dialect = formats::XmlDialect::kExecutor;

  /// An algorithm was found and it and its program verified.
  bool ok() const { return program && program->ok(); }
  /// The kept program as MSCCL XML in the request's dialect (requires ok()).
  std::string xml() const;
  /// The same, streamed to `out`.
  void write_xml(std::ostream& out) const;
  /// Simulated time of the kept program at the last size (requires ok() and a size).
  double best_time_us() const;
};

/// The compilations of the nccl reference for a request's `requested` ones: fused only, as NCCL
/// runs its ring (recvCopySend / recvReduceSend, never a receive followed by a separate send);
/// the unfused ring would only double the reference's cost (half of `synth`'s time at 1K
/// ranks) for a program NCCL does not run.
VariantSpace nccl_variants(const VariantSpace& requested);

/// Resolves the request's collective (PlanRequest::collective or the method's collective for
/// kind / chunks / root).
Collective resolve_collective(const PlanRequest& request);

/// Compile options for `request`: its compile options with the dialect's limits applied.
compiler::CompileOptions compile_options(const PlanRequest& request);

/// Synthesizes, verifies, compiles, simulates and compares (see the header comment). Bad
/// requests (unknown method or parameter, a method that does not apply) throw UserError; a
/// method that finds nothing returns a result without a program and its status. Where the
/// caller gave no chunk count and the program of the method's default cannot fit the runtime
/// limits, a method with Synthesizer::fewer_chunks is run again with fewer (said through the
/// progress callback), until one fits or none is left; PlanResult::collective is the one used.
PlanResult plan(const PlanRequest& request);

/// The same for an algorithm made elsewhere (a file, the DSL): evaluates `algorithm` and the
/// nccl reference as plan() would, with synthesis left empty.
PlanResult plan_algorithm(const Algorithm& algorithm, const PlanRequest& request);

}  // namespace ccsynth::plan
