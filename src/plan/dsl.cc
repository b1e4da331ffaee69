#include "ccsynth/plan/dsl.h"

#include "ccsynth/plan/reference.h"

namespace ccsynth::plan {

PlanRequest compiled_as(const lang::DslProgram& program, PlanRequest request) {
  const lang::ProgramOptions& options = program.options();
  request.compile.name = options.name;
  request.compile.instances = options.instances;
  request.compile.protocol = options.protocol;
  request.compile.inplace = options.inplace;
  request.variants = VariantSpace{{options.instances}, {true, false}, {false}};
  return request;
}

PlanResult plan_dsl(const lang::DslProgram& program, PlanRequest request) {
  const Algorithm algorithm = program.to_algorithm();
  request = compiled_as(program, std::move(request));
  const bool with_nccl = request.compare_with_nccl;
  request.compare_with_nccl = false;
  PlanResult out = plan_algorithm(algorithm, request);
  if (!with_nccl || !out.ok()) return out;
  EvaluateOptions evaluate;
  evaluate.topology = &request.topology;
  evaluate.sizes = out.sizes;
  out.nccl =
      evaluate_nccl(program.collective(), request.topology, compile_options(request),
                    nccl_variants(VariantSpace{kNcclInstances, {true, false}, {false}}), evaluate);
  return out;
}

}  // namespace ccsynth::plan
