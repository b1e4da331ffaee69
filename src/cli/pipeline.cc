#include "cli/pipeline.h"

#include <fmt/format.h>

#include "ccsynth/compiler/instances.h"
#include "ccsynth/core/units.h"
#include "ccsynth/sim/bounds.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"

namespace ccsynth::cli {

Evaluated evaluate(const Algorithm& algorithm, const Topology& topology,
                   const compiler::CompileOptions& options, const std::vector<int64_t>& sizes) {
  Evaluated out;
  out.algorithm = algorithm;
  out.algorithm_report = verify::verify_algorithm(algorithm, &topology);
  if (!out.algorithm_report.ok()) return out;
  out.program = compiler::compile(algorithm, options);
  // With instances > 1 every chunk is split into subchunks: verify against that collective.
  const Collective replicated = compiler::replicate_collective(algorithm.collective,
                                                               options.instances);
  verify::VerifyProgramOptions verify_options;
  verify_options.collective = &replicated;
  out.program_report = verify::verify_program(out.program, verify_options);
  if (!out.program_report.ok()) return out;
  for (int64_t bytes : sizes) {
    const sim::SimResult sim = sim::simulate(out.program, topology, bytes);
    const sim::LowerBound bound = sim::lower_bound(topology, algorithm.collective, bytes);
    out.results.push_back(
        {bytes, sim.time_us, sim.algbw_gbps, sim.busbw_gbps, bound.lower_bound_us});
  }
  return out;
}

namespace {
nlohmann::json report_json(const verify::VerifyReport& report) {
  nlohmann::json violations = nlohmann::json::array();
  for (const auto& v : report.violations) {
    violations.push_back({{"kind", verify::to_string(v.kind)},
                          {"rank", v.rank},
                          {"threadblock", v.threadblock},
                          {"step", v.step},
                          {"message", v.message}});
  }
  return violations;
}
}  // namespace

nlohmann::json to_json(const Evaluated& e) {
  nlohmann::json results = nlohmann::json::array();
  for (const SizedResult& r : e.results) {
    results.push_back({{"bytes", r.bytes},
                       {"time_us", r.time_us},
                       {"algbw_gbps", r.algbw_gbps},
                       {"busbw_gbps", r.busbw_gbps},
                       {"lower_bound_us", r.lower_bound_us},
                       {"ratio_to_bound", r.ratio_to_bound()}});
  }
  return {{"name", e.algorithm.name},
          {"ok", e.ok()},
          {"steps", e.algorithm.num_steps()},
          {"ops", e.algorithm.ops.size()},
          {"algorithm_violations", report_json(e.algorithm_report)},
          {"program_violations", report_json(e.program_report)},
          {"results", results}};
}

std::string results_table(const std::vector<std::string>& names,
                          const std::vector<const Evaluated*>& evaluated) {
  std::string out = fmt::format("{:>8}", "size");
  for (const auto& name : names) out += fmt::format(" {:>14} {:>9}", name + " us", "busbw");
  out += fmt::format(" {:>11} {:>9}", "bound us", "vs bound");
  if (names.size() > 1) out += fmt::format(" {:>9}", "speedup");
  out += "\n";
  const size_t rows = evaluated.empty() ? 0 : evaluated[0]->results.size();
  for (size_t i = 0; i < rows; ++i) {
    const SizedResult& first = evaluated[0]->results[i];
    out += fmt::format("{:>8}", format_bytes(first.bytes));
    for (const Evaluated* e : evaluated) {
      if (i < e->results.size()) {
        out += fmt::format(" {:>14.2f} {:>9.2f}", e->results[i].time_us, e->results[i].busbw_gbps);
      } else {
        out += fmt::format(" {:>14} {:>9}", "-", "-");
      }
    }
    out += fmt::format(" {:>11.2f} {:>8.2f}x", first.lower_bound_us, first.ratio_to_bound());
    if (evaluated.size() > 1 && i < evaluated[1]->results.size()) {
      out += fmt::format(" {:>8.2f}x", evaluated[1]->results[i].time_us / first.time_us);
    }
    out += "\n";
  }
  return out;
}

}  // namespace ccsynth::cli
