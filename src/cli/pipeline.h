#pragma once
// The path every algorithm takes on its way to the user (DESIGN.md sec. 1): verify the
// Algorithm, compile it to a Program, verify the Program, simulate it at the requested sizes
// against the lower bound. Shared by `synth`, `demo` and `baseline`.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/program.h"
#include "ccsynth/core/topology.h"
#include "ccsynth/verify/report.h"

namespace ccsynth::cli {

/// Simulated time of one program at one size, with the lower bound.
struct SizedResult {
  int64_t bytes = 0;
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  double lower_bound_us = 0;
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

/// JSON for one evaluated program: verification status, per-size results.
nlohmann::json to_json(const Evaluated& evaluated);

/// Human-readable table of the per-size results of several programs side by side, with the
/// ratio of the first to every other (e.g. synthesized vs ring baseline).
std::string results_table(const std::vector<std::string>& names,
                          const std::vector<const Evaluated*>& evaluated);

}  // namespace ccsynth::cli
