// `ccsynth synth --method M ...`: runs any registered method (synth/registry.h: taccl, sccl,
// tacos and the baselines) through the planner (plan/planner.h), which verifies the algorithm,
// compiles it, verifies the program and simulates it against the nccl reference and the lower
// bound; writes the MSCCL XML.

#include <algorithm>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/formats/algorithm_json.h"
#include "ccsynth/formats/collective_json.h"
#include "ccsynth/formats/json_io.h"
#include "ccsynth/plan/planner.h"
#include "ccsynth/plan/reference.h"
#include "ccsynth/plan/report.h"
#include "ccsynth/topologies/library.h"
#include "cli/command.h"
#include "cli/method_flags.h"

namespace ccsynth::cli {

namespace {

// --memory above this (1 EiB) is taken as this: the budget is a count of bytes in an int64.
constexpr double kMaxMemoryGib = double(int64_t{1} << 30);

/// Flags shared by all methods.
struct SynthFlags {
  std::string method;
  std::string topology;
  std::string collective = "allgather";
  std::string size = "1M";
  int chunks = 0;
  int root = 0;
  double time_limit_s = 60;
  int instances = 1;
  int threads = 0;
  double memory_gib = 4;
  std::string proto = "Simple";
  std::string dialect = "executor";
  std::string output;
  std::string algorithm_output;
  bool json = false;
  bool csv = false;
};

// The planner request of the command line; `command` tells given flags from defaults.
plan::PlanRequest make_request(const SynthFlags& f, const CLI::App& command) {
  const synth::Synthesizer& method = synth::find_synthesizer(f.method, "--method");
  if (given(command, "--time-limit") && !method.uses_time_limit) {
    throw UserError("", "--time-limit", method.name + " runs no solver and takes no time limit");
  }
  plan::PlanRequest request;
  request.method = method.name;
  request.topology = topologies::resolve_topology(f.topology);
  const int64_t bytes = parse_bytes(f.size, "--size");
  request.sizes = {bytes};
  // Without --size each method optimizes for its own default (TACCL: the sketch's input size;
  // the others 1 MiB, the flag's default).
  if (given(command, "--size")) request.synth.bytes = bytes;
  request.synth.time_limit_s = f.time_limit_s;
  request.synth.params = given_params(command, method, all_methods());
  request.synth.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  request.chunks = f.chunks;
  request.root = f.root;
  if (!is_collective_kind(f.collective)) {
    request.collective = formats::resolve_collective(f.collective, request.topology.num_ranks,
                                                     std::max(f.chunks, 1), f.root);
    // SCCL's instances are built from a kind and C (sccl_collective).
    if (method.name == "sccl") require_builtin_kind(*request.collective, f.collective, "sccl");
  } else {
    request.kind = parse_collective_kind(f.collective, "--collective");
  }
  request.compile.protocol = parse_protocol_flag(f.proto);
  request.dialect = formats::parse_xml_dialect(f.dialect);
  request.variants.instances = {f.instances};
  request.threads = f.threads;
  request.memory_budget_bytes = std::max<int64_t>(
      1, static_cast<int64_t>(std::min(f.memory_gib, kMaxMemoryGib) * double(int64_t{1} << 30)));
  return request;
}

int print_failure(const plan::PlanResult& result, const SynthFlags& f) {
  const std::string status = to_string(result.synthesis.status);
  if (f.json) {
    const nlohmann::json doc = {{"format", "ccsynth-synthesis"},
                                {"version", 1},
                                {"method", f.method},
                                {"status", status},
                                {"ok", false},
                                {"details", result.synthesis.stats}};
    std::cout << doc.dump(2) << "\n";
  } else {
    std::ostream& out = f.csv ? std::cerr : std::cout;  // CSV: stdout holds rows only
    out << (result.synthesis.status == SynthStatus::kInfeasible ? "unsatisfiable" : status)
        << ": no algorithm found\n";
    if (!result.synthesis.stats.empty()) out << result.synthesis.stats.dump(2) << "\n";
  }
  return kExitCheckFailed;
}

// `written`: bytes of the XML file written to -o (0 when none).
void print_json(const plan::PlanResult& r, const SynthFlags& f, const Topology& topology,
                int64_t written) {
  nlohmann::json doc = {{"format", "ccsynth-synthesis"},
                        {"version", 1},
                        {"method", f.method},
                        {"topology", topology.name},
                        {"collective", r.program->algorithm.collective.name},
                        {"status", to_string(r.synthesis.status)},
                        {"synthesis_seconds", r.synthesis_seconds},
                        {"details", r.synthesis.stats},
                        {"ok", r.ok()},
                        {"program", plan::to_json(*r.program)}};
  if (r.nccl) {
    doc["nccl"] = plan::to_json(*r.nccl);
    doc["nccl_beyond_runtime_limits"] = plan::beyond_runtime_limits(*r.nccl);
  }
  if (!f.output.empty() && r.ok()) {
    doc["output"] = f.output;
    doc["output_bytes"] = written;
  }
  std::cout << doc.dump(2) << "\n";
}

// The method's program and the nccl reference, as the results table compares them.
std::pair<std::vector<std::string>, std::vector<const plan::Evaluated*>> compared(
    const plan::PlanResult& r, const SynthFlags& f) {
  std::vector<std::string> names = {f.method};
  std::vector<const plan::Evaluated*> rows = {&*r.program};
  if (r.nccl && r.nccl->ok() && f.method != "nccl") {
    names.push_back("nccl");
    rows.push_back(&*r.nccl);
  }
  return {names, rows};
}

void print_text(const plan::PlanResult& r, const SynthFlags& f, const Topology& topology,
                int64_t written) {
  const Algorithm& a = r.program->algorithm;
  std::cout << fmt::format("{} {} on {}: {} in {:.2f} s, {} steps, {} ops\n", f.method,
                           a.collective.name, topology.name, to_string(r.synthesis.status),
                           r.synthesis_seconds, a.num_steps(), a.ops.size());
  if (!r.synthesis.stats.empty()) std::cout << r.synthesis.stats.dump(2) << "\n";
  if (!r.ok()) {
    std::cout << "verification FAILED:\n"
              << r.program->algorithm_report.summary() << r.program->program_report.summary();
    return;
  }
  std::cout << "verified: algorithm and program correct ("
            << plan::variant_description(r.program->options) << ")\n";
  const auto [names, rows] = compared(r, f);
  std::cout << plan::results_table(names, rows);
  if (r.nccl && r.nccl->ok() && plan::beyond_runtime_limits(*r.nccl)) {
    std::cout << fmt::format(
        "nccl: NCCL's algorithm does not fit the {} dialect's limits here as an MSCCL program; "
        "simulated without them, as NCCL's own kernels run it\n",
        f.dialect);
  }
  if (!f.output.empty()) {
    std::cout << fmt::format("wrote {} ({} bytes, {} dialect)\n", f.output, written, f.dialect);
  }
}

int run_synth(const SynthFlags& f, const CLI::App& command) {
  const std::vector<std::pair<std::string, std::string>> inputs = {{"--topology", f.topology},
                                                                   {"--collective", f.collective}};
  refuse_overwrite("--save-algorithm", f.algorithm_output, inputs);
  auto others = inputs;
  others.emplace_back("--save-algorithm", f.algorithm_output);
  refuse_overwrite("-o", f.output, others);
  const plan::PlanRequest request = make_request(f, command);
  std::cerr << "synth: " << request.method << " " << f.collective << " on " << request.topology.name
            << "\n";
  const plan::PlanResult result =
      naming_flags(synth::find_synthesizer(request.method), [&] { return plan::plan(request); });
  if (!result.synthesis.algorithm) return print_failure(result, f);
  if (!f.algorithm_output.empty()) {
    write_text_file(f.algorithm_output,
                    formats::dump_json(formats::algorithm_to_json(*result.synthesis.algorithm)));
  }
  int64_t written = 0;  // bytes of the XML file
  if (result.ok() && !f.output.empty()) {
    written = write_text_file(f.output, [&](std::ostream& out) { result.write_xml(out); });
  }
  const ReportOnStderr report_elsewhere(f.output == "-" || f.algorithm_output == "-");
  if (f.json) {
    print_json(result, f, request.topology, written);
  } else if (f.csv && result.ok()) {
    const auto [names, rows] = compared(result, f);
    print_csv(plan::results_rows(names, rows));
  } else if (f.csv) {
    std::cerr << "verification FAILED:\n"
              << result.program->algorithm_report.summary()
              << result.program->program_report.summary();
  } else {
    print_text(result, f, request.topology, written);
  }
  return result.ok() ? kExitOk : kExitCheckFailed;
}

std::string method_help() {
  std::string help = "synthesis method (its own flags below are prefixed with its name):";
  for (const synth::Synthesizer& m : synth::synthesizers()) {
    help += "\n  " + m.name + ": " + m.description;
  }
  return help;
}

}  // namespace

void add_synth_command(CLI::App& app, CommandResult& result) {
  CLI::App* cmd = app.add_subcommand(
      "synth",
      "Synthesize an algorithm for a collective on a topology, verify and compile it, simulate it "
      "against the nccl reference and the lower bound, and write MSCCL XML.");
  auto f = std::make_shared<SynthFlags>();
  cmd->add_option("--method", f->method, method_help())->required();
  cmd->add_option("--topology,-t", f->topology, "built-in topology name or topology JSON file")
      ->required();
  cmd->add_option("--collective,-c", f->collective,
                  "allgather, alltoall, ... or a collective JSON file")
      ->capture_default_str();
  cmd->add_option("--size,-s", f->size,
                  "per-rank input size the method optimizes for and the program is simulated at "
                  "(e.g. 1K, 64M; taccl: default the sketch's input_size)")
      ->capture_default_str();
  cmd->add_option("--chunks", f->chunks,
                  "chunks per rank (SCCL's C; 0 = the method's default: ring one per ring, taccl "
                  "the sketch's input_chunkup, trees its best trees per root x 4 pipeline pieces "
                  "(x 1 above 256 ranks; halved while the program is over the runtime limits), "
                  "cooperative one per GPU of a node, else 1)")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--root", f->root, "root rank of rooted collectives")->capture_default_str();
  cmd->add_option("--time-limit", f->time_limit_s,
                  "taccl, sccl: solver time limit per stage, seconds (the best found is kept)")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--instances", f->instances, "compiler instances (parallel copies)")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--threads", f->threads,
                  "TACOS's trials, compilations and simulations run at once (0 = the hardware "
                  "threads; compilations and simulations fewer when memory is short at thousands "
                  "of ranks); the output does not depend on it")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--memory", f->memory_gib,
                  "GiB the compilations and simulations run at once may hold together, estimated "
                  "at 1 KB per op each; below two evaluations' worth (thousands of ranks at the "
                  "default) they run one at a time, a lowering's programs simulated at once where "
                  "they fit (about 100 bytes per op each), and the nccl reference keeps only its "
                  "times; the output does not depend on it")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--proto", f->proto, "protocol: Simple, LL or LL128")->capture_default_str();
  cmd->add_option("--xml-dialect", f->dialect, "classic or executor")->capture_default_str();
  cmd->add_option("--output,-o", f->output,
                  "write the MSCCL XML program here: the fastest at --size of the compilations "
                  "with and without fusion (timed algorithms also in start-time order; the "
                  "verified line says which)");
  cmd->add_option("--save-algorithm", f->algorithm_output,
                  "also write the synthesized algorithm as ccsynth-algorithm JSON (input of "
                  "`ccsynth compile`), even when verification fails");
  cmd->add_flag("--json", f->json, "print one JSON document (ccsynth-synthesis) on stdout");
  add_csv_flag(cmd, f->csv, "size and program (the results table)");
  add_method_flags(*cmd, all_methods());
  cmd->footer(
      "A flag of another method than --method is an error. Exit codes: 0 written, 1 no "
      "algorithm found or verification failed, 2 bad input.\nSee docs/taccl.md, docs/sccl.md, "
      "docs/tacos.md, docs/baselines.md; JSON output in docs/formats.md.");
  cmd->callback([f, cmd, &result] { result.exit_code = run_synth(*f, *cmd); });
}

}  // namespace ccsynth::cli
