#pragma once
// The flags of synthesis methods, made from their declared parameters (synth/registry.h): one
// CLI flag per parameter name, shared by every method that declares it. After parsing, a flag
// the chosen method does not declare is an error (`synth --method tacos --steps 5`), and the
// given ones become the method's SynthOptions::params.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "ccsynth/core/error.h"
#include "ccsynth/synth/registry.h"

namespace ccsynth::cli {

/// Adds a flag for every parameter of `methods` (once per name) to `command`; the help text
/// names the methods that take it.
void add_method_flags(CLI::App& command, const std::vector<const synth::Synthesizer*>& methods);

/// The parameters given on the command line for `method`, typed as it declares them. Throws
/// UserError naming the flag when one belongs to other methods only, or its value is not a
/// number where one is expected.
nlohmann::json given_params(const CLI::App& command, const synth::Synthesizer& method,
                            const std::vector<const synth::Synthesizer*>& methods);

/// Runs `run`; a UserError about one of `method`'s parameters (field "sketch") is rethrown
/// naming the flag ("--sketch"), so messages speak the user's language.
template <typename F>
auto naming_flags(const synth::Synthesizer& method, F&& run) -> decltype(run()) {
  try {
    return run();
  } catch (const UserError& e) {
    for (const synth::SynthParam& p : method.params) {
      if (e.field() == p.name) throw UserError(e.file(), "--" + p.name, e.reason());
    }
    throw;
  }
}

/// True when `flag` (e.g. "--size") was given on the command line of `command`.
bool given(const CLI::App& command, const std::string& flag);

/// Every registered method; the baselines only.
std::vector<const synth::Synthesizer*> all_methods();
std::vector<const synth::Synthesizer*> baseline_methods();

}  // namespace ccsynth::cli
