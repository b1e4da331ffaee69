// `ccsynth synth --method taccl --sketch FILE ...`: TACCL's sketch-guided synthesizer
// (synth/taccl.h). Adds --sketch and --no-contiguity; --size and --chunks override the
// sketch's input_size and input_chunkup only when given on the command line.

#include <iomanip>
#include <memory>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/synth/sketch.h"
#include "ccsynth/synth/taccl.h"
#include "cli/synth_command.h"

namespace ccsynth::cli {

namespace {

struct TacclFlags {
  std::string sketch;
  bool no_contiguity = false;
  bool greedy_only = false;
  double stall_s = synth::TacclOptions{}.stall_s;
  CLI::App* app = nullptr;  // to tell flags given on the command line from defaults
};

bool given(const CLI::App* app, const std::string& name) {
  if (app == nullptr) return false;
  try {
    return app->get_option(name)->count() > 0;
  } catch (const CLI::Error&) {
    return false;
  }
}

nlohmann::json stage_json(const synth::StageReport& s) {
  return {{"stage", s.name},         {"seconds", s.seconds},    {"status", s.status},
          {"objective_us", s.objective_us}, {"lower_bound_us", s.lower_bound_us},
          {"gap", s.gap},             {"variables", s.variables},
          {"rows", s.rows},           {"integers", s.integers}};
}

SynthOutcome run_taccl(const TacclFlags& flags, const SynthCommonOptions& o,
                       const Topology& topology, std::ostream& progress) {
  if (flags.sketch.empty()) {
    throw UserError("", "--sketch", "--method taccl needs a communication sketch (--sketch FILE)");
  }
  const synth::Sketch sketch = synth::read_sketch_file(flags.sketch);
  synth::TacclOptions options;
  options.time_limit_s = o.time_limit_s;
  options.stall_s = flags.stall_s;
  options.contiguity = !flags.no_contiguity;
  options.exact_schedule = !flags.greedy_only;
  if (given(flags.app, "--size") || !sketch.input_size) options.bytes = parse_bytes(o.size, "--size");
  if (given(flags.app, "--chunks")) options.chunkup = o.chunks;
  const CollectiveKind kind = parse_collective_kind(o.collective);
  progress << "taccl: sketch " << flags.sketch << ", stage time limit " << o.time_limit_s
           << " s\n";
  const synth::TacclResult r = synth::synthesize_taccl(topology, sketch, kind, options);
  nlohmann::json stages = nlohmann::json::array();
  for (const synth::StageReport& s : r.stages) {
    progress << "taccl: " << std::left << std::setw(15) << s.name << std::right << std::fixed
             << std::setprecision(3) << s.seconds << " s  " << s.status << "  gap "
             << std::setprecision(4) << s.gap << "  estimate " << std::setprecision(2)
             << s.objective_us << " us";
    if (s.lower_bound_us > 0) progress << " (bound " << s.lower_bound_us << " us)";
    progress << "  (" << s.variables << " vars, " << s.integers
             << " integer, " << s.rows << " rows)\n";
    stages.push_back(stage_json(s));
  }
  SynthOutcome outcome;
  outcome.status = r.status;
  outcome.algorithm = r.algorithm;
  outcome.details = {{"sketch", flags.sketch},
                     {"chunkup", r.chunkup},
                     {"chunk_bytes", r.chunk_bytes},
                     {"schedule_estimate_us", r.makespan_us},
                     {"stages", stages}};
  return outcome;
}

}  // namespace

SynthMethod taccl_method() {
  auto flags = std::make_shared<TacclFlags>();
  SynthMethod m;
  m.name = "taccl";
  m.description =
      "TACCL: sketch-guided routing MILP, ordering heuristics and contiguity MILP (CBC); "
      "needs --sketch";
  m.add_options = [flags](CLI::App& synth) {
    flags->app = &synth;
    synth.add_option("--sketch", flags->sketch,
                     "taccl: communication sketch JSON (TACCL schema, docs/sketches.md)");
    synth.add_option("--stall", flags->stall_s,
                     "taccl: a MILP stage stops after this many seconds without a better "
                     "schedule (status feasible, gap reported); 0 = run to the gap or --time-limit")
        ->capture_default_str()
        ->check(kNonNegative);
    synth.add_flag("--no-contiguity", flags->no_contiguity,
                   "taccl: never merge inter-node sends in stage 3");
    synth.add_flag("--greedy-schedule", flags->greedy_only,
                   "taccl: skip the stage 3 MILP, keep the stage 2 greedy schedule");
  };
  m.run = [flags](const SynthCommonOptions& o, const Topology& topology, std::ostream& progress) {
    return run_taccl(*flags, o, topology, progress);
  };
  return m;
}

}  // namespace ccsynth::cli
