#include "example.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "ccsynth/compiler/instances.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/plan/dsl.h"
#include "ccsynth/plan/report.h"
#include "ccsynth/runtime/harness.h"
#include "ccsynth/topologies/library.h"

namespace ccsynth::examples {

namespace {

constexpr int kExitOk = 0;
constexpr int kExitCheckFailed = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 3;

// Elements per chunk of the CPU check: small, so every example runs in well under a second.
constexpr int64_t kCheckElementsPerChunk = 256;

std::vector<int64_t> parse_sizes(const std::vector<std::string>& texts) {
  std::vector<int64_t> sizes;
  for (const std::string& t : texts) {
    for (int64_t s : parse_byte_list(t, "--size")) sizes.push_back(s);
  }
  return sizes;
}

// Runs the kept program once on the CPU runtime with random data and checks the outputs.
runtime::HarnessResult check_on_cpu(const plan::Evaluated& evaluated) {
  const Program& program = evaluated.program;
  const Collective collective =
      compiler::replicate_collective(evaluated.algorithm.collective, evaluated.options.instances);
  runtime::HarnessOptions h;
  h.check = true;
  h.inplace = program.inplace && !program.outofplace;
  h.collective = &collective;
  const int64_t bytes =
      std::max(1, collective.input_chunks) * kCheckElementsPerChunk * int64_t{sizeof(float)};
  return runtime::run_program(program, bytes, h);
}

// The evaluated programs of the table: the example, the nccl reference, the --compare methods.
struct Evaluations {
  std::vector<std::string> names;
  std::vector<plan::Evaluated> owned;  // the --compare methods
  std::vector<const plan::Evaluated*> all;
};

Evaluations evaluations(const std::string& name, const plan::PlanResult& result,
                        const std::vector<plan::PlanResult>& compared,
                        const std::vector<std::string>& compare_names) {
  Evaluations e;
  e.names.push_back(name);
  e.all.push_back(&*result.program);
  if (result.nccl) {
    e.names.push_back("nccl");
    e.all.push_back(&*result.nccl);
  }
  for (size_t i = 0; i < compared.size(); ++i) {
    if (!compared[i].ok()) continue;
    e.names.push_back(compare_names[i]);
    e.all.push_back(&*compared[i].program);
  }
  return e;
}

// Plans a registered method (a baseline) on the same collective, sizes and compilation.
plan::PlanResult plan_method(const std::string& method, const DslProgram& program,
                             const plan::PlanRequest& base) {
  plan::PlanRequest request = plan::compiled_as(program, base);
  request.method = method;
  request.collective = program.collective();
  request.compile.name = method;
  request.compare_with_nccl = false;
  return plan::plan(request);
}

nlohmann::json check_json(const runtime::HarnessResult& r) {
  return {{"ok", r.ok},
          {"checked_elements", r.checked_elements},
          {"mismatches", r.mismatches},
          {"message", r.message}};
}

int print_json(const Example& example, const ExampleArgs& args, const Topology& topology,
               const lang::DslProgram& program, const plan::PlanResult& result,
               const Evaluations& table, const std::optional<runtime::HarnessResult>& check,
               bool ok) {
  nlohmann::json doc = {{"format", "ccsynth-dsl-example"},
                        {"version", 1},
                        {"example", example.name},
                        {"topology", topology.name},
                        {"collective", program.collective().name},
                        {"ok", ok}};
  doc["program"] = plan::to_json(*result.program);
  if (result.nccl) doc["nccl"] = plan::to_json(*result.nccl);
  if (result.ok()) doc["best"] = plan::best_json(table.names, table.all);
  if (result.ok() && !args.output.empty()) doc["output"] = args.output;
  if (check) doc["check"] = check_json(*check);
  std::cout << doc.dump(2) << "\n";
  return ok ? kExitOk : kExitCheckFailed;
}

int print_text(const Example& example, const ExampleArgs& args, const Topology& topology,
               const lang::DslProgram& program, const plan::PlanResult& result,
               const Evaluations& table, const std::optional<runtime::HarnessResult>& check) {
  const Algorithm& algorithm = result.program->algorithm;
  std::cout << fmt::format("{} on {}: {}, {} ranks, {} steps, {} sends\n", example.name,
                           topology.name, program.collective().name, topology.num_ranks,
                           algorithm.num_steps(), algorithm.ops.size());
  if (!result.ok()) {
    std::cout << "verification FAILED:\n";
    for (const auto& v : result.program->algorithm_report.violations)
      std::cout << "  " << v << "\n";
    for (const auto& v : result.program->program_report.violations) std::cout << "  " << v << "\n";
    return kExitCheckFailed;
  }
  const Program& p = result.program->program;
  std::cout << fmt::format(
      "verified: algorithm and program correct ({}); {} threadblocks, {} steps\n",
      plan::variant_description(result.program->options), p.total_threadblocks(), p.total_steps());
  std::cout << plan::results_table(table.names, table.all);
  if (!args.output.empty()) std::cout << "wrote " << args.output << "\n";
  if (!check) return kExitOk;
  if (check->ok) {
    std::cout << "ran correctly on the CPU runtime (" << check->checked_elements
              << " values checked)\n";
    return kExitOk;
  }
  std::cout << "CPU runtime check FAILED: " << check->message << "\n";
  return kExitCheckFailed;
}

int run(const Example& example, const ExampleArgs& args) {
  const Topology topology = topologies::resolve_topology(args.topology);
  const std::unique_ptr<lang::DslProgram> program = example.build(topology, args);
  plan::PlanRequest request;
  request.topology = topology;
  request.sizes = parse_sizes(args.sizes);
  // The executor dialect names only the built-in collectives; custom ones need the classic.
  const bool custom = program->collective().kind == CollectiveKind::kCustom;
  request.dialect = args.dialect.empty()
                        ? (custom ? formats::XmlDialect::kClassic : formats::XmlDialect::kExecutor)
                        : formats::parse_xml_dialect(args.dialect);
  const plan::PlanResult result = plan::plan_dsl(*program, request);
  std::vector<plan::PlanResult> compared;
  std::vector<std::string> compare_names;
  for (const std::string& method : args.compare) {
    try {
      compared.push_back(plan_method(method, *program, request));
      compare_names.push_back(method);
    } catch (const UserError& e) {  // e.g. a baseline that does not build this collective
      std::cerr << example.name << ": --compare " << method << " left out: " << e.reason() << "\n";
    }
  }
  const Evaluations table = evaluations(example.name, result, compared, compare_names);
  std::optional<runtime::HarnessResult> check;
  if (args.check && result.ok()) check = check_on_cpu(*result.program);
  if (result.ok() && !args.output.empty()) {
    std::ofstream out(args.output);
    out << result.xml();
    if (!out) throw UserError(args.output, "--output", "cannot write the file");
  }
  const bool ok = result.ok() && (!check || check->ok);
  if (args.json) return print_json(example, args, topology, *program, result, table, check, ok);
  return print_text(example, args, topology, *program, result, table, check);
}

}  // namespace

NodeShape node_shape(const Topology& topology, const ExampleArgs& args) {
  const int nodes =
      args.nodes > 0 ? args.nodes : std::max<int>(1, static_cast<int>(topology.nodes.size()));
  if (topology.num_ranks % nodes != 0) {
    throw UserError("", "--nodes",
                    fmt::format("{} ranks do not split into {} nodes", topology.num_ranks, nodes));
  }
  return {nodes, topology.num_ranks / nodes};
}

lang::ProgramOptions program_options(const std::string& name, const Topology& topology,
                                     const ExampleArgs& args, bool inplace) {
  lang::ProgramOptions o;
  o.name = name;
  o.topology = topology.name;
  o.instances = args.instances;
  o.inplace = inplace;
  const std::optional<Protocol> protocol = parse_protocol(args.protocol);
  if (!protocol) {
    throw UserError("", "--protocol",
                    "expected Simple, LL or LL128, got \"" + args.protocol + "\"");
  }
  o.protocol = *protocol;
  return o;
}

std::unique_ptr<DslProgram> make_program(const std::string& name, Collective collective,
                                         const Topology& topology, const ExampleArgs& args,
                                         bool inplace) {
  return std::make_unique<DslProgram>(std::move(collective),
                                      program_options(name, topology, args, inplace));
}

int run_example(const Example& example, int argc, char** argv) {
  CLI::App app(example.description, example.name);
  ExampleArgs args;
  args.topology = example.default_topology;
  args.sizes = example.default_sizes;
  args.instances = example.default_instances;
  app.add_option("-o,--output", args.output, "write the verified MSCCL-IR XML here");
  app.add_option("--topology", args.topology, "built-in topology or JSON file")
      ->capture_default_str();
  app.add_option("--size", args.sizes, "bytes per rank to simulate: 1M, 64K, 1K:1G:4; repeatable")
      ->capture_default_str();
  app.add_option("--dialect", args.dialect,
                 "XML dialect: executor or classic (default: executor, classic for custom "
                 "collectives, which the executor dialect cannot name)")
      ->check(CLI::IsMember({"executor", "classic"}));
  app.add_flag("--json", args.json, "print one JSON document");
  app.add_flag("--check", args.check,
               "also run the program on the CPU runtime and compare with the collective");
  app.add_option("--compare", args.compare,
                 "also evaluate a registered method (e.g. a baseline: ring, rd, rhd, hier, "
                 "twostep) on the same collective and compilation; repeatable");
  app.add_option("--nodes", args.nodes, "nodes N (default: the topology's nodes)");
  app.add_option("--instances", args.instances, "program instances")->capture_default_str();
  app.add_option("--protocol", args.protocol, "Simple, LL or LL128")->capture_default_str();
  if (example.add_flags) example.add_flags(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  }
  try {
    return run(example, args);
  } catch (const UserError& e) {
    std::cerr << example.name << ": error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const InternalError& e) {
    std::cerr << example.name << ": internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace ccsynth::examples
