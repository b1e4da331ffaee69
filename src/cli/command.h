#pragma once
// Plumbing shared by the `ccsynth` verbs. Each verb lives in its own file and exposes one
// `add_<verb>_command(CLI::App&, CommandResult&)` function that registers the subcommand; its
// callback stores the exit code in the CommandResult. Exceptions carry errors out: UserError
// becomes exit code 2, InternalError 3 (main.cc).

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "ccsynth/core/error.h"
#include "ccsynth/core/program.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/plan/report.h"

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

/// Writes `text` to `path` ("-": standard output), flushed and checked; throws UserError naming
/// the path when it cannot be written completely.
void write_text_file(const std::string& path, const std::string& text);
/// The same for text that `write` streams (no copy of it in memory when `path` is a file);
/// returns the bytes written.
int64_t write_text_file(const std::string& path, const std::function<void(std::ostream&)>& write);
/// Streams `program` as MSCCL XML in `dialect` to `path` (as write_text_file: no copy of the
/// text in memory when `path` is a file, which at thousands of ranks is gigabytes); returns
/// the bytes written.
int64_t write_xml_file(const std::string& path, const Program& program,
                       formats::XmlDialect dialect);
/// Flushes standard output; throws UserError when anything written to it was lost.
void flush_stdout();
/// Throws UserError naming `output_flag` when `output` is the same file as one of `others`
/// ({flag or role, path}; empty paths are skipped): writing it would destroy an input or
/// another output. "-" (standard output) only equals "-".
void refuse_overwrite(const std::string& output_flag, const std::string& output,
                      const std::vector<std::pair<std::string, std::string>>& others);

/// While alive and `active`, what a verb prints on std::cout goes to stderr: with `-o -` the
/// written file owns standard output and the report moves out of its way.
class ReportOnStderr {
 public:
  explicit ReportOnStderr(bool active);
  ~ReportOnStderr();
  ReportOnStderr(const ReportOnStderr&) = delete;
  ReportOnStderr& operator=(const ReportOnStderr&) = delete;

 private:
  std::streambuf* saved_ = nullptr;
};

/// A library error about a program read from `file` in the user's terms: errors naming the
/// program (`program_name`) name the file instead, and library field names found in `flags`
/// become the flag that sets them ({"bytes", "--size"}).
UserError in_user_terms(const UserError& error, const std::string& program_name,
                        const std::string& file,
                        const std::vector<std::pair<std::string, std::string>>& flags = {});

/// Reads a whole file, or throws UserError naming the path.
std::string read_text_file(const std::string& path);

/// Adds --csv to a verb that prints a table: `csv` is set, and --csv and --json (when the verb
/// has it) exclude each other. `rows` says what one CSV line is.
void add_csv_flag(CLI::App* command, bool& csv, const std::string& rows);
/// Writes `table` to stdout as CSV (plan::to_csv).
void print_csv(const plan::Table& table);

/// The protocol named by --proto (Simple, LL, LL128), or UserError naming the flag.
Protocol parse_protocol_flag(const std::string& text);

/// True when `name` is a built-in collective kind (not a collective JSON file).
bool is_collective_kind(const std::string& name);

/// The built-in collective kind `--collective` names for a verb (`verb`, e.g. "pareto") that
/// searches built-in kinds only: a built-in name, or a collective JSON file whose kind is a
/// built-in one (its root is stored in `root`). A custom file is a UserError naming the file
/// and its "kind".
CollectiveKind builtin_collective_kind(const std::string& name_or_path, int num_ranks, int& root,
                                       const std::string& verb);

/// Throws the UserError of builtin_collective_kind when `collective` (read from `file`) is custom.
void require_builtin_kind(const Collective& collective, const std::string& file,
                          const std::string& verb);

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
void add_report_command(CLI::App& app, CommandResult& result);
void add_tune_command(CLI::App& app, CommandResult& result);

}  // namespace ccsynth::cli
