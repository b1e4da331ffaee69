#pragma once
// Candidates for the HTML report and trace tests: the ring baseline and the nccl reference
// planned on a topology, as `ccsynth report -m ring` would.

#include <string>
#include <vector>

#include "ccsynth/plan/html_report.h"
#include "ccsynth/plan/planner.h"
#include "ccsynth/topologies/library.h"

namespace ccsynth::plan::testing {

/// plan() of the ring baseline with the nccl reference at `sizes`.
inline PlanResult plan_ring(const Topology& topology, CollectiveKind kind,
                            const std::vector<int64_t>& sizes) {
  PlanRequest request;
  request.topology = topology;
  request.method = "ring";
  request.kind = kind;
  request.sizes = sizes;
  return plan(request);
}

/// The report's candidates of `result`: nccl first, then the ring.
inline std::vector<ReportCandidate> candidates_of(const PlanResult& result) {
  std::vector<ReportCandidate> out;
  if (result.nccl) out.push_back({"nccl", &*result.nccl, "", "", 0.0, nullptr});
  out.push_back({"ring", result.program ? &*result.program : nullptr, "",
                 to_string(result.synthesis.status), result.synthesis_seconds,
                 result.synthesis.stats});
  return out;
}

/// Occurrences of `needle` in `text`.
inline size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

}  // namespace ccsynth::plan::testing
