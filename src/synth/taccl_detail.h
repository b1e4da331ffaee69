#pragma once
// Internals shared by the TACCL stages (taccl_routing.cc, taccl_schedule.cc).

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ccsynth/solvers/milp.h"
#include "ccsynth/synth/taccl.h"

namespace ccsynth::synth::detail {

/// The chunk a rank permutation g maps chunk k to (allgather and alltoall numbering of
/// core/collective.h); -1 when the collective has no such mapping.
int chunk_image(const Collective& c, const std::vector<int>& g, int k);

/// The solver settings of a TACCL MILP stage: time limit, gap, stall and log level.
inline solvers::MilpOptions milp_options(const TacclOptions& options) {
  solvers::MilpOptions mo;
  mo.time_limit_s = options.time_limit_s;
  mo.relative_gap = options.relative_gap;
  mo.stall_s = options.stall_s;
  mo.log_level = options.solver_log_level;
  return mo;
}

/// Fills `report` (when not null) with what the MILP stage `name` did.
inline void report_milp_stage(StageReport* report, const std::string& name,
                              const solvers::MilpResult& result, const solvers::MilpModel& model) {
  if (!report) return;
  report->name = name;
  report->seconds = result.seconds;
  report->status = solvers::to_string(result.status);
  report->gap = result.has_solution ? result.gap : 0.0;
  report->lower_bound_us =
      std::isfinite(result.best_bound) ? std::max(result.best_bound, 0.0) : 0.0;
  report->variables = model.num_vars();
  report->rows = model.num_rows();
  report->integers = model.num_integer();
}

}  // namespace ccsynth::synth::detail
