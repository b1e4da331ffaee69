// `ccsynth baseline --algo ring --collective allreduce --topology dgx1 -o OUT.xml`: builds a
// baseline algorithm (docs/baselines.md), verifies it on the topology, compiles it
// (docs/compiler.md), verifies the program and writes MSCCL XML. Exit 0 written, 1 a check
// failed, 2 bad input (unknown names, a baseline that does not apply, limits exceeded).

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/compiler/instances.h"
#include "ccsynth/core/error.h"
#include "ccsynth/formats/collective_json.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"
#include "cli/command.h"

namespace ccsynth::cli {

namespace {

struct BaselineCommandOptions {
  std::string algo;
  std::string collective;
  std::string topology;
  std::string output;
  int chunks = 1;
  int root = 0;
  int instances = 1;
  int pipeline = 1;
  int rings = 0;
  bool bidirectional = false;
  std::string proto = "Simple";
  std::string dialect = "executor";
  bool inplace = false;
  bool json = false;
};

struct Outcome {
  Algorithm algorithm;
  verify::VerifyReport algorithm_report;
  Program program;
  verify::VerifyReport program_report;
  bool compiled = false;
};

nlohmann::ordered_json violations_json(const verify::VerifyReport& report) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const verify::Violation& v : report.violations) {
    out.push_back({{"kind", verify::to_string(v.kind)},
                   {"rank", v.rank},
                   {"step", v.step},
                   {"message", v.message}});
  }
  return out;
}

int count_threadblocks(const Program& p) {
  int tbs = 0;
  for (const GpuProgram& g : p.gpus) tbs += static_cast<int>(g.threadblocks.size());
  return tbs;
}

void print_json(const BaselineCommandOptions& o, const Topology& t, const Outcome& out) {
  const Algorithm& a = out.algorithm;
  const bool ok = out.algorithm_report.ok() && out.program_report.ok();
  nlohmann::ordered_json doc = {{"format", "ccsynth-baseline"},
                                {"version", 1},
                                {"algo", o.algo},
                                {"algorithm", a.name},
                                {"collective", a.collective.name},
                                {"topology", t.name},
                                {"ranks", a.collective.num_ranks},
                                {"chunks_per_rank", a.collective.chunks_per_rank},
                                {"ops", a.ops.size()},
                                {"steps", a.num_steps()},
                                {"algorithm_ok", out.algorithm_report.ok()},
                                {"algorithm_violations", violations_json(out.algorithm_report)}};
  if (out.compiled) {
    doc["program"] = {{"name", out.program.name},
                      {"instances", o.instances},
                      {"protocol", to_string(out.program.protocol)},
                      {"channels", out.program.num_channels},
                      {"threadblocks", count_threadblocks(out.program)},
                      {"steps", out.program.total_steps()}};
    doc["program_ok"] = out.program_report.ok();
    doc["program_violations"] = violations_json(out.program_report);
  }
  doc["output"] = ok ? o.output : "";
  std::cout << doc.dump(2) << "\n";
}

void print_text(const BaselineCommandOptions& o, const Topology& t, const Outcome& out) {
  const Algorithm& a = out.algorithm;
  std::cout << fmt::format("{:<12} {}\n", "algorithm", a.name);
  std::cout << fmt::format("{:<12} {} on {} ranks, {} chunks per rank\n", "collective",
                           a.collective.name, a.collective.num_ranks, a.collective.chunks_per_rank);
  std::cout << fmt::format("{:<12} {}\n", "topology", t.name);
  std::cout << fmt::format("{:<12} {} ops in {} steps\n", "ops", a.ops.size(), a.num_steps());
  if (!out.algorithm_report.ok()) {
    std::cout << "FAILED: the algorithm does not verify (a baseline bug)\n"
              << out.algorithm_report.summary();
    return;
  }
  const Program& p = out.program;
  std::cout << fmt::format("{:<12} {} channels, {} threadblocks, {} steps, proto {}, {}\n",
                           "program", p.num_channels, count_threadblocks(p), p.total_steps(),
                           to_string(p.protocol), p.inplace ? "in-place" : "out-of-place");
  if (!out.program_report.ok()) {
    std::cout << "FAILED: the compiled program does not verify\n" << out.program_report.summary();
    return;
  }
  std::cout << "verified OK, wrote " << o.output << "\n";
}

