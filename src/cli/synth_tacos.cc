// `ccsynth synth --method tacos`: TACOS greedy link-chunk matching on a time-expanded network
// (synth/tacos.h, docs/tacos.md). Method flags: --chunks-per-rank (same meaning as the common
// --chunks; wins when both are given), --seed, --trials, --switch-degree, --pick-window,
// --no-replacement.

#include <chrono>
#include <memory>
#include <string>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/formats/collective_json.h"
#include "ccsynth/synth/tacos.h"
#include "cli/synth_command.h"

namespace ccsynth::cli {

namespace {

// The synth subcommand, so that run() can read flags another method may have registered first
// (two methods asking for --seed share one option instead of clashing).
struct TacosFlags {
  CLI::App* synth = nullptr;
};

// Adds `name` unless another method already did.
CLI::Option* add_shared_option(CLI::App& app, const std::string& name, const std::string& help) {
  if (CLI::Option* existing = app.get_option_no_throw(name)) return existing;
  return app.add_option(name, help);
}

template <typename T>
T flag_value(const TacosFlags& flags, const std::string& name, T fallback) {
  const CLI::Option* option = flags.synth->get_option_no_throw(name);
  return option && option->count() > 0 ? option->as<T>() : fallback;
}

nlohmann::json details_of(const synth::TacosResult& r, const synth::TacosOptions& o,
                          double chunk_bytes, double seconds) {
  return {{"ten_time_us", r.time_us},
          {"phase_time_us", r.phase_time_us},
          {"phase_seed", r.phase_seed},
          {"transfers", r.transfers},
          {"replacements", r.replacements},
          {"substitutions", r.substitutions},
          {"ten_links", r.num_ten_links},
          {"chunk_bytes", chunk_bytes},
          {"seed", o.seed},
          {"trials", o.trials},
          {"switch_degree", o.switch_degree},
          {"pick_window", o.pick_window},
          {"chunk_replacement", o.chunk_replacement},
          {"tacos_seconds", seconds}};
}

}  // namespace

SynthMethod tacos_method() {
  auto flags = std::make_shared<TacosFlags>();
  SynthMethod m;
  m.name = "tacos";
  m.description =
      "TACOS greedy link-chunk matching on a time-expanded network (allgather, broadcast, "
      "reducescatter, reduce, allreduce); fast at thousands of ranks";
  m.add_options = [flags](CLI::App& synth) {
    flags->synth = &synth;
    add_shared_option(synth, "--chunks-per-rank",
                      "tacos: chunks per rank (alias of --chunks; wins when both are given)")
        ->check(kPositive);
    add_shared_option(synth, "--seed", "tacos: seed of the random tie-breaks (default 0)");
    add_shared_option(synth, "--trials",
                      "tacos: try seeds seed..seed+N-1, keep the fastest (default: 8 up to 256 ranks, "
                      "then 2048 / ranks)")
        ->check(kPositive);
    add_shared_option(synth, "--switch-degree",
                      "tacos: switch unwinding degree d; 0 = auto: all peers of a standalone switch, one per "
                      "other node for an inter-node switch (default 0)")
        ->check(kNonNegative);
    add_shared_option(synth, "--pick-window",
                      "tacos: a link sends one of the W oldest needed chunks (default 3)")
        ->check(kPositive);
    if (!synth.get_option_no_throw("--no-replacement")) {
      synth.add_flag("--no-replacement")
          ->description("tacos: disable chunk replacement (sec. IV.F)");
    }
  };
  m.run = [flags](const SynthCommonOptions& o, const Topology& topology,
                  std::ostream& progress) {
    synth::TacosOptions options;
    options.bytes = parse_bytes(o.size, "--size");
    options.seed = flag_value<uint64_t>(*flags, "--seed", options.seed);
    options.trials = flag_value<int>(*flags, "--trials", synth::default_trials(topology.num_ranks));
    options.switch_degree = flag_value<int>(*flags, "--switch-degree", options.switch_degree);
    options.pick_window = flag_value<int>(*flags, "--pick-window", options.pick_window);
    const CLI::Option* no_replacement = flags->synth->get_option_no_throw("--no-replacement");
    options.chunk_replacement = !(no_replacement && no_replacement->count() > 0);
    const int chunks = flag_value<int>(*flags, "--chunks-per-rank", o.chunks);
    Collective collective =
        formats::resolve_collective(o.collective, topology.num_ranks, chunks, o.root);
    const double chunk_bytes = static_cast<double>(options.bytes) / collective.input_chunks;
    progress << "tacos: " << collective.name << " on " << topology.name << " ("
             << topology.num_ranks << " ranks, " << collective.num_chunks() << " chunks of "
             << format_bytes(static_cast<int64_t>(chunk_bytes)) << "), " << options.trials
             << " trial(s) from seed " << options.seed << "\n";
    const auto started = std::chrono::steady_clock::now();
    synth::TacosResult r = synth::synthesize_tacos(topology, std::move(collective), options);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    progress << "tacos: TEN time " << r.time_us << " us, " << r.transfers << " transfers, "
             << r.replacements << " replacements, " << seconds << " s\n";
    SynthOutcome outcome;
    outcome.status = SynthStatus::kFeasible;  // a heuristic: no optimality claim
    outcome.details = details_of(r, options, chunk_bytes, seconds);
    outcome.algorithm = std::move(r.algorithm);
    return outcome;
  };
  return m;
}

}  // namespace ccsynth::cli
