#include "ccsynth/plan/evaluate.h"

#include <algorithm>
#include <limits>
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

// The lower bound at every size (it depends on the collective, not on the program).
std::vector<double> bounds_at(const EvaluateOptions& o, const Collective& collective) {
  std::vector<double> out;
  for (int64_t bytes : o.sizes) {
    out.push_back(sim::lower_bound(*o.topology, collective, bytes).lower_bound_us);
  }
  return out;
}

// Simulates a program at every size.
std::vector<SizedResult> simulate_sizes(const Program& program,
                                        const compiler::CompileOptions& options,
                                        const EvaluateOptions& o,
                                        const std::vector<double>& bounds) {
  std::vector<SizedResult> out;
  for (size_t i = 0; i < o.sizes.size(); ++i) {
    const sim::SimResult sim = sim::simulate(program, *o.topology, o.sizes[i]);
    out.push_back({o.sizes[i], sim.time_us, sim.algbw_gbps, sim.busbw_gbps, bounds[i],
                   options.instances, options.fuse, options.schedule_order});
  }
  return out;
}

verify::VerifyReport verify_compiled(const Program& program, const Algorithm& algorithm,
                                     const compiler::CompileOptions& options,
                                     const EvaluateOptions& o) {
  // With instances > 1 every chunk is split into subchunks: verify against that collective.
  const Collective replicated =
      compiler::replicate_collective(algorithm.collective, options.instances);
  return verify::verify_program(program, {&replicated, o.fifo_slots});
}

std::vector<bool> orders_for(const Algorithm& algorithm, const VariantSpace& space) {
  if (space.schedule_orders.size() < 2 || compiler::has_schedule_order(algorithm)) {
    return space.schedule_orders;
  }
  return {false};
}

// One compiled variant: its simulated times and, once checked, its verdict. Only the program
// of the variant fastest at the last size is held (they are large at thousands of ranks);
// another one is compiled again when it has to be verified.
struct Variant {
  compiler::CompileOptions options;
  std::vector<SizedResult> results;
  std::optional<verify::VerifyReport> report;  // set once verified
  bool ok() const { return report && report->ok(); }
  bool rejected() const { return report && !report->ok(); }
};

// Compiles, simulates and checks the variants of one algorithm. Simulating is cheaper than
// verifying, so every variant is simulated but only the ones whose results are kept (the
// fastest per size) are verified; a wrong one drops out and the next fastest takes its place.
class VariantRace {
 public:
  VariantRace(const Evaluated& checked, const EvaluateOptions& o, std::vector<double> bounds)
      : checked_(checked), o_(o), bounds_(std::move(bounds)) {}

  // Compiles and simulates one variant; false when it is over the runtime's limits.
  bool add(const compiler::CompileOptions& options) {
    Program program;
    try {
      program = compile(options);
    } catch (const UserError& e) {
      last_failure_ = e;  // over the runtime limits (e.g. steps per threadblock) this way
      return false;
    }
    Variant v;
    v.options = options;
    if (o_.sizes.empty()) {
      // Nothing to race on: the first correct variant is the one kept.
      v.report = verify_compiled(program, checked_.algorithm, options, o_);
    } else {
      simulate_or_reject(v, program);
    }
    variants_.push_back(std::move(v));
    const size_t at = variants_.size() - 1;
    if (!held_ || variants_[*held_].rejected() || time_at_last_size(at) < time_at_last_size(*held_))
      hold(at, std::move(program));
    return true;
  }

  // Whether a correct variant is already known and nothing simulated could replace it.
  bool settled() const {
    return o_.sizes.empty() &&
           std::any_of(variants_.begin(), variants_.end(), [](const Variant& v) { return v.ok(); });
  }

  bool empty() const { return variants_.empty(); }
  const std::optional<UserError>& last_failure() const { return last_failure_; }

