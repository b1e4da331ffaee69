#pragma once
// `ccsynth synth --method M ...`: one verb for every synthesizer. Common flags live in
// SynthCommonOptions; each method adds its own flags and a runner through a SynthMethod
// (see taccl_method(), sccl_method(), tacos_method()). The verb then verifies the algorithm,
// compiles it, verifies the program, simulates it against the ring baseline and the lower
// bound, and writes the XML.

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/synth_status.h"
#include "ccsynth/core/topology.h"
#include "cli/command.h"

namespace ccsynth::cli {

/// Flags shared by all methods.
struct SynthCommonOptions {
  std::string method;
  std::string topology;            // built-in name or topology JSON file
  std::string collective = "allgather";
  std::string size = "1M";         // message size for the cost model (per-rank input, bytes)
  int chunks = 1;                  // chunks per rank (SCCL's C; input chunkup elsewhere)
  int root = 0;                    // rooted collectives
  double time_limit_s = 60;        // per solver stage
  int instances = 1;               // compiler instances
  std::string protocol = "Simple";
  std::string xml_dialect = "executor";
  std::string output;              // -o OUT.xml; empty = do not write
  std::string algorithm_output;    // --save-algorithm ALGO.json; empty = do not write
  bool json = false;
};

/// What a method returns: its status, the algorithm if one was found, and details to print
/// (e.g. per-stage times, gap) as JSON; `details` is copied into the --json output.
struct SynthOutcome {
  SynthStatus status = SynthStatus::kFeasible;
  std::optional<Algorithm> algorithm;
  nlohmann::json details = nlohmann::json::object();
};

/// A synthesis method plugged into the verb.
struct SynthMethod {
  std::string name;         // value of --method
  std::string description;  // one line for --help
  /// Adds the method's own flags to the `synth` subcommand (must not clash with common ones).
  std::function<void(CLI::App& synth)> add_options;
  /// Runs the method; progress lines go to `progress` (stderr).
  std::function<SynthOutcome(const SynthCommonOptions& options, const Topology& topology,
                             std::ostream& progress)>
      run;
};

// One function per method, each in its own file src/cli/synth_<method>.cc.
SynthMethod sccl_method();
SynthMethod tacos_method();
SynthMethod taccl_method();

}  // namespace ccsynth::cli
