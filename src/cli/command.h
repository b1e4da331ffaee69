#pragma once
// Plumbing shared by the `ccsynth` verbs. Each verb lives in its own file and exposes one
// `add_<verb>_command(CLI::App&, CommandResult&)` function that registers the subcommand; its
// callback stores the exit code in the CommandResult. Exceptions carry errors out: UserError
// becomes exit code 2, InternalError 3 (main.cc).

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>

#include "ccsynth/core/program.h"

namespace ccsynth::cli {

/// Exit codes of every verb (docs/formats.md sec. 7).
inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;

/// Where a verb's callback leaves its exit code.
struct CommandResult {
  int exit_code = kExitOk;
};

/// Writes `text` to `path`, or throws UserError naming the path when it cannot be written.
void write_text_file(const std::string& path, const std::string& text);
/// Reads a whole file, or throws UserError naming the path.
std::string read_text_file(const std::string& path);

/// The protocol named by --proto (Simple, LL, LL128), or UserError naming the flag.
Protocol parse_protocol_flag(const std::string& text);

/// True when `name` is a built-in collective kind (not a collective JSON file).
bool is_collective_kind(const std::string& name);

/// CLI11 check: a number > 0 ("must be > 0, got 0"; CLI::PositiveNumber prints the whole range
/// of double instead).
extern const CLI::Validator kPositive;
/// CLI11 check: a number >= 0.
extern const CLI::Validator kNonNegative;

// Registration functions, one per verb file (keep in the order of main.cc).
void add_topo_command(CLI::App& app, CommandResult& result);
void add_verify_command(CLI::App& app, CommandResult& result);
void add_simulate_command(CLI::App& app, CommandResult& result);
void add_bounds_command(CLI::App& app, CommandResult& result);
void add_compile_command(CLI::App& app, CommandResult& result);
void add_baseline_command(CLI::App& app, CommandResult& result);
void add_pareto_command(CLI::App& app, CommandResult& result);
void add_synth_command(CLI::App& app, CommandResult& result);
void add_demo_command(CLI::App& app, CommandResult& result);
void add_run_command(CLI::App& app, CommandResult& result);
void add_tune_command(CLI::App& app, CommandResult& result);

}  // namespace ccsynth::cli