  // Verifies the fastest variant at every size until each is correct (or none is left), and
  // returns the evaluation: per size the fastest correct variant, the program of the one
  // fastest at the last size. With no correct variant, the last one with its violations.
  Evaluated finish() {
    for (;;) {
      bool all_ok = true;
      for (size_t size = 0; size < std::max<size_t>(o_.sizes.size(), 1); ++size) {
        const int w = winner(size);
        if (w < 0 || variants_[w].ok()) continue;
        verify(w);
        all_ok = all_ok && variants_[w].ok();
      }
      if (all_ok) break;
    }
    const int last = winner(std::max<size_t>(o_.sizes.size(), 1) - 1);
    Evaluated out = checked_;
    const int kept = last >= 0 ? last : static_cast<int>(variants_.size()) - 1;
    out.options = variants_[kept].options;
    out.program = std::move(program_of(kept));
    out.program_report = *variants_[kept].report;
    out.compiled = true;
    if (last < 0) return out;  // no correct variant: no results
    for (size_t size = 0; size < o_.sizes.size(); ++size)
      out.results.push_back(variants_[winner(size)].results[size]);
    return out;
  }

 private:
  // Simulates `v` at every size. A program the simulator rejects (e.g. one that deadlocks) must
  // be wrong: it is verified at once, and when the verifier finds nothing wrong, the
  // simulator's complaint stands.
  void simulate_or_reject(Variant& v, const Program& program) const {
    try {
      v.results = simulate_sizes(program, v.options, o_, bounds_);
    } catch (const UserError&) {
      v.report = verify_compiled(program, checked_.algorithm, v.options, o_);
      if (v.ok()) throw;
    }
  }

  // Simulated time at the last size; infinite without one (no sizes, or a rejected program).
  double time_at_last_size(size_t at) const {
    const std::vector<SizedResult>& r = variants_[at].results;
    return r.empty() ? std::numeric_limits<double>::infinity() : r.back().time_us;
  }

  // The first fastest variant at `size` that is not known to be wrong, or -1. Without sizes,
  // the first one not known to be wrong.
  int winner(size_t size) const {
    int best = -1;
    for (size_t i = 0; i < variants_.size(); ++i) {
      if (variants_[i].rejected()) continue;
      if (o_.sizes.empty()) return static_cast<int>(i);
      if (best < 0 || variants_[i].results[size].time_us < variants_[best].results[size].time_us)
        best = static_cast<int>(i);
    }
    return best;
  }

  void hold(size_t at, Program program) {
    held_ = at;
    held_program_ = std::move(program);
  }

  Program compile(const compiler::CompileOptions& options) const {
    return o_.compile ? o_.compile(checked_.algorithm, options)
                      : compiler::compile(checked_.algorithm, options);
  }

  // The program of variant `at`: the held one, or compiled again (compilation is deterministic).
  Program& program_of(size_t at) {
    if (held_ != at) hold(at, compile(variants_[at].options));
    return held_program_;
  }

  void verify(size_t at) {
    Variant& v = variants_[at];
    v.report = verify_compiled(program_of(at), checked_.algorithm, v.options, o_);
  }

  const Evaluated& checked_;
  const EvaluateOptions& o_;
  const std::vector<double> bounds_;
  std::vector<Variant> variants_;
  std::optional<size_t> held_;
  Program held_program_;
  std::optional<UserError> last_failure_;
};

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
  VariantRace race(checked, o,
                   o.sizes.empty() ? std::vector<double>{} : bounds_at(o, algorithm.collective));
  const std::vector<bool> orders = orders_for(algorithm, space);
  for (const int instances : space.instances) {
    for (const bool fuse : space.fusion) {
      for (const bool ordered : orders) {
        if (race.settled()) break;
        compiler::CompileOptions options = base;
        options.instances = instances;
        options.fuse = fuse;
        options.schedule_order = ordered;
        race.add(options);
      }
    }
  }
  if (race.empty() && race.last_failure()) throw *race.last_failure();
  CCSYNTH_CHECK(!race.empty()) << "evaluate_variants needs at least one variant";
  return race.finish();
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
  if (out.program_report.ok()) {
    out.results =
        simulate_sizes(out.program, out.options, o,
                       o.sizes.empty() ? std::vector<double>{} : bounds_at(o, collective));
  }
  return out;
}

Evaluated evaluate(const Algorithm& algorithm, const compiler::CompileOptions& options,
                   const EvaluateOptions& evaluate_options) {
  return evaluate_variants(algorithm, options, single_variant(options), evaluate_options);
}

}  // namespace ccsynth::plan
