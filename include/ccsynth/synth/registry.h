#pragma once
// One interface for every way of making an algorithm (docs/architecture.md "Synthesizers"):
// TACCL, SCCL, TACOS and each baseline are a Synthesizer registered by name, called as
// `(Topology, Collective, SynthOptions) -> SynthResult`. Method-specific knobs travel as named
// parameters (SynthOptions::params) that each synthesizer declares, so front ends (the CLI, the
// planner, Python) can list, validate and forward them without knowing the methods.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/collective.h"
#include "ccsynth/core/synth_status.h"
#include "ccsynth/core/topology.h"

namespace ccsynth::synth {

/// The value type of a method parameter.
enum class ParamKind { kInt, kDouble, kBool, kString };

/// One method-specific parameter. `name` is the key in SynthOptions::params and, with "--" in
/// front, the CLI flag; a kBool parameter is a flag that is off by default.
struct SynthParam {
  std::string name;
  ParamKind kind = ParamKind::kInt;
  std::string help;
  bool non_negative = false;  // numbers: reject values < 0
  bool positive = false;      // numbers: reject values <= 0
};

/// What every synthesizer receives besides the topology and the collective.
struct SynthOptions {
  /// Per-rank input bytes the cost model optimizes for; nullopt = the method's default (TACCL:
  /// the sketch's input_size, else 1 MiB).
  std::optional<int64_t> bytes;
  /// Wall-clock limit per solver stage (methods with uses_time_limit); the best found is
  /// returned when it is hit.
  double time_limit_s = 60.0;
  /// Method parameters by SynthParam::name; a key the method does not declare is an error.
  nlohmann::json params = nlohmann::json::object();
  /// Independent candidates a search tries (TACOS's trials) run up to this many at once; the
  /// result does not depend on it.
  int threads = 1;
  /// Receives one line per progress event (solver stages, trials); may be empty.
  std::function<void(const std::string& line)> progress;
};

/// What every synthesizer returns: an expected outcome is a value (a status), not an error.
struct SynthResult {
  SynthStatus status = SynthStatus::kFeasible;
  std::optional<Algorithm> algorithm;               // absent when none was found
  nlohmann::json stats = nlohmann::json::object();  // per-method details (times, gaps, ...)
};

/// A registered synthesis method.
struct Synthesizer {
  std::string name;         // "taccl", "sccl", "tacos", "ring", "rd", ...
  std::string description;  // one line
  bool baseline = false;    // a hand-written pattern rather than a search
  bool uses_time_limit = false;
  std::vector<SynthParam> params;
  /// The collective a user's chunk count means for this method (SCCL counts alltoall and
  /// allreduce chunks per rank-sized unit, see synth/sccl.h); make_collective otherwise.
  std::function<Collective(CollectiveKind kind, int num_ranks, int chunks, int root)>
      make_collective;
  /// The chunk count used when the caller gives none (0): e.g. the ring baseline splits the
  /// data over every ring it finds, like NCCL.
  std::function<int(const Topology& topology, CollectiveKind kind)> default_chunks;
  /// A smaller chunk count to try when the program of `made` (a run with `chunks`: the
  /// default, or one tried after it) cannot fit the runtime limits, or 0 for none; unset for
  /// methods whose chunk count is not a pipelining choice. plan() uses it only when the caller
  /// gave no count.
  std::function<int(const SynthResult& made, int chunks)> fewer_chunks;
  /// Runs the method. Throws UserError when it does not apply (bad parameters, a collective or
  /// topology it cannot handle).
  std::function<SynthResult(const Topology& topology, const Collective& collective,
                            const SynthOptions& options)>
      run;
};

/// Every registered synthesizer: taccl, sccl, tacos, trees, then the baselines in BaselineKind order.
const std::vector<Synthesizer>& synthesizers();

/// The synthesizer named `name`; UserError (field `field`) listing the known names otherwise.
const Synthesizer& find_synthesizer(const std::string& name, const std::string& field = "method");

/// Checks `params` against `method`'s declared parameters: unknown keys, wrong types and
/// out-of-range numbers are UserErrors naming the parameter.
void check_params(const Synthesizer& method, const nlohmann::json& params);

/// The largest `chunks` per rank collective_for accepts (docs/fuzzing.md "Limits"): the papers
/// use at most a few dozen, and every op is compiled, verified and simulated per variant.
inline constexpr int kMaxChunksPerRank = 256;

/// The collective `method` builds for `kind` with `chunks` per rank (0 = its default_chunks;
/// more than kMaxChunksPerRank is a UserError).
Collective collective_for(const Synthesizer& method, const Topology& topology, CollectiveKind kind,
                          int chunks = 0, int root = 0);

/// check_params, then method.run.
SynthResult synthesize(const Synthesizer& method, const Topology& topology,
                       const Collective& collective, const SynthOptions& options = {});

/// "int", "number", "flag", "string".
std::string to_string(ParamKind kind);

}  // namespace ccsynth::synth
