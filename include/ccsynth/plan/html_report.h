#pragma once
// The report as one self-contained HTML page (docs/formats.md "HTML report"): inline SVG and
// CSS, no scripts, nothing fetched. It shows, for one topology and collective:
//   - time and busbw against size for every candidate, the lower bound and the nccl reference
//     (log-log and log-linear charts, one curve per candidate, a table with the exact numbers);
//   - the topology (ranks grouped by node, switches drawn) with each link's and switch port's
//     utilization as colour and width, at one size (the detail size);
//   - a timeline of link busy intervals and threadblock steps of the fastest candidate at the
//     detail size, simulated with sim::SimOptions::record_timeline;
//   - the verification verdicts and the synthesis statistics of every candidate.
// Every mark has an SVG <title> tooltip; colours are the Okabe-Ito palette (candidates) and a
// viridis ramp (utilization), both readable with colour-vision deficiencies.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ccsynth/core/collective.h"
#include "ccsynth/core/topology.h"
#include "ccsynth/plan/evaluate.h"

namespace ccsynth::plan {

/// One program the report compares: how it was made and what became of it.
struct ReportCandidate {
  std::string name;                      // "nccl" is drawn as the reference
  const Evaluated* evaluated = nullptr;  // nullptr when no algorithm was found
  std::string skipped;                   // why there is no algorithm (with evaluated == nullptr)
  std::string status;                    // synthesis status ("optimal", ...), or empty
  double synthesis_seconds = 0;
  nlohmann::json stats;  // the method's statistics (SynthResult::stats), or null
};

/// What the page shows beyond the candidates.
struct ReportOptions {
  std::string title;               // default: "<collective> on <topology>"
  int64_t detail_bytes = 0;        // size of the topology view and the timeline; 0 = largest size
  int64_t timeline_limit = 20000;  // intervals drawn at most (steps and links each)
};

/// The page. Candidates that verified must share their sizes (Evaluated::results). Simulates
/// the fastest verified candidate at the detail size once more, recording its timeline.
/// UserError when no candidate verified or the detail size was not simulated.
std::string html_report(const Topology& topology, const Collective& collective,
                        const std::vector<ReportCandidate>& candidates,
                        const ReportOptions& options = {});

}  // namespace ccsynth::plan
