#include "ccsynth/plan/evaluate.h"

#include <algorithm>
#include <limits>
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

// Simulated time of a (variant, protocol) pair at a size it was not simulated at: the
// protocol's lower bound showed that it cannot win there.
constexpr double kPruned = std::numeric_limits<double>::infinity();

// The lower bound at every size (it depends on the collective, on the protocol's alpha and beta
// factors, which the simulation applies too, and on whether sends may be routed, not on the
// program). evaluate_program gives a bare program the bound the `simulate` verb gives it.
std::vector<double> bounds_at(const Topology& topology, const std::vector<int64_t>& sizes,
                              const Collective& collective, Protocol protocol, bool routed) {
  const sim::BoundOptions bound = sim::bound_options_for(topology, protocol, routed);
  std::vector<double> out;
  for (int64_t bytes : sizes) {
    out.push_back(sim::lower_bound(topology, collective, bytes, bound).lower_bound_us);
  }
  return out;
}

// Whether a program whose lower bound is `bound_us` can beat `best_us` (kPruned: nothing to
// beat); `wins_tie`: whether it would win at the same time.
bool can_win(double bound_us, double best_us, bool wins_tie) {
  return wins_tie ? bound_us <= best_us : bound_us < best_us;
}

// Simulates a program at every size but the `skip` ones (time kPruned there; empty: none).
std::vector<SizedResult> simulate_sizes(const Program& program,
                                        const compiler::CompileOptions& options,
                                        const EvaluateOptions& o, const std::vector<double>& bounds,
                                        const std::vector<bool>& skip = {}) {
  // Only the times are kept: no critical path (a record per step instance, as large as the
  // program at thousands of ranks).
  sim::SimOptions timing;
  timing.critical_path = false;
  std::vector<SizedResult> out;
  for (size_t i = 0; i < o.sizes.size(); ++i) {
    SizedResult r{o.sizes[i],
                  kPruned,
                  0,
                  0,
                  bounds[i],
                  options.instances,
                  options.fuse,
                  options.schedule_order,
                  program.protocol};
    if (skip.empty() || !skip[i]) {
      const sim::SimResult sim = sim::simulate(program, *o.topology, o.sizes[i], timing);
      r.time_us = sim.time_us;
      r.algbw_gbps = sim.algbw_gbps;
      r.busbw_gbps = sim.busbw_gbps;
    }
    out.push_back(r);
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

// One compiled variant in one protocol: its simulated times and, once checked, its verdict
// (the same in every protocol: the verifier does not read the protocol). Only the program of
// the pair fastest at the last size is held (they are large at thousands of ranks); another one
// is compiled again when it has to be verified.
struct Variant {
  compiler::CompileOptions options;  // the protocol included
  size_t compiled = 0;  // the compilation (in variant_options) it shares with its other protocols
  size_t protocol = 0;  // index in the race's protocols
  size_t position = 0;  // protocol-major, then instances x fusion x order: the first wins a tie
  std::vector<SizedResult> results;            // time_us kPruned where not simulated
  std::optional<verify::VerifyReport> report;  // set once verified
  bool ok() const { return report && report->ok(); }
  bool rejected() const { return report && !report->ok(); }
  bool pruned(size_t size) const { return results[size].time_us == kPruned; }
};

// Compiles, simulates and checks the variants of one algorithm, each compiled once and
// simulated in every protocol. Simulating is cheaper than verifying, so every pair is simulated
// but only the ones whose results are kept (the fastest per size) are verified; a wrong one
// drops out and the next fastest takes its place. A pair is not simulated at a size where its
// protocol's lower bound cannot beat the time to beat or the best time simulated so far there;
// it is when the pair that set that time turns out wrong.
class VariantRace {
 public:
  VariantRace(const Evaluated& checked, const EvaluateOptions& o, std::vector<Protocol> protocols,
              std::vector<std::vector<double>> bounds, size_t variant_count)
      : checked_(checked),
        o_(o),
        protocols_(std::move(protocols)),
        bounds_(std::move(bounds)),
        variant_count_(variant_count),
        best_us_(o.sizes.size(), kPruned),
        dropped_(protocols_.size()) {}

  // Compiles variant `index` (in the first protocol; the others only relabel the program), from
  // `lowering` when given, and simulates it in every protocol; false when it is over the
  // runtime's limits.
  bool add(compiler::CompileOptions options, size_t index, const compiler::Lowering* lowering) {
    options.protocol = protocols_.front();
    Program program;
    try {
      program = lowering != nullptr ? compiler::compile(*lowering, options) : compile(options);
    } catch (const UserError& e) {
      last_failure_ = e;  // over the runtime limits (e.g. steps per threadblock) this way
      return false;
    }
    const size_t first = variants_.size();
    // Without sizes nothing is simulated: the first protocol only.
    const size_t protocols = o_.sizes.empty() ? 1 : protocols_.size();
    for (size_t p = 0; p < protocols; ++p) {
      Variant v;
      v.options = options;
      v.options.protocol = protocols_[p];
      v.compiled = index;
      v.protocol = p;
      v.position = p * variant_count_ + index;
      program.protocol = protocols_[p];
      variants_.push_back(std::move(v));
      const size_t at = variants_.size() - 1;
      if (o_.sizes.empty()) {
        // Nothing to race on: the first correct variant is the one kept.
        variants_[at].report = verify_compiled(program, checked_.algorithm, options, o_);
        continue;
      }
      variants_[at].report = variants_[first].report;  // the verdict so far, for every protocol
      if (variants_[at].rejected() || dropped_[p]) {
        variants_[at].results = unsimulated();
      } else {
        simulate_or_reject(at, program, losing_sizes(p));
      }
      note_best(variants_[at]);
    }
    bool better = false;
    for (size_t at = first; at < variants_.size(); ++at) {
      if (!held_ || variants_[*held_].rejected() || before_at_last_size(at, *held_)) {
        held_ = at;
        better = true;
      }
    }
    if (better) {
      held_program_ = std::move(program);
      held_program_.protocol = variants_[*held_].options.protocol;
    }
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

  // Verifies the fastest pair at every size until each is correct (or none is left), and
  // returns the evaluation: per size the fastest correct pair (none where nothing could beat
  // the time to beat), the program of the one fastest at the last size with a result. With no
  // correct variant, the last one with its violations.
  Evaluated finish() {
    do verify_winners();
    while (simulate_pruned_contenders());
    int last = -1;
    for (size_t size = std::max<size_t>(o_.sizes.size(), 1); size-- > 0 && last < 0;)
      last = winner(size);
    Evaluated out = checked_;
    const int kept = last >= 0 ? last : static_cast<int>(variants_.size()) - 1;
    if (!variants_[kept].report) verify(kept);  // every pair was pruned: nothing verified yet
    out.options = variants_[kept].options;
    out.program = std::move(program_of(kept));
    out.program_report = *variants_[kept].report;
    out.compiled = true;
    if (last < 0) return out;  // no correct variant, or nothing to beat the time to beat
    for (size_t size = 0; size < o_.sizes.size(); ++size) {
      const int w = winner(size);
      if (w >= 0) out.results.push_back(variants_[w].results[size]);
    }
    return out;
  }

 private:
  // Where protocol `p` cannot win: its bound does not beat the time to beat (which wins a
  // tie) or is above the best time simulated so far.
  std::vector<bool> losing_sizes(size_t p) const {
    std::vector<bool> out(o_.sizes.size());
    for (size_t size = 0; size < out.size(); ++size)
      out[size] = !can_win_at(p, size, best_us_[size]);
    return out;
  }

  bool can_win_at(size_t p, size_t size, double best_us) const {
    const double bound = bounds_[p][size];
    const double beat = o_.time_to_beat.empty() ? kPruned : o_.time_to_beat[size];
    return can_win(bound, beat, false) && can_win(bound, best_us, true);
  }

  void note_best(const Variant& v) {
    for (size_t size = 0; size < o_.sizes.size(); ++size) {
      if (!v.rejected() && !dropped_[v.protocol] && !v.pruned(size))
        best_us_[size] = std::min(best_us_[size], v.results[size].time_us);
    }
  }

  // Simulates pair `at` at every size but the `skip` ones (kept as they were; kPruned the
  // first time). A program the simulator rejects (e.g. one that deadlocks) must be wrong: it is
  // verified at once, and when the verifier finds nothing wrong, the simulator's complaint
  // stands: the pair's protocol is dropped (evaluated on its own, it would have failed).
  void simulate_or_reject(size_t at, const Program& program, const std::vector<bool>& skip) {
    Variant& v = variants_[at];
    try {
      std::vector<SizedResult> times =
          simulate_sizes(program, v.options, o_, bounds_[v.protocol], skip);
      if (v.results.empty()) {
        v.results = std::move(times);
        return;
      }
      for (size_t size = 0; size < skip.size(); ++size)
        if (!skip[size]) v.results[size] = times[size];
    } catch (const UserError& e) {
      if (v.results.empty()) v.results = unsimulated();
      if (!v.report) {
        v.report = verify_compiled(program, checked_.algorithm, v.options, o_);
        share_report(at);
      }
      if (v.ok()) drop(v.protocol, e);
    }
  }

  // Results of a pair simulated nowhere.
  std::vector<SizedResult> unsimulated() const {
    std::vector<SizedResult> out(o_.sizes.size());
    for (size_t size = 0; size < out.size(); ++size) {
      out[size].bytes = o_.sizes[size];
      out[size].time_us = kPruned;
    }
    return out;
  }

  // Leaves protocol `p` out of the race (the simulator refused a correct program in it, e.g.
  // over its step-instance cap); rethrows `e` when no protocol is left.
  void drop(size_t p, const UserError& e) {
    dropped_[p] = e;
    if (std::all_of(dropped_.begin(), dropped_.end(), [](const auto& d) { return d.has_value(); }))
      throw e;
  }

  // Whether pair `at` is out of the race: wrong, or in a dropped protocol.
  bool out_of_race(size_t at) const {
    return variants_[at].rejected() || dropped_[variants_[at].protocol];
  }

  // Verifies the fastest pair at every size until each is correct or none is left.
  void verify_winners() {
    for (;;) {
      bool all_ok = true;
      for (size_t size = 0; size < std::max<size_t>(o_.sizes.size(), 1); ++size) {
        const int w = winner(size);
        if (w < 0 || variants_[w].ok()) continue;
        verify(w);
        all_ok = all_ok && variants_[w].ok();
      }
      if (all_ok) return;
    }
  }

  // A pair not simulated at a size against a time that a wrong pair set may win there now:
  // simulates every such one at those sizes (compiling it again); true when one was.
  bool simulate_pruned_contenders() {
    bool any = false;
    for (size_t i = 0; i < variants_.size(); ++i) {
      std::vector<bool> skip(o_.sizes.size(), true);
      for (size_t size = 0; size < o_.sizes.size(); ++size) {
        if (out_of_race(i) || !variants_[i].pruned(size)) continue;
        const int w = winner(size);
        skip[size] = !can_win_at(variants_[i].protocol, size,
                                 w < 0 ? kPruned : variants_[w].results[size].time_us);
      }
      if (std::all_of(skip.begin(), skip.end(), [](bool s) { return s; })) continue;
      simulate_or_reject(i, program_of(i), skip);
      if (variants_[i].rejected()) share_report(i);
      any = true;
    }
    return any;
  }

  static bool faster(const Variant& a, const Variant& b, size_t size) {
    const double ta = a.results[size].time_us, tb = b.results[size].time_us;
    return ta != tb ? ta < tb : a.position < b.position;
  }

  // Whether pair `a` goes before `b` at the last size: faster, or as fast and first in the
  // order (the first in the order without sizes).
  bool before_at_last_size(size_t a, size_t b) const {
    const Variant& va = variants_[a];
    const Variant& vb = variants_[b];
    if (va.results.empty() || vb.results.empty()) return va.position < vb.position;
    return faster(va, vb, va.results.size() - 1);
  }

  // The first fastest pair simulated at `size` that is not known to be wrong, or -1. Without
  // sizes, the first one not known to be wrong.
  int winner(size_t size) const {
    int best = -1;
    for (size_t i = 0; i < variants_.size(); ++i) {
      if (out_of_race(i)) continue;
      if (o_.sizes.empty()) return static_cast<int>(i);
      if (variants_[i].pruned(size)) continue;
      if (best < 0 || faster(variants_[i], variants_[best], size)) best = static_cast<int>(i);
    }
    return best;
  }

  Program compile(const compiler::CompileOptions& options) const {
    return o_.compile ? o_.compile(checked_.algorithm, options)
                      : compiler::compile(checked_.algorithm, options);
  }

  // The program of pair `at`: the held one relabelled when it is the same compilation, or
  // compiled again (compilation is deterministic).
  Program& program_of(size_t at) {
    if (!held_ || variants_[*held_].compiled != variants_[at].compiled)
      held_program_ = compile(variants_[at].options);
    held_ = at;
    held_program_.protocol = variants_[at].options.protocol;
    return held_program_;
  }

  void verify(size_t at) {
    variants_[at].report =
        verify_compiled(program_of(at), checked_.algorithm, variants_[at].options, o_);
    share_report(at);
  }

  // Gives pair `at`'s verdict to the same compilation in the other protocols.
  void share_report(size_t at) {
    for (Variant& v : variants_)
      if (v.compiled == variants_[at].compiled) v.report = variants_[at].report;
  }

  const Evaluated& checked_;
  const EvaluateOptions& o_;
  const std::vector<Protocol> protocols_;
  const std::vector<std::vector<double>> bounds_;  // per protocol, per size
  const size_t variant_count_;
  std::vector<Variant> variants_;
  std::vector<double> best_us_;  // per size the best time simulated so far (kPruned: none)
  std::vector<std::optional<UserError>> dropped_;  // per protocol, why it left the race
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
  if (!o.time_to_beat.empty() && o.time_to_beat.size() != o.sizes.size()) {
    throw UserError("", "time_to_beat", "needs one time per size");
  }
  Evaluated checked;
  checked.algorithm = algorithm;
  checked.options = base;
  checked.algorithm_report = verify::verify_algorithm(algorithm, o.topology);
  if (!checked.algorithm_report.ok()) return checked;
  const std::vector<Protocol> protocols =
      o.protocols.empty() ? std::vector<Protocol>{base.protocol} : o.protocols;
  std::vector<std::vector<double>> bounds;  // per protocol
  for (const Protocol protocol : protocols) {
    bounds.push_back(o.sizes.empty() ? std::vector<double>{}
                                     : bounds_at(*o.topology, o.sizes, algorithm.collective,
                                                 protocol, algorithm.routed));
  }
  std::vector<compiler::CompileOptions> variants = variant_options(algorithm, base, space);
  VariantRace race(checked, o, protocols, std::move(bounds), variants.size());
  // Variants that differ only in fusion share one lowering, so they are compiled one after the
  // other (with sizes; without, the first correct one in the order is kept).
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
    out.results = simulate_sizes(
        out.program, out.options, o,
        o.sizes.empty() ? std::vector<double>{}
                        : bounds_at(*o.topology, o.sizes, collective, program.protocol, false));
  }
  return out;
}

std::vector<int64_t> sizes_protocol_can_win(const Collective& collective, bool routed,
                                            const Topology& topology, Protocol protocol,
                                            const std::vector<int64_t>& sizes,
                                            const std::vector<double>& best_us) {
  const std::vector<double> bounds = bounds_at(topology, sizes, collective, protocol, routed);
  std::vector<int64_t> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i >= best_us.size() || can_win(bounds[i], best_us[i], false)) out.push_back(sizes[i]);
  }
  return out;
}

Evaluated evaluate(const Algorithm& algorithm, const compiler::CompileOptions& options,
                   const EvaluateOptions& evaluate_options) {
  return evaluate_variants(algorithm, options, single_variant(options), evaluate_options);
}

}  // namespace ccsynth::plan
