// `ccsynth synth --method sccl`: one SCCL instance (C, S, R) solved with Z3 (SCCL sec. 3.4), or
// with --steps 0 the least-steps mode. --chunks is the paper's C (docs/sccl.md: alltoall and
// allreduce count P core chunks per C unit).

#include <memory>

#include "ccsynth/core/error.h"
#include "ccsynth/synth/sccl.h"
#include "cli/synth_command.h"

namespace ccsynth::cli {

namespace {

struct SccLFlags {
  int steps = 0;
  int rounds = 0;
  int max_steps = 16;
  bool full_model = false;
};

nlohmann::json details_of(const synth::InstanceResult& r, int chunks, int steps, int rounds) {
  nlohmann::json d = {{"chunks", chunks},         {"steps", steps},
                      {"rounds", rounds},         {"encode_seconds", r.encode_s},
                      {"solve_seconds", r.solve_s}, {"variables", r.variables},
                      {"constraints", r.constraints}};
  if (r.algorithm) d["rounds_per_step"] = r.algorithm->rounds_per_step;
  return d;
}

}  // namespace

SynthMethod sccl_method() {
  auto flags = std::make_shared<SccLFlags>();
  SynthMethod m;
  m.name = "sccl";
  m.description =
      "SCCL: k-synchronous (C, S, R) algorithm with Z3 (--steps, --rounds; --steps 0 = least "
      "steps); exit 1 'unsatisfiable' when none exists";
  m.add_options = [flags](CLI::App& synth) {
    synth.add_option("--steps", flags->steps,
                     "sccl: steps S (0 = least-steps mode: smallest S with R = S)")
        ->capture_default_str()
        ->check(kNonNegative);
    synth.add_option("--rounds", flags->rounds, "sccl: rounds R (0 = same as steps)")
        ->capture_default_str()
        ->check(kNonNegative);
    synth.add_option("--max-steps", flags->max_steps, "sccl: least-steps mode gives up after this")
        ->capture_default_str()
        ->check(kPositive);
    synth.add_flag("--full-model", flags->full_model,
                   "sccl: model every link of amdz52 instead of SCCL's ring (sec. 5.2.2)");
  };
  m.run = [flags](const SynthCommonOptions& o, const Topology& topology,
                  std::ostream& progress) {
    const CollectiveKind kind = parse_collective_kind(o.collective, "--collective");
    const synth::BandwidthModel model =
        flags->full_model ? synth::bandwidth_model(topology) : synth::paper_bandwidth_model(topology);
    synth::SolveOptions solve;
    solve.time_limit_s = o.time_limit_s;
    SynthOutcome outcome;
    if (flags->steps == 0) {
      if (flags->rounds != 0) {
        throw UserError("", "--rounds", "least-steps mode (--steps 0) uses R = S");
      }
      const synth::InstanceResult r = synth::synthesize_sccl_least_steps(
          kind, model, o.chunks, 0, flags->max_steps, o.root, solve,
          [&](int s, const synth::InstanceResult& res) {
            progress << "sccl: (C=" << o.chunks << ", S=" << s << ", R=" << s
                     << "): " << to_string(res.status) << " in " << res.encode_s + res.solve_s
                     << " s\n";
          });
      const int s = r.algorithm ? static_cast<int>(r.algorithm->rounds_per_step.size()) : 0;
      outcome.status = r.status;
      outcome.algorithm = r.algorithm;
      outcome.details = details_of(r, o.chunks, s, s);
      outcome.details["mode"] = "least-steps";
      return outcome;
    }
    const int rounds = flags->rounds == 0 ? flags->steps : flags->rounds;
    progress << "sccl: (C=" << o.chunks << ", S=" << flags->steps << ", R=" << rounds << ") on "
             << model.name << "\n";
    const synth::InstanceResult r =
        synth::synthesize_sccl(kind, model, o.chunks, flags->steps, rounds, o.root, solve);
    outcome.status = r.status;
    outcome.algorithm = r.algorithm;
    outcome.details = details_of(r, o.chunks, flags->steps, rounds);
    return outcome;
  };
  return m;
}

}  // namespace ccsynth::cli
