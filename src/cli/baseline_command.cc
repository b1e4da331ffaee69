// `ccsynth baseline --algo ring --collective allreduce --topology dgx1 -o OUT.xml`: builds a
// baseline algorithm (docs/baselines.md) through the synthesizer registry, then the planner
// verifies it on the topology, compiles it exactly as asked (docs/compiler.md), verifies the
// program, and the XML is written. Exit 0 written, 1 a check failed, 2 bad input (unknown
// names, a baseline that does not apply, limits exceeded).

#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ccsynth/core/error.h"
#include "ccsynth/formats/collective_json.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/plan/evaluate.h"
#include "ccsynth/plan/limits.h"
#include "ccsynth/plan/report.h"
#include "ccsynth/synth/registry.h"
#include "ccsynth/topologies/library.h"
#include "cli/command.h"
#include "cli/method_flags.h"

namespace ccsynth::cli {

namespace {

struct BaselineFlags {
  std::string algo;
  std::string collective;
  std::string topology;
  std::string output;
  int chunks = 0;
  int root = 0;
  int instances = 1;
  std::string proto = "Simple";
  std::string dialect = "executor";
  bool inplace = false;
  bool json = false;
};

void print_json(const BaselineFlags& f, const Topology& t, const plan::Evaluated& e) {
  const Algorithm& a = e.algorithm;
  nlohmann::ordered_json doc = {
      {"format", "ccsynth-baseline"},
      {"version", 1},
      {"algo", f.algo},
      {"algorithm", a.name},
      {"collective", a.collective.name},
      {"topology", t.name},
      {"ranks", a.collective.num_ranks},
      {"chunks_per_rank", a.collective.chunks_per_rank},
      {"ops", a.ops.size()},
      {"steps", a.num_steps()},
      {"algorithm_ok", e.algorithm_report.ok()},
      {"algorithm_violations", plan::violations_json(e.algorithm_report)}};
  if (e.compiled) {
    nlohmann::json program = plan::program_json(e.program);
    program["instances"] = f.instances;
    doc["program"] = program;
    doc["program_ok"] = e.program_report.ok();
    doc["program_violations"] = plan::violations_json(e.program_report);
  }
  doc["output"] = e.ok() ? f.output : "";
  std::cout << doc.dump(2) << "\n";
}

void print_text(const BaselineFlags& f, const Topology& t, const plan::Evaluated& e) {
  const Algorithm& a = e.algorithm;
  std::cout << fmt::format("{:<12} {}\n", "algorithm", a.name);
  std::cout << fmt::format("{:<12} {} on {} ranks, {} chunks per rank\n", "collective",
                           a.collective.name, a.collective.num_ranks, a.collective.chunks_per_rank);
  std::cout << fmt::format("{:<12} {}\n", "topology", t.name);
  std::cout << fmt::format("{:<12} {} ops in {} steps\n", "ops", a.ops.size(), a.num_steps());
  if (!e.algorithm_report.ok()) {
    std::cout << "FAILED: the algorithm does not verify (a baseline bug)\n"
              << e.algorithm_report.summary();
    return;
  }
  const Program& p = e.program;
  std::cout << fmt::format("{:<12} {} channels, {} threadblocks, {} steps, proto {}, {}\n",
                           "program", p.num_channels, p.total_threadblocks(), p.total_steps(),
                           to_string(p.protocol), p.inplace ? "in-place" : "out-of-place");
  if (!e.program_report.ok()) {
    std::cout << "FAILED: the compiled program does not verify\n" << e.program_report.summary();
    return;
  }
  std::cout << "verified OK, wrote " << f.output << "\n";
}

// A built-in collective through the registry, or a custom one (alltonext or a collective JSON
// file). A file keeps its own chunks per rank; alltonext gets --chunks or the method's default.
Collective custom_or_builtin(const BaselineFlags& f, const synth::Synthesizer& method,
                             const Topology& topology) {
  if (is_collective_kind(f.collective)) {
    return synth::collective_for(
        method, topology, parse_collective_kind(f.collective, "--collective"), f.chunks, f.root);
  }
  int chunks = f.chunks;
  const bool file = f.collective.find('/') != std::string::npos ||
                    f.collective.find(".json") != std::string::npos;
  if (chunks == 0 && !file) {
    chunks = method.default_chunks ? method.default_chunks(topology, CollectiveKind::kCustom) : 1;
  }
  return formats::resolve_collective(f.collective, topology.num_ranks, chunks, f.root);
}

int run_baseline(const BaselineFlags& f, const CLI::App& command) {
  const synth::Synthesizer& method = synth::find_synthesizer(f.algo, "--algo");
  if (!method.baseline) {
    throw UserError(
        "", "--algo",
        "'" + f.algo + "' is a synthesizer; use `ccsynth synth --method " + f.algo + "`");
  }
  const formats::XmlDialect dialect = formats::parse_xml_dialect(f.dialect);
  const Topology topology = topologies::resolve_topology(f.topology);
  const Collective collective = custom_or_builtin(f, method, topology);
  synth::SynthOptions options;
  options.params = given_params(command, method, baseline_methods());
  const synth::SynthResult made = naming_flags(
      method, [&] { return synth::synthesize(method, topology, collective, options); });
  compiler::CompileOptions co;
  co.instances = f.instances;
  co.protocol = parse_protocol_flag(f.proto);
  co.inplace = f.inplace;
  plan::apply_runtime_limits(co, dialect);
  plan::EvaluateOptions eo;
  eo.topology = &topology;
  const plan::Evaluated e = plan::evaluate(*made.algorithm, co, eo);
  refuse_overwrite("-o", f.output, {{"--topology", f.topology}, {"--collective", f.collective}});
  if (e.ok()) write_xml_file(f.output, e.program, dialect);
  const ReportOnStderr report_elsewhere(f.output == "-");
  if (f.json) {
    print_json(f, topology, e);
  } else {
    print_text(f, topology, e);
  }
  return e.ok() ? kExitOk : kExitCheckFailed;
}

std::string algo_help() {
  std::string help = "baseline:";
  for (const synth::Synthesizer* m : baseline_methods()) {
    help += "\n  " + m->name + ": " + m->description.substr(m->description.find(": ") + 2);
  }
  return help;
}

}  // namespace

void add_baseline_command(CLI::App& app, CommandResult& result) {
  auto f = std::make_shared<BaselineFlags>();
  CLI::App* cmd = app.add_subcommand(
      "baseline",
      "Build a baseline algorithm (ring, direct, rd, rhd, dbt, hier, twostep, chain, tree, "
      "cooperative) for "
      "a collective on a topology, verify it, compile it to MSCCL-IR, verify the program and "
      "write the XML");
  cmd->add_option("--algo", f->algo, algo_help())->required();
  cmd->add_option("--collective,-c", f->collective,
                  "allgather, reducescatter, allreduce, alltoall, broadcast, reduce, gather, "
                  "scatter, alltonext or a collective JSON file (custom collectives need "
                  "--xml-dialect classic)")
      ->required();
  cmd->add_option("--topology,-t", f->topology, "Built-in topology name or topology JSON file")
      ->required();
  cmd->add_option("-o,--output", f->output, "XML file to write")->required();
  cmd->add_option("--chunks", f->chunks,
                  "Chunks per rank (0 = the baseline's default: ring one per ring, like NCCL; "
                  "cooperative one per GPU of a node; else 1)")
      ->default_str("0")
      ->check(kNonNegative);
  cmd->add_option("--root", f->root, "Root rank of broadcast, reduce, gather, scatter")
      ->default_str("0");
  cmd->add_option("--instances", f->instances, "Parallel instances of the compiled program")
      ->default_str("1")
      ->check(kPositive);
  add_method_flags(*cmd, baseline_methods());
  cmd->add_option("--proto", f->proto, "Protocol: Simple, LL or LL128")->default_str("Simple");
  cmd->add_option("--xml-dialect", f->dialect, "XML dialect: classic or executor")
      ->default_str("executor");
  cmd->add_flag("--inplace", f->inplace, "In-place buffers (NCCL in-place calls)");
  cmd->add_flag("--json", f->json, "Print one JSON document (ccsynth-baseline) on stdout");
  cmd->footer(
      "A flag of another baseline than --algo is an error. Exit codes: 0 written, 1 the "
      "algorithm or the compiled program fails verification, 2 bad input (including a baseline "
      "that does not apply to the collective or topology, or a program over the runtime "
      "limits).\nSee docs/baselines.md; JSON output in docs/formats.md.");
  cmd->callback([f, cmd, &result] { result.exit_code = run_baseline(*f, *cmd); });
}

}  // namespace ccsynth::cli
