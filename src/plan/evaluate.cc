#include "ccsynth/plan/evaluate.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <utility>

#include "ccsynth/compiler/instances.h"
#include "ccsynth/compiler/schedule_order.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/timing.h"
#include "ccsynth/plan/tune.h"
#include "ccsynth/sim/bounds.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"
#include "parallel.h"

namespace ccsynth::plan {

namespace {

// Simulated time of a (variant, protocol) pair at a size it was not simulated at: its lower
// bound (plan::program_load, the protocol's bound for the collective) showed that it cannot win
// there.
constexpr double kPruned = std::numeric_limits<double>::infinity();
// A bound above the best time by more than this share (rounding in the bound's sum) is a loss.
constexpr double kBoundSlack = 1e-9;
// Memory one more evaluation (lowering, compilation, simulation) adds at its peak per op of the
// algorithm (a second one at once added 0.6-1.3 KB per op on the 32x32 mesh, torus3d:8x8x8 and
// rfs:8x8x8; docs/compiler.md). Within the default budget (kDefaultMemoryBudgetBytes), at
// thousands of ranks evaluations run one at a time.
constexpr double kBytesPerOpInFlight = 1000;
// When the last variant of a race has at least this many steps, a program is verified beside
// its simulation as soon as a thread is idle, before it is known to win: the best so far if it
// is not verified yet, else the last variant's (VariantRace::verify_best_when_idle).
// Verification is a long serial stage at thousands of ranks (the winner's took 1.5 s of the
// 1024-rank mesh allgather after the race, with the other core idle). Where one evaluation fits
// at a time, the best program so far is verified beside a later variant's simulation
// (VariantRace::one_at_a_time_). Smaller programs are verified only once they win.
constexpr int64_t kVerifyBesideSimulationSteps = 100000;

// Memory a compiled program and its simulation hold per op of the algorithm once the lowering
// is let go: about two steps per op of 24 bytes each, the simulator's 16-byte copy of each,
// and the threadblock, connection and event state (a few bytes per op at thousands of ranks).
constexpr double kBytesPerOpSimulated = 100;

// Whether `programs` compiled programs of an algorithm of `ops` ops fit in `budget_bytes`
// while they are simulated at once (VariantRace::race, simulate_together in
// evaluate_variants).
bool simulations_fit_together(size_t programs, size_t ops, int64_t budget_bytes) {
  return static_cast<double>(programs) * kBytesPerOpSimulated * static_cast<double>(ops) <=
         static_cast<double>(budget_bytes);
}

// How many evaluations of an algorithm of `ops` ops fit in `budget_bytes` at once (at least 1).
size_t evaluations_in_memory(size_t ops, int64_t budget_bytes) {
  const double per_job = std::max(kBytesPerOpInFlight * static_cast<double>(ops), 1.0);
  return static_cast<size_t>(std::max(1.0, static_cast<double>(budget_bytes) / per_job));
}

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

// Whether a program whose lower bound is `bound_us` can beat a time to beat, `best_us`, which
// wins a tie (kPruned: nothing to beat).
bool can_win(double bound_us, double best_us) { return bound_us < best_us; }

// Simulates a program at every size but the `skip` ones (time kPruned there; empty: none). A
// simulation that passes `stop_after_us` at its size (empty: none) stops there: the program is
// slower than a time already simulated, cannot win, and gets kPruned as well, with the time it
// stopped at (a lower bound of its time, above stop_after_us) in `stopped_at` (kPruned where it
// did not stop).
std::vector<SizedResult> simulate_sizes(const Program& program,
                                        const compiler::CompileOptions& options,
                                        const EvaluateOptions& o, const std::vector<double>& bounds,
                                        const std::vector<bool>& skip = {},
                                        const std::vector<double>& stop_after_us = {},
                                        std::vector<double>* stopped_at = nullptr) {
  // Only the times are kept: no critical path (a record per step instance, as large as the
  // program at thousands of ranks).
  sim::SimOptions timing;
  timing.critical_path = false;
  std::vector<SizedResult> out;
  if (stopped_at != nullptr) stopped_at->assign(o.sizes.size(), kPruned);
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
      timing.stop_after_us = stop_after_us.empty() ? kPruned : stop_after_us[i];
      const sim::SimResult sim = sim::simulate(program, *o.topology, o.sizes[i], timing);
      if (!sim.stopped) {
        r.time_us = sim.time_us;
        r.algbw_gbps = sim.algbw_gbps;
        r.busbw_gbps = sim.busbw_gbps;
      } else if (stopped_at != nullptr) {
        (*stopped_at)[i] = sim.time_us;
      }
    }
    out.push_back(r);
  }
  return out;
}

