#include "ccsynth/plan/evaluate.h"

#include <algorithm>
#include <numeric>
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
  const sim::BoundOptions bound = sim::bound_options_for(*o.topology, protocol, routed);
  std::vector<double> out;
  for (int64_t bytes : o.sizes) {
    out.push_back(sim::lower_bound(*o.topology, collective, bytes, bound).lower_bound_us);
  }
  return out;
}

// Simulates a program at every size.
std::vector<SizedResult> simulate_sizes(const Program& program,
                                        const compiler::CompileOptions& options,
                                        const EvaluateOptions& o,
                                        const std::vector<double>& bounds) {
  // Only the times are kept: no critical path (a record per step instance, as large as the
  // program at thousands of ranks).
  sim::SimOptions timing;
  timing.critical_path = false;
  std::vector<SizedResult> out;
  for (size_t i = 0; i < o.sizes.size(); ++i) {
    const sim::SimResult sim = sim::simulate(program, *o.topology, o.sizes[i], timing);
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
  size_t position = 0;  // in the order instances x fusion x order: the first wins a tie
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

  // Compiles and simulates one variant, from `lowering` when given; false when it is over the
  // runtime's limits.
  bool add(const compiler::CompileOptions& options, size_t position,
           const compiler::Lowering* lowering) {
    Program program;
    try {
      program = lowering != nullptr ? compiler::compile(*lowering, options) : compile(options);
    } catch (const UserError& e) {
      last_failure_ = e;  // over the runtime limits (e.g. steps per threadblock) this way
      return false;
    }
    Variant v;
    v.options = options;
    v.position = position;
    if (o_.sizes.empty()) {
      // Nothing to race on: the first correct variant is the one kept.
      v.report = verify_compiled(program, checked_.algorithm, options, o_);
    } else {
      simulate_or_reject(v, program);
    }
    variants_.push_back(std::move(v));
    const size_t at = variants_.size() - 1;
    if (!held_ || variants_[*held_].rejected() || before_at_last_size(at, *held_))
      hold(at, std::move(program));
    return true;
  }

  // Whether a correct variant is already known and nothing simulated could replace it.
  bool settled() const {
    return o_.sizes.empty() &&
           std::any_of(variants_.begin(), variants_.end(), [](const Variant& v) { return v.ok(); });
  }

  // The lowering shared by the variants that differ from `options` only in fusion, or nullopt
  // when it fails (recorded as a failure) or a test's compiler replaces the compiler.
  std::optional<compiler::Lowering> lower(const compiler::CompileOptions& options) {
    if (o_.compile) return std::nullopt;
    try {
      return compiler::Lowering(checked_.algorithm, options);
    } catch (const UserError& e) {
      last_failure_ = e;
      return std::nullopt;
    }
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

  static bool faster(const Variant& a, const Variant& b, size_t size) {
    const double ta = a.results[size].time_us, tb = b.results[size].time_us;
    return ta != tb ? ta < tb : a.position < b.position;
  }

  // Whether variant `a` goes before `b` at the last size: faster, or as fast and first in the
  // order (the first in the order without sizes).
  bool before_at_last_size(size_t a, size_t b) const {
    const Variant& va = variants_[a];
    const Variant& vb = variants_[b];
    if (va.results.empty() || vb.results.empty()) return va.position < vb.position;
    return faster(va, vb, va.results.size() - 1);
  }

  // The first fastest variant at `size` that is not known to be wrong, or -1. Without sizes,
  // the first one not known to be wrong.
  int winner(size_t size) const {
    int best = -1;
    for (size_t i = 0; i < variants_.size(); ++i) {
      if (variants_[i].rejected()) continue;
      if (o_.sizes.empty()) return static_cast<int>(i);
      if (best < 0 || faster(variants_[i], variants_[best], size)) best = static_cast<int>(i);
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

std::vector<compiler::CompileOptions> variant_options(const Algorithm& algorithm,
                                                      const compiler::CompileOptions& base,
                                                      const VariantSpace& space) {
  std::vector<compiler::CompileOptions> out;
  for (const int instances : space.instances) {
    for (const bool fuse : space.fusion) {
      for (const bool ordered : orders_for(algorithm, space)) {
        compiler::CompileOptions options = base;
        options.instances = instances;
        options.fuse = fuse;
        options.schedule_order = ordered;
        out.push_back(options);
      }
    }
  }
  return out;
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
                   o.sizes.empty()
                       ? std::vector<double>{}
                       : bounds_at(o, algorithm.collective, base.protocol, algorithm.routed));
  // Variants that differ only in fusion share one lowering, so they are compiled one after the
  // other (with sizes; without, the first correct one in the order is kept).
  std::vector<compiler::CompileOptions> variants = variant_options(algorithm, base, space);
  std::vector<size_t> by_lowering(variants.size());
  std::iota(by_lowering.begin(), by_lowering.end(), 0);
  if (!o.sizes.empty()) {
    std::stable_sort(by_lowering.begin(), by_lowering.end(), [&](size_t a, size_t b) {
      return std::pair(variants[a].instances, variants[a].schedule_order) <
             std::pair(variants[b].instances, variants[b].schedule_order);
    });
  }
  std::optional<compiler::Lowering> lowering;
  for (size_t k = 0; k < by_lowering.size() && !race.settled(); ++k) {
    const compiler::CompileOptions& options = variants[by_lowering[k]];
    if (k == 0 || !lowering || !lowering->matches(options)) {
      lowering.reset();  // one held at a time: they are large at thousands of ranks
      lowering = race.lower(options);
    }
    race.add(options, by_lowering[k], lowering ? &*lowering : nullptr);
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
                       o.sizes.empty() ? std::vector<double>{}
                                       : bounds_at(o, collective, program.protocol, false));
  }
  return out;
}

Evaluated evaluate(const Algorithm& algorithm, const compiler::CompileOptions& options,
                   const EvaluateOptions& evaluate_options) {
  return evaluate_variants(algorithm, options, single_variant(options), evaluate_options);
}

}  // namespace ccsynth::plan