int run_baseline(const BaselineCommandOptions& o) {
  const synth::BaselineKind kind = synth::parse_baseline_kind(o.algo);
  const formats::XmlDialect dialect = formats::parse_xml_dialect(o.dialect);
  const auto proto = parse_protocol(o.proto);
  if (!proto) throw UserError("", "--proto", "expected Simple, LL or LL128, got '" + o.proto + "'");
  if (o.chunks < 1) throw UserError("", "--chunks", "must be >= 1");
  const Topology topology = topologies::resolve_topology(o.topology);
  const Collective collective =
      formats::resolve_collective(o.collective, topology.num_ranks, o.chunks, o.root);
  synth::BaselineOptions bo;
  bo.pipeline_chunks = o.pipeline;
  bo.rings = o.rings;
  bo.bidirectional = o.bidirectional;
  Outcome out;
  out.algorithm = synth::make_baseline(kind, collective, topology, bo);
  out.algorithm_report = verify::verify_algorithm(out.algorithm, &topology);
  if (out.algorithm_report.ok()) {
    compiler::CompileOptions co;
    co.instances = o.instances;
    co.protocol = *proto;
    co.inplace = o.inplace;
    // msccl-xml.md "Limits": classic allows 256 steps and 216 threadblocks.
    if (dialect == formats::XmlDialect::kClassic) {
      co.max_steps_per_threadblock = 256;
      co.max_threadblocks_per_rank = 216;
    }
    out.program = compiler::compile(out.algorithm, co);
    out.compiled = true;
    const Collective replicated = compiler::replicate_collective(collective, o.instances);
    out.program_report = verify::verify_program(out.program, {&replicated});
    if (out.program_report.ok()) write_text_file(o.output, formats::write_msccl_xml(out.program, dialect));
  }
  if (o.json) {
    print_json(o, topology, out);
  } else {
    print_text(o, topology, out);
  }
  return out.algorithm_report.ok() && out.program_report.ok() ? kExitOk : kExitCheckFailed;
}

}  // namespace

void add_baseline_command(CLI::App& app, CommandResult& result) {
  auto o = std::make_shared<BaselineCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "baseline",
      "Build a baseline algorithm (ring, direct, rd, rhd, dbt, hier, twostep, chain, tree) for "
      "a collective on a topology, verify it, compile it to MSCCL-IR, verify the program and "
      "write the XML");
  cmd->add_option("--algo", o->algo,
                  "Baseline: ring, direct, rd (recursive doubling), rhd (halving-doubling), dbt "
                  "(double binary tree), hier, twostep, chain, tree")
      ->required();
  cmd->add_option("--collective,-c", o->collective,
                  "allgather, reducescatter, allreduce, alltoall, broadcast, reduce, gather, "
                  "scatter")
      ->required();
  cmd->add_option("--topology,-t", o->topology, "Built-in topology name or topology JSON file")
      ->required();
  cmd->add_option("-o,--output", o->output, "XML file to write")->required();
  cmd->add_option("--chunks", o->chunks, "Chunks per rank (lets rings and pipelines split data)")
      ->default_str("1");
  cmd->add_option("--root", o->root, "Root rank of broadcast, reduce, gather, scatter")
      ->default_str("0");
  cmd->add_option("--instances", o->instances, "Parallel instances of the compiled program")
      ->default_str("1");
  cmd->add_option("--pipeline", o->pipeline, "Pieces for pipelined chain, tree and dbt")
      ->default_str("1");
  cmd->add_option("--rings", o->rings, "Rings for ring (0 = as many as the lanes allow)")
      ->default_str("0");
  cmd->add_flag("--bidirectional", o->bidirectional, "ring: use every ring in both directions");
  cmd->add_option("--proto", o->proto, "Protocol: Simple, LL or LL128")->default_str("Simple");
  cmd->add_option("--xml-dialect", o->dialect, "XML dialect: classic or executor")
      ->default_str("executor");
  cmd->add_flag("--inplace", o->inplace, "In-place buffers (NCCL in-place calls)");
  cmd->add_flag("--json", o->json, "Print one JSON document (ccsynth-baseline) on stdout");
  cmd->footer(
      "Exit codes: 0 written, 1 the algorithm or the compiled program fails verification, 2 bad "
      "input (including a baseline that does not apply to the collective or topology, or a "
      "program over the runtime limits).\nSee docs/baselines.md.");
  cmd->callback([o, &result] { result.exit_code = run_baseline(*o); });
}

}  // namespace ccsynth::cli
