#include "ccsynth/plan/dsl.h"

#include "ccsynth/plan/reference.h"

namespace ccsynth::plan {

PlanResult plan_dsl(const lang::DslProgram& program, PlanRequest request) {
  const Algorithm algorithm = program.to_algorithm();
  const lang::ProgramOptions& options = program.options();
  request.compile.name = options.name;
  request.compile.instances = options.instances;
  request.compile.protocol = options.protocol;
  request.compile.inplace = options.inplace;
  request.variants = VariantSpace{{options.instances}, {true, false}, {false}};
  const bool with_ring = request.compare_with_ring;
  request.compare_with_ring = false;
  PlanResult out = plan_algorithm(algorithm, request);
  if (!with_ring || !out.ok()) return out;
  const std::optional<Algorithm> ring = reference_ring(program.collective(), request.topology);
  if (!ring) return out;
  compiler::CompileOptions ring_options = compile_options(request);
  ring_options.name = "ring";
  EvaluateOptions evaluate;
  evaluate.topology = &request.topology;
  evaluate.sizes = out.sizes;
  out.ring = evaluate_variants(*ring, ring_options,
                               VariantSpace{kRingInstances, {true, false}, {false}}, evaluate);
  return out;
}

}  // namespace ccsynth::plan
