#pragma once
// Outcome of a synthesizer run (docs/architecture.md sec. 4): expected outcomes are values, not errors.

#include <string>

namespace ccsynth {

/// Optimal: proven optimal for the model; Feasible: a solution without a proof of optimality;
/// Infeasible: proven that none exists (e.g. SCCL UNSAT); TimedOut: the limit hit first (an
/// algorithm may still be returned with it: the best found).
enum class SynthStatus { kOptimal, kFeasible, kInfeasible, kTimedOut };

/// "optimal", "feasible", "infeasible", "timed-out".
inline std::string to_string(SynthStatus status) {
  switch (status) {
    case SynthStatus::kOptimal: return "optimal";
    case SynthStatus::kFeasible: return "feasible";
    case SynthStatus::kInfeasible: return "infeasible";
    case SynthStatus::kTimedOut: return "timed-out";
  }
  return "feasible";
}

}  // namespace ccsynth
