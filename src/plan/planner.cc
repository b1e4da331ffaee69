#include "ccsynth/plan/planner.h"

#include <chrono>
#include <exception>
#include <string>

#include <fmt/format.h>

#include "ccsynth/core/error.h"
#include "ccsynth/core/timing.h"
#include "ccsynth/plan/reference.h"
#include "parallel.h"

namespace ccsynth::plan {

namespace {

constexpr int64_t kDefaultBytes = int64_t{1} << 20;

std::vector<int64_t> sizes_of(const PlanRequest& request) {
  if (!request.sizes.empty()) return request.sizes;
  return {request.synth.bytes.value_or(kDefaultBytes)};
}

// Tells the request's progress callback how often each stage ran for `what`.
void report_stages(const PlanRequest& request, const std::string& what, const Evaluated& e) {
  if (!request.synth.progress) return;
  const StageCounts& c = e.stages;
  request.synth.progress(fmt::format(
      "plan: {}: {} compilation(s) ({} more over the runtime limits, {} the same program as an "
      "earlier one), {} simulation(s), {} program verification(s); seconds over all threads: "
      "lowering {:.1f}, compiling {:.1f}, simulating {:.1f}, verifying {:.1f}",
      what, c.compilations, c.over_limits, c.twins, c.simulations, c.program_verifications,
      c.lowering_seconds, c.compile_seconds, c.simulate_seconds, c.verify_seconds));
}

// Evaluates the found algorithm compiled with `options` (and the request's variants) and, when
// asked for, the nccl reference on the same sizes; the two run at once when memory allows
// (concurrent_evaluations). Where only one evaluation fits in memory at a time (thousands of
// ranks), the reference goes first and keeps its results but not its program (no caller
// writes or runs it), so the program's evaluation does not peak beside a held one: 20.8 GB on
// mesh2d:64x64 with the reference after the program. Needing only its times, it is evaluated
// by evaluate_nccl_times (one of NCCL's rings where they time alike). The reference is kept
// only beside a correct program.
void evaluate_into(PlanResult& out, const Algorithm& algorithm, const PlanRequest& request,
                   const compiler::CompileOptions& options) {
  EvaluateOptions evaluate;
  evaluate.topology = &request.topology;
  evaluate.sizes = out.sizes;
  evaluate.threads = request.threads;
  evaluate.memory_budget_bytes = request.memory_budget_bytes;
  const size_t jobs = request.compare_with_nccl ? 2 : 1;
  const int threads = concurrent_evaluations(request.threads, jobs, algorithm.ops.size(),
                                             request.memory_budget_bytes);
  const bool reference_first =
      jobs == 2 && one_evaluation_at_a_time(algorithm.ops.size(), request.memory_budget_bytes);
  std::optional<Evaluated> nccl;
  std::exception_ptr nccl_error;  // rethrown only beside a correct program
  auto evaluate_reference = [&] {
    try {
      nccl = reference_first ? evaluate_nccl_times(algorithm.collective, request.topology, options,
                                                   nccl_variants(request.variants), evaluate)
                             : evaluate_nccl(algorithm.collective, request.topology, options,
                                             nccl_variants(request.variants), evaluate);
    } catch (...) {
      nccl_error = std::current_exception();
    }
  };
  if (reference_first) evaluate_reference();
  parallel_for(threads, reference_first ? 1 : jobs, [&](size_t job) {
    if (job == 0) {
      out.program = evaluate_variants(algorithm, options, request.variants, evaluate);
      return;
    }
    if (threads == 1 && !out.program->ok()) return;  // nothing to compare with
    evaluate_reference();
  });
  report_stages(request, "program", *out.program);
  if (!out.program->ok()) return;
  if (nccl_error) std::rethrow_exception(nccl_error);
  out.nccl = std::move(nccl);
  if (out.nccl) report_stages(request, "nccl reference", *out.nccl);
}

}  // namespace

VariantSpace nccl_variants(const VariantSpace& requested) {
  VariantSpace out = requested;
  out.fusion = {true};
  return out;
}

Collective resolve_collective(const PlanRequest& request) {
  if (request.collective) return *request.collective;
  const synth::Synthesizer& method = synth::find_synthesizer(request.method);
  return synth::collective_for(method, request.topology, request.kind, request.chunks,
                               request.root);
}

compiler::CompileOptions compile_options(const PlanRequest& request) {
  compiler::CompileOptions options = request.compile;
  apply_runtime_limits(options, request.dialect, request.limit_overrides);
  return options;
}

namespace {

// The chunk count to try after the program `out` made was over the runtime limits, or 0: only
// where it had the method's default chunk count (or a smaller one tried after it) and the
// method can pipeline in fewer chunks.
int fewer_default_chunks(const synth::Synthesizer& method, const PlanRequest& request,
                         const PlanResult& out) {
  if (request.chunks != 0 || request.collective || !method.fewer_chunks) return 0;
  return method.fewer_chunks(out.synthesis, out.collective.chunks_per_rank);
}

// Synthesizes out.collective with `method` and evaluates the algorithm found (none: `out` gets
// the synthesis' status and no program); out.synthesis_seconds adds this synthesis' time.
void synthesize_and_evaluate(PlanResult& out, const synth::Synthesizer& method,
                             const PlanRequest& request) {
  const auto started = std::chrono::steady_clock::now();
  synth::SynthOptions synth_options = request.synth;
  synth_options.threads = thread_limit(request.threads);  // TACOS's trials
  out.synthesis = synth::synthesize(method, request.topology, out.collective, synth_options);
  out.synthesis_seconds += seconds_since(started);
  out.program.reset();
  out.nccl.reset();
  if (!out.synthesis.algorithm) return;
  compiler::CompileOptions options = compile_options(request);
  if (options.name.empty())
    options.name = method.name + "_" + out.synthesis.algorithm->collective.name;
  evaluate_into(out, *out.synthesis.algorithm, request, options);
}

}  // namespace

PlanResult plan(const PlanRequest& request) {
  const synth::Synthesizer& method = synth::find_synthesizer(request.method);
  PlanResult out;
  out.dialect = request.dialect;
  out.sizes = sizes_of(request);
  out.collective = resolve_collective(request);
  for (bool first = true;; first = false) {
    try {
      synthesize_and_evaluate(out, method, request);
      return out;
    } catch (const UserError& e) {
      const std::string violation = compiler::runtime_limits_violation(e);
      const int fewer = violation.empty() ? 0 : fewer_default_chunks(method, request, out);
      if (fewer == 0) throw;
      if (request.synth.progress) {
        request.synth.progress(fmt::format(
            "plan: the program of {} chunks per rank{} is over the runtime limits ({}); trying {}",
            out.collective.chunks_per_rank, first ? " (the method's default)" : "", violation,
            fewer));
      }
      out.collective =
          synth::collective_for(method, request.topology, request.kind, fewer, request.root);
    }
  }
}

PlanResult plan_algorithm(const Algorithm& algorithm, const PlanRequest& request) {
  PlanResult out;
  out.dialect = request.dialect;
  out.sizes = sizes_of(request);
  out.collective = algorithm.collective;
  out.synthesis.algorithm = algorithm;
  evaluate_into(out, algorithm, request, compile_options(request));
  return out;
}

std::string PlanResult::xml() const {
  CCSYNTH_CHECK(ok()) << "PlanResult::xml needs a verified program";
  return formats::write_msccl_xml(program->program, dialect);
}

void PlanResult::write_xml(std::ostream& out) const {
  CCSYNTH_CHECK(ok()) << "PlanResult::write_xml needs a verified program";
  formats::write_msccl_xml(out, program->program, dialect);
}

double PlanResult::best_time_us() const {
  CCSYNTH_CHECK(ok() && !program->results.empty()) << "no simulated result";
  return program->results.back().time_us;
}

}  // namespace ccsynth::plan