verify::VerifyReport verify_compiled(const Program& program, const Algorithm& algorithm,
                                     const compiler::CompileOptions& options,
                                     const EvaluateOptions& o) {
  if (options.instances <= 1)
    return verify::verify_program(program, {&algorithm.collective, o.fifo_slots});
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

// Whether programs compiled with fusion `fuse` usually win the race of a collective that
// combines (`combining`) or not: unfused for a reduction (it keeps the schedule's timing, where
// a fused step holds its receive until its send can go), fused otherwise (docs/compiler.md, "The
// verification beside the last simulation bets on fusion").
bool fusion_usually_wins(bool fuse, bool combining) { return fuse != combining; }

// Calls give_up_waiting() on `give_up` when destroyed.
class GiveUpOnExit {
 public:
  explicit GiveUpOnExit(std::atomic<bool>& give_up) : give_up_(give_up) {}
  GiveUpOnExit(const GiveUpOnExit&) = delete;
  GiveUpOnExit& operator=(const GiveUpOnExit&) = delete;
  ~GiveUpOnExit() { give_up_waiting(give_up_); }

 private:
  std::atomic<bool>& give_up_;
};

// The next variant of a lowering group, offered while the group's thread simulates the one
// before it (compiled, its program kept as the twin): a thread that falls idle meanwhile (the
// nccl reference's, once done) compiles and races it beside that simulation, unless the group's
// thread, done first, takes it back. In the 1024-rank mesh allgather the unfused variant's
// compilation and simulation waited for the fused one's simulation while the reference's
// thread had nothing left to do.
class HandOver {
 public:
  HandOver() = default;
  HandOver(const HandOver&) = delete;
  HandOver& operator=(const HandOver&) = delete;
  ~HandOver() { give_up_waiting(give_up_); }  // the helper's future then waits for it

  // Runs `run` on a thread of its own once fewer than `threads` threads are busy, unless
  // taken_by_helper() is called first.
  void offer(int threads, std::function<void()> run) {
    helper_ = std::async(std::launch::async, [this, threads, run = std::move(run)] {
      if (!wait_for_idle_thread(threads, give_up_) || taken_.exchange(true)) return;
      const BusyThread counted;
      run();
    });
  }

  // Called by the group's thread when it is ready for the next variant: whether the helper took
  // it (then it has raced it by now; its error, if any, is rethrown here).
  bool taken_by_helper() {
    if (!helper_.valid()) return false;
    give_up_waiting(give_up_);
    if (!taken_.exchange(true)) {
      helper_.get();  // it gave up, or is about to
      return false;
    }
    const WaitingThread waiting;  // an idle core for the helper's verification beside
    helper_.get();
    return true;
  }

 private:
  std::atomic<bool> give_up_{false};
  std::atomic<bool> taken_{false};
  std::future<void> helper_;
};

// Adds the seconds from its construction to its destruction to `total`.
class StageTimer {
 public:
  explicit StageTimer(std::atomic<double>& total) : total_(total) {}
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;
  ~StageTimer() { total_ += seconds_since(started_); }

 private:
  std::atomic<double>& total_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

// One compiled variant in one protocol: its simulated times and, once checked, its verdict
// (the same in every protocol: the verifier does not read the protocol). Only the program of
// the pair fastest at the last size is held (they are large at thousands of ranks); another one
// is compiled again when it has to be verified.
struct Variant {
  compiler::CompileOptions options;  // the protocol included
  size_t compiled = 0;  // the compilation (in variant_options) it shares with its other protocols
  size_t protocol = 0;  // index in the race's protocols
  size_t position = 0;  // protocol-major, then instances x fusion x order: the first wins a tie
  std::vector<SizedResult> results;  // time_us kPruned where not simulated
  // Per size the larger of the program's load bound and the protocol's bound for the collective.
  std::vector<double> bound_us;
  std::optional<verify::VerifyReport> report;  // set once verified
  bool ok() const { return report && report->ok(); }
  bool rejected() const { return report && !report->ok(); }
  bool pruned(size_t size) const { return results[size].time_us == kPruned; }
};

// Compiles, simulates and checks the variants of one algorithm, each compiled once and
// simulated in every protocol. Simulating is cheaper than verifying, so every (variant,
// protocol) pair is simulated but only the ones whose results are kept (the fastest per size)
// are verified; a wrong one drops out and the next fastest takes its place. A pair whose lower
// bound (program_load, the protocol's bound) is above the best time simulated so far at a size,
// or cannot beat the time to beat there, is not simulated there: it cannot win. add() may run
// on several threads at once (one per lowering); the outcome does not depend on their order.
class VariantRace {
 public:
  VariantRace(const Algorithm& algorithm, const EvaluateOptions& o, std::vector<Protocol> protocols,
              std::vector<std::vector<double>> bounds, size_t variant_count)
      : one_at_a_time_(evaluations_in_memory(algorithm.ops.size(), o.memory_budget_bytes) == 1),
        verify_beside_(!o.sizes.empty()),
        threads_(thread_limit(o.threads)),
        algorithm_(algorithm),
        o_(o),
        protocols_(std::move(protocols)),
        bounds_(std::move(bounds)),
        variant_count_(variant_count),
        unstarted_(variant_count),
        best_us_(o.sizes.size(), kPruned),
        dropped_(protocols_.size()) {}

  // Compiles variant `position` (in the first protocol; the others only relabel the program),
  // from `lowering` when given, and simulates it in every protocol; false when it is over the
  // runtime's limits. `attempt` orders failures (the last one is reported).
  // `twin`: the program an earlier variant of the same lowering compiled to, if kept; one that
  // simulates alike is not raced (it would tie with that earlier variant everywhere and lose
  // every tie, with the same verdict), and `keep_twin` keeps this program there for the next.
  // `compiled` (if any) is called once the program is compiled and `twin` updated, before the
  // simulations. Where one evaluation fits at a time, a verification runs beside the
  // simulation only with `lowering_let_go` (`compiled` let the lowering go: verifying holds
  // less than the lowering did).
  bool add(compiler::CompileOptions options, size_t position, size_t attempt,
           const compiler::Lowering* lowering, std::optional<Program>* twin = nullptr,
           bool keep_twin = false, const std::function<void()>& compiled = {},
           bool lowering_let_go = false) {
    options.protocol = protocols_.front();
    const bool last = --unstarted_ == 0;  // no other variant compiles after this one
    std::optional<Program> program = compile_or_fail(options, attempt, lowering);
    if (!program) return false;
    if (twin != nullptr && *twin && sim::simulate_alike(**twin, *program)) {
      ++twins_;
      return true;
    }
    if (twin != nullptr) {
      twin->reset();
      if (keep_twin) *twin = *program;
    }
    if (compiled) compiled();
    race(std::move(*program), options, position, last, lowering_let_go);
    return true;
  }

  // add()'s compilation alone, for a variant raced later by race() (simulate_together):
  // nullopt when it is over the runtime's limits.
  std::optional<Program> compile_for_later(compiler::CompileOptions& options, size_t attempt,
                                           const compiler::Lowering* lowering) {
    options.protocol = protocols_.front();
    --unstarted_;
    return compile_or_fail(options, attempt, lowering);
  }

  // Simulates the compiled `program` of variant `position` in every protocol and records it,
  // with a verification beside as add() describes (`last`: no other variant compiles after it).
  void race(Program program, const compiler::CompileOptions& options, size_t position, bool last,
            bool lowering_let_go) {
    std::vector<Variant> pairs;
    std::optional<BesideReport> early_report;
    {
      std::atomic<bool> simulated{false};
      std::future<std::optional<BesideReport>> early;
      const bool beside = verify_beside_ && (!one_at_a_time_ || lowering_let_go) &&
                          program.total_steps() >= kVerifyBesideSimulationSteps;
      if (beside && last) {
        early = verify_best_when_idle(program, options, simulated);
      } else if (beside && one_at_a_time_ && held_ && !variants_[*held_].report) {
        // The best program so far, held (nothing else replaces it here: one add() at a time).
        early = verify_held_when_idle(*held_, simulated);
      }
      {
        // A verification not started by the end of the simulation gives up, before `early`
        // waits for it, however this scope is left.
        const GiveUpOnExit stop_waiting(simulated);
        pairs = simulate_protocols(program, options, position);
      }
      if (early.valid()) early_report = early.get();
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    if (early_report && early_report->held) {
      variants_[*early_report->held].report = early_report->report;
      share_report(*early_report->held);
    } else if (early_report) {
      for (Variant& v : pairs)
        if (!v.report) v.report = early_report->report;
    }
    const size_t first = variants_.size();
    for (Variant& v : pairs) {
      variants_.push_back(std::move(v));
      note_best(variants_.back());
    }
    size_t fastest = first;  // of the new pairs at the last size
    for (size_t at = first + 1; at < variants_.size(); ++at)
      if (before_at_last_size(at, fastest)) fastest = at;
    const bool better =
        !held_ || variants_[*held_].rejected() || before_at_last_size(fastest, *held_);
    if (better) {
      program.protocol = variants_[fastest].options.protocol;
      hold(fastest, std::move(program));
    }
  }

  // The compilation of add(): from `lowering` when given; nullopt (the failure recorded) when
  // it is over the runtime's limits.
  std::optional<Program> compile_or_fail(const compiler::CompileOptions& options, size_t attempt,
                                         const compiler::Lowering* lowering) {
    try {
      if (lowering == nullptr) return compile(options);
      const StageTimer timer(compile_s_);
      Program program = compiler::compile(*lowering, options);
      ++compilations_;
      return program;
    } catch (const UserError& e) {
      record_failure(attempt, e);  // over the runtime limits (e.g. steps per threadblock) this way
      return std::nullopt;
    }
  }

  // Whether every variant was compiled (or failed): a race() started now is the last.
  bool all_started() const { return unstarted_ == 0; }

  // Whether a correct variant is already known and nothing simulated could replace it.
  bool settled() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return o_.sizes.empty() &&
           std::any_of(variants_.begin(), variants_.end(), [](const Variant& v) { return v.ok(); });
  }

  // Records that variant `attempt` could not be lowered (over the runtime limits): the last
  // such error in the order is the one reported when no variant compiles.
  void fail(size_t attempt, const UserError& e) {
    --unstarted_;
    record_failure(attempt, e);
  }

  void count_lowering(double seconds) { lowering_s_ += seconds; }

  bool empty() const { return variants_.empty(); }
  const std::optional<UserError>& last_failure() const { return last_failure_; }

  // Verifies the fastest variant at every size until each is correct (or none is left), and
  // returns the evaluation: per size the fastest correct variant, the program of the one
  // fastest at the last size. With no correct variant, the last one with its violations.
  // `checked` is the evaluation so far (moved into the result, with a copy of the algorithm
  // made only now: while variants compile, the caller's is the only one).
  Evaluated finish(Evaluated&& checked) {
    if (std::all_of(dropped_.begin(), dropped_.end(), [](const auto& d) { return d.has_value(); }))
      throw *dropped_.back();  // the simulator refused a correct program in every protocol
    std::sort(variants_.begin(), variants_.end(),
              [](const Variant& a, const Variant& b) { return a.position < b.position; });
    // Indices moved: the held program, if any, is found again by its position.
    const bool holding = held_.has_value();
    held_.reset();
    for (size_t i = 0; holding && i < variants_.size(); ++i) {
      if (variants_[i].position == held_position_) held_ = i;
    }
    do verify_winners();
    while (simulate_pruned_contenders());
    int last = -1;  // the winner at the last size with one
    for (size_t size = std::max<size_t>(o_.sizes.size(), 1); size-- > 0 && last < 0;)
      last = winner(size);
    const int kept = last >= 0 ? last : static_cast<int>(variants_.size()) - 1;
    if (!variants_[kept].report) verify(kept);  // every pair was pruned: nothing verified yet
    Evaluated out = std::move(checked);
    out.program = std::move(program_of(kept));
    out.algorithm = algorithm_;
    out.options = variants_[kept].options;
    out.program_report = *variants_[kept].report;
    out.compiled = true;
    out.stages = {compilations_, failures_,  twins_,      simulations_, verifications_,
                  lowering_s_,   compile_s_, simulate_s_, verify_s_};
    if (last < 0) return out;  // no correct variant, or nothing beat the time to beat
    for (size_t size = 0; size < o_.sizes.size(); ++size) {
      const int w = winner(size);
      if (w >= 0) out.results.push_back(variants_[w].results[size]);
    }
    return out;
  }

 private:
  // fail() for a variant that add() started (its compilation failed).
  void record_failure(size_t attempt, const UserError& e) {
    ++failures_;
    const std::lock_guard<std::mutex> lock(mutex_);
    if (last_failure_ && failed_attempt_ > attempt) return;
    last_failure_ = e;
    failed_attempt_ = attempt;
  }

  // A verification run beside a simulation: of the held pair `held`, or (nullopt) of the
  // program being simulated.
  struct BesideReport {
    std::optional<size_t> held;
    verify::VerifyReport report;
  };

  // On a thread of its own, as soon as fewer threads than allowed are busy (unless `simulated`
  // is set first: then nullopt), verifies the best program so far if it is not verified yet,
  // else `program`, whose simulation runs beside it: that one wins only if it beats the best so
  // far. A loser's verification is wasted, and the winner is verified after the race. Betting
  // on `program` (the last variant of the race) wasted one on TACOS's mesh allgathers and
  // torus3d:8x8x8 once their spilled channels sent in order (the fused variant, simulated
  // first, wins there); betting on the best so far wasted one on TACOS's rfs:8x8x8 allreduce,
  // won by its last variant, unfused like the winner of its other lowering. So where the race
  // so far favours `program`'s fusion (fusion_won_before), `program` is verified
  // (docs/compiler.md). The simulation only relabels the program's protocol, which the
  // verifier does not read; the held program stays alive while it is verified, whatever the
  // race holds next.
  std::future<std::optional<BesideReport>> verify_best_when_idle(
      const Program& program, const compiler::CompileOptions& options,
      const std::atomic<bool>& simulated) {
    return when_idle(simulated,
                     [this, &program, options] { return verify_best(program, options); });
  }

  // verify_best_when_idle's choice and verification, on its own thread.
  BesideReport verify_best(const Program& program, const compiler::CompileOptions& options) {
    std::optional<size_t> held;
    std::shared_ptr<const Program> held_program;
    compiler::CompileOptions held_options;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (held_ && !variants_[*held_].report &&
          !favours_program(variants_[*held_].options, options)) {
        held = held_;
        held_program = held_program_;
        held_options = variants_[*held_].options;
      }
    }
    if (held) return BesideReport{held, verify_counted(*held_program, held_options)};
    return BesideReport{std::nullopt, verify_counted(program, options)};
  }

  // Whether the program being simulated, compiled as `program`, is a better bet to win than the
  // held best so far, compiled as `held` (with mutex_ held). Only fusion tells them apart here:
  // between two lowerings of the same fusion nothing does, and the held one is known to be fast.
  // Otherwise the fusion that won a comparison of twins earlier in the race; where none did
  // either way, the unfused program for a combining collective, the fused one otherwise. Measured
  // at 1 MiB (docs/compiler.md, "The verification beside the last simulation bets on fusion"):
  // the unfused program won 8 of the 11 reducing races of TACOS and trees at 256-1024 ranks (it
  // keeps the schedule's timing, where a fused step holds its receive until its send can go),
  // the fused one or a tie every allgather race on meshes and tori.
  bool favours_program(const compiler::CompileOptions& held,
                       const compiler::CompileOptions& program) const {
    if (held.fuse == program.fuse) return false;
    const bool program_won = fusion_won_before(program);
    const bool held_won = fusion_won_before(held);
    if (program_won != held_won) return program_won;
    return fusion_usually_wins(program.fuse, algorithm_.collective.combining);
  }

  // Whether some program compiled with `options`' fusion is known to be faster at the last size
  // than its twin of the other fusion (the same lowering and protocol), with mutex_ held. A twin
  // that was not simulated to its end (pruned, or stopped at a time already beaten) counts with
  // its lower bound only (bound_us): stopped early against another variant's time, it may still
  // have been faster than this one.
  bool fusion_won_before(const compiler::CompileOptions& options) const {
    for (size_t a = 0; a < variants_.size(); ++a) {
      const Variant& va = variants_[a];
      if (va.options.fuse != options.fuse || va.results.empty() ||
          va.results.back().time_us == kPruned) {
        continue;
      }
      for (size_t b = 0; b < variants_.size(); ++b) {
        const Variant& vb = variants_[b];
        const bool twins = vb.options.fuse != va.options.fuse && vb.protocol == va.protocol &&
                           vb.options.schedule_order == va.options.schedule_order &&
                           vb.options.instances == va.options.instances;
        if (twins && known_faster_at_last_size(va, vb)) return true;
      }
    }
    return false;
  }

  // Whether `a`, simulated to its end at the last size, is faster there than `b` is known to be:
  // b's time, or its lower bound where it was not simulated to its end.
  static bool known_faster_at_last_size(const Variant& a, const Variant& b) {
    if (b.results.empty()) return false;
    const size_t last = a.results.size() - 1;
    if (b.bound_us.size() <= last) return false;
    const double b_at_least = b.pruned(last) ? b.bound_us[last] : b.results[last].time_us;
    return a.results[last].time_us < b_at_least;
  }

  // verify_best_when_idle for the held pair `at`, where nothing replaces it meanwhile (one
  // add() at a time).
  std::future<std::optional<BesideReport>> verify_held_when_idle(
      size_t at, const std::atomic<bool>& simulated) {
    return when_idle(simulated, [this, at, options = variants_[at].options] {
      return BesideReport{at, verify_counted(*held_program_, options)};
    });
  }

  // Runs `verify` on a thread of its own as soon as fewer threads than allowed are busy, counted
  // among them; nullopt when `simulated` is set first.
  template <typename Verify>
  std::future<std::optional<BesideReport>> when_idle(const std::atomic<bool>& simulated,
                                                     Verify verify) {
    return std::async(std::launch::async,
                      [this, &simulated, verify]() -> std::optional<BesideReport> {
                        if (!wait_for_idle_thread(threads_, simulated)) return std::nullopt;
                        const BusyThread counted;
                        return verify();
                      });
  }

  // The compiled `program` of variant `position` (compiled as `options`) in every protocol
  // (the first only without sizes): one pair each, simulated where it can win.
  std::vector<Variant> simulate_protocols(Program& program, const compiler::CompileOptions& options,
                                          size_t position) {
    std::vector<Variant> pairs;
    // Per size the best time of the pairs simulated here so far: the race's best times take
    // them in only after the last protocol (add()), and a protocol's pair must not be simulated
    // where the program in an earlier protocol already beats its bound (e.g. NCCL's ring in LL
    // at sizes where its Simple time is below LL's load bound).
    std::vector<double> sibling_best(o_.sizes.size(), kPruned);
    std::vector<Variant> bounded = bounded_pairs(program, options, position);
    for (const size_t p : likely_winners_first(bounded)) {
      Variant& v = bounded[p];
      program.protocol = protocols_[p];
      if (o_.sizes.empty()) {
        // Nothing to race on: the first correct variant is the one kept.
        v.report = verify_counted(program, options);
      } else {
        if (!pairs.empty()) v.report = pairs.front().report;  // the verdict so far
        if (v.rejected() || dropped(p)) {
          v.results = unsimulated();
        } else {
          const std::vector<double> best = best_times(sibling_best);
          simulate_or_reject(v, program, losing_sizes(v, best), best);
          if (!dropped(p)) fold_best(v, sibling_best);
        }
        for (Variant& sibling : pairs) sibling.report = v.report;
      }
      pairs.push_back(std::move(v));
    }
    return pairs;
  }

  // The pairs of the compiled `program` of variant `position` in every protocol (the first only
  // without sizes), in protocol order, with their bounds at every size, not simulated yet.
  std::vector<Variant> bounded_pairs(Program& program, const compiler::CompileOptions& options,
                                     size_t position) const {
    std::vector<Variant> out;
    std::optional<int64_t> chain_sends;  // the same in every protocol: followed once
    for (size_t p = 0; p < (o_.sizes.empty() ? 1 : protocols_.size()); ++p) {
      Variant v;
      v.options = options;
      v.options.protocol = protocols_[p];
      v.compiled = position;
      v.protocol = p;
      v.position = p * variant_count_ + position;
      program.protocol = protocols_[p];
      if (!o_.sizes.empty()) {
        const ProgramLoad load = program_load(program, *o_.topology, chain_sends);
        chain_sends = load.chain_sends;
        for (size_t size = 0; size < o_.sizes.size(); ++size) {
          v.bound_us.push_back(std::max(load.lower_bound_us(o_.sizes[size]), bounds_[p][size]));
        }
      }
      out.push_back(std::move(v));
    }
    return out;
  }

  // The order to simulate `pairs` (one program in every protocol) in: the protocol whose bound
  // is the lowest at the most sizes first, the others after it in the same way (ties in protocol
  // order). A protocol simulated first sets the times the others' bounds are checked against:
  // NCCL's ring on rfs:8x8x8 at 1 MiB takes 297 us in LL, whose half alpha wins at small
  // chunks, and at least 511 us in Simple and LL128 (a chain of 1,022 sends of at least 0.5 us
  // each, ProgramLoad::chain_sends), so simulating LL first leaves the other two out (in
  // protocol order all three were simulated, 2 M step instances each). The outcome does not
  // depend on the order: a pair is left out only where it cannot win, and ties go by position.
  static std::vector<size_t> likely_winners_first(const std::vector<Variant>& pairs) {
    std::vector<int> lowest(pairs.size(), 0);  // sizes at which each pair's bound is lowest
    const size_t sizes = pairs.empty() ? 0 : pairs.front().bound_us.size();
    for (size_t size = 0; size < sizes; ++size) {
      size_t best = 0;
      for (size_t p = 1; p < pairs.size(); ++p)
        if (pairs[p].bound_us[size] < pairs[best].bound_us[size]) best = p;
      ++lowest[best];
    }
    std::vector<size_t> order(pairs.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return lowest[a] > lowest[b]; });
    return order;
  }

  // The sizes at which `v` cannot win: its bound is above `best` there (best_times()) or does
  // not beat the time to beat.
  std::vector<bool> losing_sizes(const Variant& v, const std::vector<double>& best) const {
    std::vector<bool> out(o_.sizes.size());
    for (size_t size = 0; size < out.size(); ++size) out[size] = !can_win_at(v, size, best[size]);
    return out;
  }

  // Per size the best time simulated so far, the race's or in `also_best` (the program's
  // earlier protocols): a pair whose bound is above it is not simulated there
  // (losing_sizes()), and one slower than it stops at it.
  std::vector<double> best_times(const std::vector<double>& also_best) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::vector<double> out(o_.sizes.size());
    for (size_t size = 0; size < out.size(); ++size)
      out[size] = std::min(best_us_[size], also_best[size]);
    return out;
  }

  // Whether `v`'s bound at `size` is not above `best_us` and beats the time to beat.
  bool can_win_at(const Variant& v, size_t size, double best_us) const {
    const double beat = o_.time_to_beat.empty() ? kPruned : o_.time_to_beat[size];
    return v.bound_us[size] <= best_us * (1 + kBoundSlack) && can_win(v.bound_us[size], beat);
  }

  // Folds `v`'s times into `best` where it was simulated, unless it is known to be wrong (its
  // protocol's drop is checked by the caller).
  void fold_best(const Variant& v, std::vector<double>& best) const {
    if (v.rejected()) return;
    for (size_t size = 0; size < o_.sizes.size(); ++size) {
      if (!v.pruned(size)) best[size] = std::min(best[size], v.results[size].time_us);
    }
  }

  // Folds `v`'s times into the race's best ones (under the lock).
  void note_best(const Variant& v) {
    if (!dropped_[v.protocol]) fold_best(v, best_us_);
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

  bool dropped(size_t p) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return dropped_[p].has_value();
  }

  // Leaves protocol `p` out of the race: the simulator refused a correct program in it (e.g.
  // over its step-instance cap), as an evaluation in that protocol alone would have failed.
  void drop(size_t p, const UserError& e) {
    const std::lock_guard<std::mutex> lock(mutex_);
    dropped_[p] = e;
  }

  // Whether pair `at` is out of the race: wrong, or in a dropped protocol (single-threaded).
  bool out_of_race(size_t at) const {
    return variants_[at].rejected() || dropped_[variants_[at].protocol];
  }

  // Simulates `v` at every size but the `skip` ones. A program the simulator rejects (e.g. one
  // that deadlocks) must be wrong: it is verified at once, and when the verifier finds nothing
  // wrong, the simulator's complaint stands: the protocol is dropped (drop()).
  // A simulation stopped at a size because it passed `stop_after_us` there leaves `v` pruned
  // with the time it stopped at as its bound: it is raced there again only if the best time
  // rises above it (the variant that set it proves wrong).
  void simulate_or_reject(Variant& v, const Program& program, const std::vector<bool>& skip,
                          const std::vector<double>& stop_after_us = {}) {
    try {
      const StageTimer timer(simulate_s_);
      std::vector<double> stopped_at;
      v.results = simulate_sizes(program, v.options, o_, bounds_[v.protocol], skip, stop_after_us,
                                 &stopped_at);
      for (size_t size = 0; size < stopped_at.size(); ++size)
        if (stopped_at[size] != kPruned) v.bound_us[size] = stopped_at[size];
      simulations_ += static_cast<int>(o_.sizes.size()) -
                      static_cast<int>(std::count(skip.begin(), skip.end(), true));
    } catch (const UserError& e) {
      if (v.results.empty()) v.results = unsimulated();
      if (!v.report) v.report = verify_counted(program, v.options);
      if (v.ok()) drop(v.protocol, e);
    }
  }

  // Verifies the fastest variant at every size until each is correct or none is left.
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

  // A pair pruned at a size against a time that a rejected pair set may win there now:
  // simulates every such one at every size (compiling it again); true when one was.
  bool simulate_pruned_contenders() {
    bool any = false;
    for (size_t size = 0; size < o_.sizes.size(); ++size) {
      const int w = winner(size);
      const double best = w < 0 ? kPruned : variants_[w].results[size].time_us;
      for (size_t i = 0; i < variants_.size(); ++i) {
        Variant& v = variants_[i];
        if (out_of_race(i) || !v.pruned(size) || !can_win_at(v, size, best)) continue;
        simulate_or_reject(v, program_of(i), std::vector<bool>(o_.sizes.size(), false));
        share_report(i);
        any = true;
      }
    }
    return any;
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
  // the first one not known to be wrong (variants are in position order by then).
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

  void hold(size_t at, Program program) {
    held_ = at;
    held_position_ = variants_[at].position;
    held_program_ = std::make_shared<Program>(std::move(program));
  }

  Program compile(const compiler::CompileOptions& options) {
    const StageTimer timer(compile_s_);
    ++compilations_;
    return o_.compile ? o_.compile(algorithm_, options) : compiler::compile(algorithm_, options);
  }

  // The program of pair `at`: the held one relabelled when it is the same compilation, or
  // compiled again (compilation is deterministic).
  Program& program_of(size_t at) {
    if (held_ && variants_[*held_].compiled == variants_[at].compiled) {
      held_ = at;
      held_position_ = variants_[at].position;
    } else {
      held_program_.reset();  // one program at a time
      hold(at, compile(variants_[at].options));
    }
    held_program_->protocol = variants_[at].options.protocol;
    return *held_program_;
  }

  void verify(size_t at) {
    Variant& v = variants_[at];
    v.report = verify_counted(program_of(at), v.options);
    share_report(at);
  }

  // Gives pair `at`'s verdict to the same compilation in the other protocols.
  void share_report(size_t at) {
    for (Variant& v : variants_)
      if (v.compiled == variants_[at].compiled) v.report = variants_[at].report;
  }

  verify::VerifyReport verify_counted(const Program& program,
                                      const compiler::CompileOptions& options) {
    const StageTimer timer(verify_s_);
    ++verifications_;
    return verify_compiled(program, algorithm_, options, o_);
  }

  // Where one evaluation fits at a time (thousands of ranks), add() runs on one thread; the
  // best program so far is verified beside the next simulation once that one's lowering is let
  // go (verification is a long serial stage there, and the second core is otherwise idle).
  const bool one_at_a_time_;
  const bool verify_beside_;  // whether verify_when_idle may verify beside a simulation
  const int threads_;         // threads the evaluation may use
  const Algorithm& algorithm_;
  const EvaluateOptions& o_;
  const std::vector<Protocol> protocols_;
  const std::vector<std::vector<double>> bounds_;  // per protocol, per size
  const size_t variant_count_;
  std::atomic<size_t> unstarted_;  // variants neither added nor failed yet
  mutable std::mutex mutex_;       // guards what add() shares: variants, best times, held program
  std::vector<Variant> variants_;
  std::vector<double> best_us_;  // per size the best time simulated so far (kPruned: none)
  std::vector<std::optional<UserError>> dropped_;  // per protocol, why it left the race
  std::optional<size_t> held_;
  size_t held_position_ = 0;
  // The held pair's program; shared with a verification beside a simulation (add()), which
  // keeps it alive when the race holds another one meanwhile.
  std::shared_ptr<Program> held_program_;
  std::optional<UserError> last_failure_;
  size_t failed_attempt_ = 0;
  std::atomic<int> simulations_{0};
  std::atomic<int> compilations_{0};
  std::atomic<int> verifications_{0};
  std::atomic<int> failures_{0};
  std::atomic<int> twins_{0};
  std::atomic<double> lowering_s_{0};
  std::atomic<double> compile_s_{0};
  std::atomic<double> simulate_s_{0};
  std::atomic<double> verify_s_{0};
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

namespace {

// Whether two variants start from one lowering (they differ at most in fusion), as
// compiler::Lowering::matches tells for variants of one base.
bool same_lowering(const compiler::CompileOptions& a, const compiler::CompileOptions& b) {
  return a.instances == b.instances && a.schedule_order == b.schedule_order;
}

// The variants of `space` (indices into variant_options) grouped by the lowering they share
// (same instances and order; they differ in fusion), groups in the order of their first variant,
// those in start-time order first with `start_time_order_first` (where one evaluation fits at a
// time, groups run one after the other: a start-time order over the runtime's limits fails
// before its lowering, and known first it leaves the step order's group the race's last, whose
// verification may then run beside its simulations; the outcome does not depend on the order).
std::vector<std::vector<size_t>> lowering_groups(
    const std::vector<compiler::CompileOptions>& variants, const EvaluateOptions& o,
    bool start_time_order_first) {
  if (o.sizes.empty()) {  // in the order, the first correct one wins: one group
    std::vector<size_t> all(variants.size());
    std::iota(all.begin(), all.end(), 0);
    return {all};
  }
  std::vector<std::vector<size_t>> groups;
  for (size_t k = 0; k < variants.size(); ++k) {
    const auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& members) {
      return same_lowering(variants[members.front()], variants[k]);
    });
    if (group == groups.end()) {
      groups.push_back({k});
    } else {
      group->push_back(k);
    }
  }
  if (start_time_order_first) {
    std::stable_partition(groups.begin(), groups.end(), [&](const std::vector<size_t>& members) {
      return variants[members.front()].schedule_order;
    });
  }
  return groups;
}

