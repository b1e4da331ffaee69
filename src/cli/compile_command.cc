// `ccsynth compile ALGO.json -o OUT.xml`: verifies an algorithm (ccsynth-algorithm JSON,
// docs/algorithm-json.md), compiles it to MSCCL-IR (docs/compiler.md), verifies the program
// and writes the XML. Exit 0 written, 1 the algorithm or the program is wrong, 2 bad input or
// the program cannot fit the runtime's limits.

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/formats/algorithm_json.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/plan/evaluate.h"
#include "ccsynth/plan/limits.h"
#include "ccsynth/plan/report.h"
#include "ccsynth/topologies/library.h"
#include "cli/command.h"

namespace ccsynth::cli {

namespace {

struct CompileCommandOptions {
  std::string file;
  std::string output;
  std::string topology;
  std::string name;
  int instances = 1;
  std::string proto = "Simple";
  bool inplace = false;
  std::string dialect = "executor";
  std::string min_bytes = "0";
  std::string max_bytes = "0";
  int max_steps = 0;         // 0 = the dialect's limit
  int max_threadblocks = 0;  // 0 = the dialect's limit
  int fifo_slots = 8;
  bool no_fuse = false;
  bool no_aggregate = false;
  bool schedule_order = false;
  bool json = false;
};

compiler::CompileOptions to_compile_options(const CompileCommandOptions& o,
                                            formats::XmlDialect dialect) {
  compiler::CompileOptions c;
  c.name = o.name;
  c.instances = o.instances;
  c.protocol = parse_protocol_flag(o.proto);
  c.inplace = o.inplace;
  c.min_bytes = parse_bytes(o.min_bytes, "--min-bytes");
  c.max_bytes = parse_bytes(o.max_bytes, "--max-bytes");
  plan::apply_runtime_limits(c, dialect, {o.max_steps, o.max_threadblocks});
  c.fifo_slots = o.fifo_slots;
  c.fuse = !o.no_fuse;
  c.aggregate = !o.no_aggregate;
  c.schedule_order = o.schedule_order;
  return c;
}

void print_json(const CompileCommandOptions& o, const plan::Evaluated& e) {
  const Algorithm& a = e.algorithm;
  nlohmann::ordered_json doc = {
      {"format", "ccsynth-compilation"},
      {"version", 1},
      {"file", o.file},
      {"output", e.ok() ? o.output : ""},
      {"algorithm", a.name},
      {"collective", a.collective.name},
      {"ranks", a.collective.num_ranks},
      {"ops", a.ops.size()},
      {"algorithm_ok", e.algorithm_report.ok()},
      {"algorithm_violations", plan::violations_json(e.algorithm_report)}};
  if (e.compiled) {
    doc["program"] = plan::program_json(e.program);
    doc["program_ok"] = e.program_report.ok();
    doc["program_violations"] = plan::violations_json(e.program_report);
  }
  std::cout << doc.dump(2) << "\n";
}

void print_text(const CompileCommandOptions& o, const plan::Evaluated& e) {
  const Algorithm& a = e.algorithm;
  std::cout << fmt::format("{}: algorithm '{}', {} on {} ranks, {} ops in {} steps\n", o.file,
                           a.name, a.collective.name, a.collective.num_ranks, a.ops.size(),
                           a.num_steps());
  if (!e.algorithm_report.ok()) {
    std::cout << "FAILED: the algorithm is wrong\n" << e.algorithm_report.summary();
    return;
  }
  const Program& p = e.program;
  std::cout << fmt::format("compiled: {} channels, {} threadblocks, {} steps, proto {}, {}\n",
                           p.num_channels, p.total_threadblocks(), p.total_steps(),
                           to_string(p.protocol), p.inplace ? "in-place" : "out-of-place");
  if (!e.program_report.ok()) {
    std::cout << "FAILED: the compiled program does not verify (a compiler bug)\n"
              << e.program_report.summary();
    return;
  }
  std::cout << "verified OK, wrote " << o.output << "\n";
}

int run_compile(const CompileCommandOptions& o) {
  if (o.fifo_slots < 1) throw UserError("", "--fifo-slots", "must be >= 1");
  refuse_overwrite("-o", o.output, {{"the input", o.file}, {"--topology", o.topology}});
  const formats::XmlDialect dialect = formats::parse_xml_dialect(o.dialect);
  const compiler::CompileOptions options = to_compile_options(o, dialect);
  const Algorithm algorithm = formats::read_algorithm_file(o.file);
  std::optional<Topology> topology;
  if (!o.topology.empty()) topology = topologies::resolve_topology(o.topology);
  plan::EvaluateOptions eo;
  eo.topology = topology ? &*topology : nullptr;
  eo.fifo_slots = o.fifo_slots;
  const plan::Evaluated e = plan::evaluate(algorithm, options, eo);
  if (e.ok()) write_xml_file(o.output, e.program, dialect);
  const ReportOnStderr report_elsewhere(o.output == "-");
  if (o.json) {
    print_json(o, e);
  } else {
    print_text(o, e);
  }
  return e.ok() ? kExitOk : kExitCheckFailed;
}

}  // namespace

void add_compile_command(CLI::App& app, CommandResult& result) {
  auto o = std::make_shared<CompileCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compile",
      "Compile an algorithm (ccsynth-algorithm JSON) into an MSCCL-IR XML program: verify the "
      "algorithm, lower it (buffers, instructions, fusion, channels, threadblocks, "
      "dependencies, instances), verify the program, write the XML");
  cmd->add_option("file", o->file, "Algorithm JSON file (docs/algorithm-json.md)")->required();
  cmd->add_option("-o,--output", o->output, "XML file to write")->required();
  cmd->add_option("--instances", o->instances,
                  "Parallel instances: every chunk split into N subchunks on N times the "
                  "channels (TACCL sec. 6.2)")
      ->default_str("1");
  cmd->add_option("--proto", o->proto, "Protocol: Simple, LL or LL128")->default_str("Simple");
  cmd->add_flag("--inplace", o->inplace, "In-place buffers (NCCL in-place calls)");
  cmd->add_option("--xml-dialect", o->dialect, "XML dialect: classic or executor")
      ->default_str("executor");
  cmd->add_option("--min-bytes", o->min_bytes, "Smallest size the runtime uses it for (e.g. 1K)")
      ->default_str("0");
  cmd->add_option("--max-bytes", o->max_bytes, "Largest size (0 = unlimited)")->default_str("0");
  cmd->add_option("--name", o->name, "Program name (default: the algorithm's)");
  cmd->add_option("--topology,-t", o->topology,
                  "Also check every op uses a link of this topology (built-in name or JSON)");
  cmd->add_option("--max-steps-per-threadblock", o->max_steps,
                  "Steps one threadblock may have (default: the dialect's, 64 executor, 256 "
                  "classic)")
      ->check(kPositive);
  cmd->add_option("--max-threadblocks-per-rank", o->max_threadblocks,
                  "Threadblocks one rank may have (default: the dialect's, 1024 executor, 216 "
                  "classic)")
      ->check(kPositive);
  cmd->add_option("--fifo-slots", o->fifo_slots, "FIFO slots per connection")->default_str("8");
  cmd->add_flag("--no-fuse", o->no_fuse, "Do not fuse receives and sends (rcs, rrcs, rrs)");
  cmd->add_flag("--schedule-order", o->schedule_order,
                "Run a timed algorithm (TACCL, TACOS) in its start-time order, one threadblock "
                "per data arrival of a connection (docs/compiler.md); no effect without start "
                "times");
  cmd->add_flag("--no-aggregate", o->no_aggregate, "Do not merge contiguous transfers");
  cmd->add_flag("--json", o->json, "Print one JSON document (ccsynth-compilation) on stdout");
  cmd->footer(
      "Exit codes: 0 written, 1 the algorithm (or the compiled program) fails verification, "
      "2 bad input or the program cannot fit the runtime limits.\nSee docs/compiler.md.");
  cmd->callback([o, &result] { result.exit_code = run_compile(*o); });
}

}  // namespace ccsynth::cli
