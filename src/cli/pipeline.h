#pragma once
// The path every algorithm takes on its way to the user (DESIGN.md sec. 1): verify the
// Algorithm, compile it to a Program, verify the Program, simulate it at the requested sizes
// against the lower bound. Shared by `synth`, `demo` and `baseline`.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/program.h"
#include "ccsynth/core/topology.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/verify/report.h"

namespace ccsynth::cli {

/// Simulated time of one program at one size, with the lower bound.
struct SizedResult {
  int64_t bytes = 0;
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  double lower_bound_us = 0;
  int instances = 1;  // compiler instances of the program simulated
  bool fused = true;  // compiled with rcs / rrcs / rrs fusion
  bool schedule_order = false;  // compiled in the schedule's start-time order
  double ratio_to_bound() const { return lower_bound_us > 0 ? time_us / lower_bound_us : 0; }
};

/// An algorithm carried through verification, compilation and simulation.
struct Evaluated {
  Algorithm algorithm;
  Program program;
  verify::VerifyReport algorithm_report;
  verify::VerifyReport program_report;
  std::vector<SizedResult> results;  // empty when verification failed
  bool ok() const { return algorithm_report.ok() && program_report.ok(); }
};

/// Verifies `algorithm` on `topology`, compiles it with `options`, verifies the program and,
/// when both are correct, simulates it at every size in `sizes` (bytes per rank).
Evaluated evaluate(const Algorithm& algorithm, const Topology& topology,
                   const compiler::CompileOptions& options, const std::vector<int64_t>& sizes);

/// Sets the runtime limits of `dialect` (msccl-xml.md "Limits": classic 256 steps per
/// threadblock and 216 threadblocks per rank, executor 64 and 1024); a positive `max_steps` or
/// `max_threadblocks` overrides them.
void apply_dialect_limits(compiler::CompileOptions& options, formats::XmlDialect dialect,
                          int max_steps = 0, int max_threadblocks = 0);

/// The reference every result is compared with, like NCCL's ring with one channel per ring: the
/// ring baseline over all edge-disjoint rings of `topology` (at most 16), one chunk per ring, for
/// the same collective kind and root. nullopt where the ring baseline does not apply (rooted
/// kinds) or `collective` is custom.
std::optional<Algorithm> reference_ring(const Collective& collective, const Topology& topology);

/// Evaluates `algorithm` compiled with each of `instances`, with and without fusion, and for
/// timed algorithms in step order and in start-time order (CompileOptions::schedule_order;
/// compile options otherwise as given), and keeps, per size, the fastest correct variant: the
/// result's program is the variant fastest at the last size, `results[i].instances` / `.fused`
/// / `.schedule_order` say which variant won at size i. Variants over the runtime's limits are left out; with none left the
/// last failure is rethrown.
Evaluated evaluate_variants(const Algorithm& algorithm, const Topology& topology,
                            compiler::CompileOptions options, const std::vector<int>& instances,
                            const std::vector<int64_t>& sizes);

/// JSON for one evaluated program: verification status, per-size results.
nlohmann::json to_json(const Evaluated& evaluated);

/// The fastest of several evaluated programs at one size (they share their size list).
struct BestAtSize {
  int64_t bytes = 0;
  int best = -1;                // index into the evaluated programs
  int instances = 1;            // compiler instances of the winning variant
  bool fused = true;            // whether the winning variant uses fusion
  bool schedule_order = false;  // whether it runs in the schedule's start-time order
  double time_us = 0;
  double busbw_gbps = 0;
  double lower_bound_us = 0;
  double ratio_to_bound = 0;    // best time / lower bound
  double speedup_vs_ring = 0;   // ring time / best time; 0 without a program named "ring"
};

/// Per size, which program is fastest, and by how much against "ring" and the bound.
std::vector<BestAtSize> best_per_size(const std::vector<std::string>& names,
                                      const std::vector<const Evaluated*>& evaluated);

/// JSON array of best_per_size(), naming the winner.
nlohmann::json best_json(const std::vector<std::string>& names,
                         const std::vector<const Evaluated*>& evaluated);

/// Human-readable table: per size the simulated time of every program, the lower bound, the
/// fastest program with its busbw, its ratio to the bound and its speedup over "ring".
std::string results_table(const std::vector<std::string>& names,
                          const std::vector<const Evaluated*>& evaluated);

}  // namespace ccsynth::cli
