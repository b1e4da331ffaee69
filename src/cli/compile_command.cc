// `ccsynth compile ALGO.json -o OUT.xml`: verifies an algorithm (ccsynth-algorithm JSON,
// docs/algorithm-json.md), compiles it to MSCCL-IR (docs/compiler.md), verifies the program
// and writes the XML. Exit 0 written, 1 the algorithm or the program is wrong, 2 bad input or
// the program cannot fit the runtime's limits.

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/compiler/instances.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/formats/algorithm_json.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"
#include "cli/command.h"
#include "cli/pipeline.h"

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
  const auto proto = parse_protocol(o.proto);
  if (!proto) throw UserError("", "--proto", "expected Simple, LL or LL128, got '" + o.proto + "'");
  c.protocol = *proto;
  c.inplace = o.inplace;
  c.min_bytes = parse_bytes(o.min_bytes, "--min-bytes");
  c.max_bytes = parse_bytes(o.max_bytes, "--max-bytes");
  apply_dialect_limits(c, dialect, o.max_steps, o.max_threadblocks);
  c.fifo_slots = o.fifo_slots;
  c.fuse = !o.no_fuse;
  c.aggregate = !o.no_aggregate;
  c.schedule_order = o.schedule_order;
  return c;
}

nlohmann::ordered_json violations_json(const verify::VerifyReport& report) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const verify::Violation& v : report.violations) {
    out.push_back({{"kind", verify::to_string(v.kind)},
                   {"rank", v.rank},
                   {"threadblock", v.threadblock},
                   {"step", v.step},
                   {"message", v.message}});
  }
  return out;
}

struct Outcome {
  verify::VerifyReport algorithm_report;
  verify::VerifyReport program_report;
  Program program;
  bool compiled = false;
};

void print_json(const CompileCommandOptions& o, const Algorithm& a, const Outcome& out) {
  nlohmann::ordered_json doc = {{"format", "ccsynth-compilation"},
                                {"version", 1},
                                {"file", o.file},
                                {"output", out.compiled && out.program_report.ok() ? o.output : ""},
                                {"algorithm", a.name},
                                {"collective", a.collective.name},
                                {"ranks", a.collective.num_ranks},
                                {"ops", a.ops.size()},
                                {"algorithm_ok", out.algorithm_report.ok()},
                                {"algorithm_violations", violations_json(out.algorithm_report)}};
  if (out.compiled) {
    int tbs = 0, max_tbs = 0, max_steps = 0;
    for (const GpuProgram& g : out.program.gpus) {
      tbs += static_cast<int>(g.threadblocks.size());
      max_tbs = std::max(max_tbs, static_cast<int>(g.threadblocks.size()));
      for (const Threadblock& tb : g.threadblocks) {
        max_steps = std::max(max_steps, static_cast<int>(tb.steps.size()));
      }
    }
    doc["program"] = {{"name", out.program.name},
                      {"channels", out.program.num_channels},
                      {"threadblocks", tbs},
                      {"max_threadblocks_per_rank", max_tbs},
                      {"max_steps_per_threadblock", max_steps},
                      {"steps", out.program.total_steps()},
                      {"chunks_per_loop", out.program.chunks_per_loop}};
    doc["program_ok"] = out.program_report.ok();
    doc["program_violations"] = violations_json(out.program_report);
  }
  std::cout << doc.dump(2) << "\n";
}

void print_text(const CompileCommandOptions& o, const Algorithm& a, const Outcome& out) {
  std::cout << fmt::format("{}: algorithm '{}', {} on {} ranks, {} ops in {} steps\n", o.file,
                           a.name, a.collective.name, a.collective.num_ranks, a.ops.size(),
                           a.num_steps());
  if (!out.algorithm_report.ok()) {
    std::cout << "FAILED: the algorithm is wrong\n" << out.algorithm_report.summary();
    return;
  }
  const Program& p = out.program;
  int tbs = 0;
  for (const GpuProgram& g : p.gpus) tbs += static_cast<int>(g.threadblocks.size());
  std::cout << fmt::format("compiled: {} channels, {} threadblocks, {} steps, proto {}, {}\n",
                           p.num_channels, tbs, p.total_steps(), to_string(p.protocol),
                           p.inplace ? "in-place" : "out-of-place");
  if (!out.program_report.ok()) {
    std::cout << "FAILED: the compiled program does not verify (a compiler bug)\n"
              << out.program_report.summary();
    return;
  }
  std::cout << "verified OK, wrote " << o.output << "\n";
}

int run_compile(const CompileCommandOptions& o) {
  if (o.fifo_slots < 1) throw UserError("", "--fifo-slots", "must be >= 1");
  const formats::XmlDialect dialect = formats::parse_xml_dialect(o.dialect);
  const compiler::CompileOptions options = to_compile_options(o, dialect);
  const Algorithm algorithm = formats::read_algorithm_file(o.file);
  Outcome out;
  if (o.topology.empty()) {
    out.algorithm_report = verify::verify_algorithm(algorithm);
  } else {
    const Topology topology = topologies::resolve_topology(o.topology);
    out.algorithm_report = verify::verify_algorithm(algorithm, &topology);
  }
  if (out.algorithm_report.ok()) {
    out.program = compiler::compile(algorithm, options);
    out.compiled = true;
    const Collective collective =
        compiler::replicate_collective(algorithm.collective, options.instances);
    out.program_report = verify::verify_program(out.program, {&collective, o.fifo_slots});
    if (out.program_report.ok()) {
      write_text_file(o.output, formats::write_msccl_xml(out.program, dialect));
    }
  }
  if (o.json) {
    print_json(o, algorithm, out);
  } else {
    print_text(o, algorithm, out);
  }
  return out.algorithm_report.ok() && out.program_report.ok() ? kExitOk : kExitCheckFailed;
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
  cmd->add_option("--max-steps", o->max_steps,
                  "Steps per threadblock (default: 64 executor, 256 classic)");
  cmd->add_option("--max-threadblocks", o->max_threadblocks,
                  "Threadblocks per rank (default: 1024 executor, 216 classic)");
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
