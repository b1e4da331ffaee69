// The `ccsynth` command: `ccsynth <verb> [flags]`. Exit codes: 0 ok, 1 check failed,
// 2 bad input, 3 internal error.

#include <iostream>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/error.h"
#include "ccsynth/version.h"
#include "cli/command.h"

namespace {

// CLI11 answers an unknown verb with "A subcommand is required"; name the verb instead.
void check_verb(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return;
  const std::string verb = argv[1];
  std::string known;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == verb) return;
    known += (known.empty() ? "" : ", ") + sub->get_name();
  }
  throw ccsynth::UserError("", "", "unknown verb '" + verb + "' (known: " + known + ")");
}

int run(int argc, char** argv) {
  using namespace ccsynth::cli;
  CLI::App app{
      "ccsynth: synthesize, check, simulate and run topology-aware collective algorithms.\n"
      "Run `ccsynth <verb> --help` for the flags of a verb."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ccsynth " CCSYNTH_VERSION);
  CommandResult result;
  // One line per verb, in the order `--help` lists them.
  add_demo_command(app, result);
  add_topo_command(app, result);
  add_synth_command(app, result);
  add_verify_command(app, result);
  add_simulate_command(app, result);
  add_bounds_command(app, result);
  add_compile_command(app, result);
  add_baseline_command(app, result);
  add_pareto_command(app, result);
  add_run_command(app, result);
  add_report_command(app, result);
  add_tune_command(app, result);
  check_verb(app, argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitBadInput;
  }
  flush_stdout();  // a report lost on a full disk is an error, not exit 0
  return result.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const ccsynth::UserError& e) {
    std::cerr << "ccsynth: error: " << e.what() << "\n";
    if (!ccsynth::compiler::runtime_limits_violation(e).empty()) {
      std::cerr << "ccsynth: hint: over the runtime's limits (the executor dialect: 64 steps a "
                   "threadblock, 32 channels); what may fit: --xml-dialect classic (256 steps "
                   "a threadblock), fewer --instances, fewer --chunks (docs/compiler.md, "
                   "\"Known limits\")\n";
    }
    return ccsynth::cli::kExitBadInput;
  } catch (const ccsynth::InternalError& e) {
    std::cerr << "ccsynth: internal error (please report): " << e.what() << "\n";
    return ccsynth::cli::kExitInternal;
  } catch (const std::exception& e) {
    std::cerr << "ccsynth: error: " << e.what() << "\n";
    return ccsynth::cli::kExitInternal;
  }
}
