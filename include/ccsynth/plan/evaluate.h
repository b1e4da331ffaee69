#pragma once
// The path every algorithm takes on its way to the user (docs/architecture.md "Data flow"):
// verify the Algorithm, compile it to a Program in each requested variant (instances x fusion x
// step / start-time order), verify every program, simulate the correct ones at the requested
// sizes against the lower bound, and keep the fastest per size.

#include <cstdint>
#include <functional>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/program.h"
#include "ccsynth/core/topology.h"
#include "ccsynth/verify/report.h"

namespace ccsynth::plan {

/// Simulated time of one program at one size, with the lower bound and the variant simulated.
struct SizedResult {
  int64_t bytes = 0;
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  double lower_bound_us = 0;
  int instances = 1;                      // compiler instances of the program simulated
  bool fused = true;                      // compiled with rcs / rrcs / rrs fusion
  bool schedule_order = false;            // compiled in the schedule's start-time order
  Protocol protocol = Protocol::kSimple;  // the protocol simulated
  double ratio_to_bound() const { return lower_bound_us > 0 ? time_us / lower_bound_us : 0; }
};

/// How often each stage ran in one evaluation (a simulation at each size counts once).
struct StageCounts {
  int compilations = 0;  // those that succeeded
  int over_limits = 0;   // compilations or lowerings that failed (UserError: runtime limits)
  int twins = 0;         // compilations equal to an earlier variant's program: not raced
  int simulations = 0;
  int program_verifications = 0;
  // Seconds each stage took, summed over the threads that ran it (failed attempts included).
  double lowering_seconds = 0;
  double compile_seconds = 0;
  double simulate_seconds = 0;
  double verify_seconds = 0;
};

/// An algorithm carried through verification, compilation and simulation.
struct Evaluated {
  Algorithm algorithm;
  Program program;                   // the kept variant (fastest at the last size)
  compiler::CompileOptions options;  // the options `program` was compiled with
  verify::VerifyReport algorithm_report;
  verify::VerifyReport program_report;
  std::vector<SizedResult> results;  // per size the fastest variant; empty when wrong
  bool compiled = false;             // false when the algorithm failed verification
  StageCounts stages;                // the work it took
  bool ok() const { return algorithm_report.ok() && compiled && program_report.ok(); }
};

/// Memory that concurrent evaluations may hold together by default (EvaluateOptions::
/// memory_budget_bytes): 4 GiB.
inline constexpr int64_t kDefaultMemoryBudgetBytes = int64_t{4} << 30;

/// Where and how an evaluation checks and times its programs.
struct EvaluateOptions {
  /// Checks that every op uses a link of this topology and simulates on it; nullptr checks
  /// the algorithm on its own and simulates nothing.
  const Topology* topology = nullptr;
  std::vector<int64_t> sizes;  // bytes per rank to simulate (needs `topology`)
  int fifo_slots = 8;          // FIFO slots per connection the program verifier assumes
  /// The compiler of every variant; empty = compiler::compile. Tests put a faulty one here to
  /// check that a wrong program is never kept.
  std::function<Program(const Algorithm&, const compiler::CompileOptions&)> compile;
  /// The protocols every variant is simulated in, compiled once (a program's protocol is an
  /// attribute only the simulator reads); per size the fastest (variant, protocol) pair wins,
  /// a tie going to the first protocol. Empty = the base options' protocol only.
  std::vector<Protocol> protocols;
  /// Per size (as `sizes`) a time to beat, another algorithm's, which wins a tie; empty =
  /// none. Where a protocol's lower bound cannot beat it nothing is simulated in the protocol,
  /// and a size where no protocol can has no result.
  std::vector<double> time_to_beat;
  /// Lowerings compiled and simulated at once (0 = the hardware threads), capped by memory
  /// (concurrent_evaluations); one at a time without sizes or with `compile` set. The result
  /// does not depend on it.
  int threads = 0;
  /// Memory the evaluations may hold together, estimated at 1,000 bytes per op of the
  /// algorithm each: it caps the lowerings run at once, and where a second evaluation would not
  /// fit, each lowering group's lowering is let go once its last variant is compiled (before
  /// that program's simulation and verification) and variants are not compared for twins. The
  /// best program so far is always held (a program is a small part of an evaluation: it was
  /// compiled again at the end, 100 s at 4096 ranks). The result does not depend on it.
  int64_t memory_budget_bytes = kDefaultMemoryBudgetBytes;
};

/// The sizes among `sizes` at which a program of `collective` in `protocol` can still beat
/// `best_us` (the time to beat per size, which wins a tie; a size without one is kept): where
/// the lower bound with the protocol's factors (never above a simulation,
/// BoundOptions::host_switches = `routed`) is below it. LL, whose beta is doubled, is thus not
/// simulated where bandwidth dominates; no size threshold is assumed. evaluate_variants applies
/// the same rule to EvaluateOptions::time_to_beat and to the times it has simulated.
std::vector<int64_t> sizes_protocol_can_win(const Collective& collective, bool routed,
                                            const Topology& topology, Protocol protocol,
                                            const std::vector<int64_t>& sizes,
                                            const std::vector<double>& best_us);

/// How many of `jobs` evaluations (lowering, compilation, simulation) of an algorithm of `ops`
/// ops run at once: `threads` (0 = the hardware threads), fewer when that many would hold more
/// than `memory_budget_bytes` together (by default, at thousands of ranks, one).
int concurrent_evaluations(int threads, size_t jobs, size_t ops,
                           int64_t memory_budget_bytes = kDefaultMemoryBudgetBytes);

/// Whether only one evaluation of an algorithm of `ops` ops fits in `memory_budget_bytes` at a
/// time (by default, at thousands of ranks), whatever the threads.
bool one_evaluation_at_a_time(size_t ops, int64_t memory_budget_bytes = kDefaultMemoryBudgetBytes);

/// The compilations tried. Start-time order (CompileOptions::schedule_order) is only tried for
/// timed algorithms (TACCL, TACOS) unless it is the only order asked for.
struct VariantSpace {
  std::vector<int> instances = {1};
  std::vector<bool> fusion = {true, false};
  std::vector<bool> schedule_orders = {false, true};
};

/// Exactly the compilation `options` describes.
VariantSpace single_variant(const compiler::CompileOptions& options);

/// Every variant of `space` (other options from `base`) in the order instances x fusion x step /
/// start-time order; start-time order only for an algorithm with a schedule
/// (compiler::has_schedule_order).
std::vector<compiler::CompileOptions> variant_options(const Algorithm& algorithm,
                                                      const compiler::CompileOptions& base,
                                                      const VariantSpace& space);

/// Verifies `algorithm`, compiles it in every variant of `space` (other options from `base`)
/// and simulates each program; per size the fastest correct variant wins and the program kept
/// is the fastest at the last size (the first correct one without sizes). Only the programs
/// whose results are kept are verified (simulating is cheaper than verifying at thousands of
/// ranks): a wrong one drops out and the next fastest is verified in its place. Variants over
/// the runtime's limits are left out; with none left the last such UserError is rethrown.
Evaluated evaluate_variants(const Algorithm& algorithm, const compiler::CompileOptions& base,
                            const VariantSpace& space, const EvaluateOptions& options);

/// A program made elsewhere (an MSCCL XML file): verified against `collective` and, when
/// correct, simulated at every size. Its algorithm is empty but for name and collective (no
/// algorithm verdict), its options are the defaults.
Evaluated evaluate_program(const Program& program, const Collective& collective,
                           const EvaluateOptions& options);

/// evaluate_variants with exactly `options`' compilation.
Evaluated evaluate(const Algorithm& algorithm, const compiler::CompileOptions& options,
                   const EvaluateOptions& evaluate_options);

}  // namespace ccsynth::plan
