#include "ccsynth/plan/evaluate.h"

#include <optional>
#include <utility>

#include "ccsynth/compiler/instances.h"
#include "ccsynth/compiler/schedule_order.h"
#include "ccsynth/core/error.h"
#include "ccsynth/sim/bounds.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"

namespace ccsynth::plan {

namespace {

// The lower bound at every size (it depends on the collective, on the protocol's alpha and beta
// factors, which the simulation applies too, and on whether sends may be routed, not on the
// program). evaluate_program gives a bare program the bound the `simulate` verb gives it.
std::vector<double> bounds_at(const EvaluateOptions& o, const Collective& collective,
                              Protocol protocol, bool routed) {
  const ProtocolCost& cost = sim::protocol_cost(*o.topology, protocol);
  sim::BoundOptions bound;
  bound.host_switches = routed;  // routed sends may take the host switches
  bound.alpha_factor = cost.alpha_factor;
  bound.beta_factor = cost.beta_factor;
  std::vector<double> out;
  for (int64_t bytes : o.sizes) {
    out.push_back(sim::lower_bound(*o.topology, collective, bytes, bound).lower_bound_us);
  }
  return out;
}

// Simulates a verified program at every size.
void simulate_sizes(Evaluated& out, const EvaluateOptions& o, const std::vector<double>& bounds) {
  if (!out.program_report.ok()) return;
  for (size_t i = 0; i < o.sizes.size(); ++i) {
    const sim::SimResult sim = sim::simulate(out.program, *o.topology, o.sizes[i]);
    out.results.push_back({o.sizes[i], sim.time_us, sim.algbw_gbps, sim.busbw_gbps, bounds[i],
                           out.options.instances, out.options.fuse, out.options.schedule_order});
  }
}

// Compiles an already verified algorithm with `options`, verifies the program and, when it is
// correct, simulates it at every size.
void compile_and_simulate(Evaluated& out, const compiler::CompileOptions& options,
                          const EvaluateOptions& o, const std::vector<double>& bounds) {
  out.options = options;
  out.program = compiler::compile(out.algorithm, options);
  out.compiled = true;
  // With instances > 1 every chunk is split into subchunks: verify against that collective.
  const Collective replicated =
      compiler::replicate_collective(out.algorithm.collective, options.instances);
  out.program_report = verify::verify_program(out.program, {&replicated, o.fifo_slots});
  simulate_sizes(out, o, bounds);
}

std::vector<bool> orders_for(const Algorithm& algorithm, const VariantSpace& space) {
  if (space.schedule_orders.size() < 2 || compiler::has_schedule_order(algorithm)) {
    return space.schedule_orders;
  }
  return {false};
}

// Folds `variant` into `best`: per size the faster result, and the program of the faster
// variant at the last size.
void keep_faster(std::optional<Evaluated>& best, Evaluated&& variant) {
  if (!best || !best->ok()) {
    best = std::move(variant);
    return;
  }
  if (!variant.ok()) return;
  const size_t n = variant.results.size();
  if (n > 0 && variant.results.back().time_us < best->results.back().time_us) {
    std::swap(best->program, variant.program);
    std::swap(best->options, variant.options);
  }
  for (size_t i = 0; i < n; ++i) {
    if (variant.results[i].time_us < best->results[i].time_us)
      best->results[i] = variant.results[i];
  }
}

}  // namespace

VariantSpace single_variant(const compiler::CompileOptions& options) {
  return {{options.instances}, {options.fuse}, {options.schedule_order}};
}

Evaluated evaluate_variants(const Algorithm& algorithm, const compiler::CompileOptions& base,
                            const VariantSpace& space, const EvaluateOptions& o) {
  if (!o.sizes.empty() && o.topology == nullptr) {
    throw UserError("", "topology", "simulating at a size needs a topology");
  }
  if (space.instances.empty() || space.fusion.empty() || space.schedule_orders.empty()) {
    throw UserError("", "variants", "every variant dimension needs at least one value");
  }
  for (const int instances : space.instances) {
    if (instances < 1) throw UserError("", "instances", "must be >= 1");
  }
  Evaluated checked;
  checked.algorithm = algorithm;
  checked.options = base;
  checked.algorithm_report = verify::verify_algorithm(algorithm, o.topology);
  if (!checked.algorithm_report.ok()) return checked;
  const std::vector<double> bounds =
      o.sizes.empty() ? std::vector<double>{}
                      : bounds_at(o, algorithm.collective, base.protocol, algorithm.routed);
  std::optional<Evaluated> best;
  std::optional<UserError> last_failure;
  const std::vector<bool> orders = orders_for(algorithm, space);
  for (const int instances : space.instances) {
    for (const bool fuse : space.fusion) {
      for (const bool ordered : orders) {
        compiler::CompileOptions options = base;
        options.instances = instances;
        options.fuse = fuse;
        options.schedule_order = ordered;
        Evaluated variant = checked;
        try {
          compile_and_simulate(variant, options, o, bounds);
        } catch (const UserError& e) {
          last_failure = e;  // over the runtime limits (e.g. steps per threadblock) this way
          continue;
        }
        keep_faster(best, std::move(variant));
      }
    }
  }
  if (!best && last_failure) throw *last_failure;
  CCSYNTH_CHECK(best.has_value()) << "evaluate_variants needs at least one variant";
  return std::move(*best);
}

Evaluated evaluate_program(const Program& program, const Collective& collective,
                           const EvaluateOptions& o) {
  if (!o.sizes.empty() && o.topology == nullptr) {
    throw UserError("", "topology", "simulating at a size needs a topology");
  }
  Evaluated out;
  out.algorithm.name = program.name;
  out.algorithm.collective = collective;
  out.program = program;
  out.options.name = program.name;
  out.compiled = true;
  out.program_report = verify::verify_program(program, {&collective, o.fifo_slots});
  simulate_sizes(
      out, o,
      o.sizes.empty() ? std::vector<double>{} : bounds_at(o, collective, program.protocol, false));
  return out;
}

Evaluated evaluate(const Algorithm& algorithm, const compiler::CompileOptions& options,
                   const EvaluateOptions& evaluate_options) {
  return evaluate_variants(algorithm, options, single_variant(options), evaluate_options);
}

}  // namespace ccsynth::plan