// The member of `batch` (compiled programs of one lowering, simulated at once) that a
// verification beside their simulations bets on, as VariantRace::favours_program does with
// nothing raced yet: the first whose fusion usually wins (fusion_usually_wins), else the last.
// Its simulation is the one the verification may run beside: where another member's ends
// first, on the thread that frees.
template <typename Compiled>
size_t favoured_member(const std::vector<Compiled>& batch, bool combining) {
  for (size_t j = 0; j < batch.size(); ++j) {
    if (fusion_usually_wins(batch[j].options.fuse, combining)) return j;
  }
  return batch.size() - 1;
}

}  // namespace

bool one_evaluation_at_a_time(size_t ops, int64_t memory_budget_bytes) {
  return evaluations_in_memory(ops, memory_budget_bytes) == 1;
}

int concurrent_evaluations(int threads, size_t jobs, size_t ops, int64_t memory_budget_bytes) {
  const auto wanted = static_cast<size_t>(thread_limit(threads));
  const size_t fit = evaluations_in_memory(ops, memory_budget_bytes);
  return static_cast<int>(std::max<size_t>(1, std::min({jobs, wanted, fit})));
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
  if (o.memory_budget_bytes <= 0) {
    throw UserError("", "memory_budget_bytes", "must be > 0");
  }
  Evaluated checked;
  checked.options = base;
  checked.algorithm_report = verify::verify_algorithm(algorithm, o.topology);
  if (!checked.algorithm_report.ok()) {
    checked.algorithm = algorithm;
    return checked;
  }
  const std::vector<Protocol> protocols =
      o.protocols.empty() ? std::vector<Protocol>{base.protocol} : o.protocols;
  std::vector<std::vector<double>> bounds;  // per protocol
  for (const Protocol protocol : protocols) {
    bounds.push_back(o.sizes.empty() ? std::vector<double>{}
                                     : bounds_at(*o.topology, o.sizes, algorithm.collective,
                                                 protocol, algorithm.routed));
  }
  // Variants that differ only in fusion share one lowering, so they are compiled one after the
  // other on one thread (one lowering held per thread: they are large at thousands of ranks);
  // with sizes, the lowerings run at once. Without sizes the first correct one in the order is
  // kept, so they run one after the other in the order.
  const std::vector<compiler::CompileOptions> variants = variant_options(algorithm, base, space);
  VariantRace race(algorithm, o, protocols, std::move(bounds), variants.size());
  const bool one_at_a_time = one_evaluation_at_a_time(algorithm.ops.size(), o.memory_budget_bytes);
  const std::vector<std::vector<size_t>> groups =
      lowering_groups(variants, o, /*start_time_order_first=*/one_at_a_time);
  const int threads = o.sizes.empty() || o.compile
                          ? 1
                          : concurrent_evaluations(o.threads, groups.size(), algorithm.ops.size(),
                                                   o.memory_budget_bytes);
  // A group's variants often compile to the same program (fusion finds nothing to fuse, e.g.
  // trees' allgather): it is kept to compare with the next one where two programs fit in memory.
  const bool twins_fit = !one_at_a_time;
  // A group's next variant may be handed to a thread that falls idle (HandOver) where two
  // evaluations fit in memory.
  const int allowed_threads = thread_limit(o.threads);
  const bool hand_over = twins_fit && !o.sizes.empty() && !o.compile && allowed_threads > 1;
  parallel_for(threads, groups.size(), [&](size_t g) {
    std::optional<compiler::Lowering> lowering;  // none with a test's compiler
    std::optional<std::pair<compiler::CompileOptions, UserError>> failed;  // a lowering's error
    std::optional<Program> twin;  // the group's last compiled program, while another follows
    // Where one evaluation fits at a time (thousands of ranks), a group's variants are all
    // compiled from its lowering first, the lowering let go, and their programs simulated at
    // once where they fit together: the second core ran nothing during one simulation in
    // two (the 4096-rank mesh allgather's fused and unfused simulations took about 100 s each).
    const bool simulate_together =
        !twins_fit && !o.sizes.empty() && !o.compile && allowed_threads > 1 &&
        groups[g].size() > 1 &&
        simulations_fit_together(groups[g].size(), algorithm.ops.size(), o.memory_budget_bytes);
    struct Compiled {
      size_t variant;
      compiler::CompileOptions options;
      Program program;
    };
    std::vector<Compiled> compiled_together;
    // Races member `m` of the group from `lowering`; `compiled` as in VariantRace::add.
    auto add_member = [&](size_t m, const std::function<void()>& compiled) {
      const size_t k = groups[g][m];
      const bool another_follows = m + 1 < groups[g].size();
      race.add(variants[k], k, k, lowering ? &*lowering : nullptr, &twin,
               another_follows && twins_fit, compiled, !twins_fit && !another_follows);
    };
    for (size_t member = 0; member < groups[g].size(); ++member) {
      const size_t k = groups[g][member];
      if (race.settled()) return;
      const compiler::CompileOptions& options = variants[k];
      if (failed && same_lowering(failed->first, options)) {
        race.fail(k, failed->second);  // compiling would lower again and fail alike
        continue;
      }
      // NCCL's ring allgather is built directly (compiler::compile_ring_allgather): no lowering.
      const bool direct = !o.compile && compiler::compiles_as_ring_allgather(algorithm, options);
      if (direct) lowering.reset();
      if (!o.compile && !direct && (!lowering || !lowering->matches(options))) {
        lowering.reset();
        const auto started = std::chrono::steady_clock::now();
        try {
          lowering.emplace(algorithm, options);
          race.count_lowering(seconds_since(started));
        } catch (const UserError& e) {
          race.count_lowering(seconds_since(started));
          failed.emplace(options, e);
          race.fail(k, e);
          continue;
        }
      }
      if (simulate_together) {
        compiler::CompileOptions compiled_as = options;
        if (std::optional<Program> program =
                race.compile_for_later(compiled_as, k, lowering ? &*lowering : nullptr)) {
          compiled_together.push_back({k, compiled_as, std::move(*program)});
        }
        continue;
      }
      HandOver next;
      std::function<void()> once_compiled;
      const bool last_of_group = member + 1 == groups[g].size();
      if (hand_over && lowering && !last_of_group) {
        once_compiled = [&, member] {
          next.offer(allowed_threads, [&, member] { add_member(member + 1, {}); });
        };
      } else if (!twins_fit && last_of_group) {
        // Where one evaluation fits at a time (thousands of ranks) the lowering, most of what
        // it holds, is let go before the program's simulation and verification.
        once_compiled = [&] { lowering.reset(); };
      }
      add_member(member, once_compiled);
      if (next.taken_by_helper()) ++member;
    }
    if (compiled_together.empty()) return;
    lowering.reset();
    // Where these are the race's last programs, one verification runs beside their simulations
    // (the best so far, or the favoured member's program: VariantRace::verify_best, under the
    // race's lock), attached to the favoured member: it starts on the thread the first other
    // simulation to end frees (on the 4096-rank mesh allgather it was attached to the unfused
    // program, whose simulation ended first, and gave up; the fused one's 31 s verification
    // then ran alone after both). A held program may change meanwhile.
    const bool last = race.all_started();
    const size_t bet = favoured_member(compiled_together, algorithm.collective.combining);
    parallel_for(allowed_threads, compiled_together.size(), [&](size_t j) {
      Compiled& c = compiled_together[j];
      const bool verifies = last && j == bet;
      race.race(std::move(c.program), c.options, c.variant, verifies, verifies);
    });
  });
  if (race.empty() && race.last_failure()) throw *race.last_failure();
  CCSYNTH_CHECK(!race.empty()) << "evaluate_variants needs at least one variant";
  return race.finish(std::move(checked));
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
    if (i >= best_us.size() || can_win(bounds[i], best_us[i])) out.push_back(sizes[i]);
  }
  return out;
}

Evaluated evaluate(const Algorithm& algorithm, const compiler::CompileOptions& options,
                   const EvaluateOptions& evaluate_options) {
  return evaluate_variants(algorithm, options, single_variant(options), evaluate_options);
}

}  // namespace ccsynth::plan
