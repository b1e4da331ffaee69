// `ccsynth synth --method taccl|sccl|tacos ...`: runs a synthesizer, then the shared pipeline
// (verify, compile, verify, simulate against the ring baseline and the lower bound), and
// writes the MSCCL XML.

#include "cli/synth_command.h"

#include <chrono>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/formats/algorithm_json.h"
#include "ccsynth/formats/json_io.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/topologies/library.h"
#include "cli/pipeline.h"

namespace ccsynth::cli {

namespace {

const SynthMethod& find_method(const std::vector<SynthMethod>& methods, const std::string& name) {
  std::string known;
  for (const SynthMethod& m : methods) {
    if (m.name == name) return m;
    known += (known.empty() ? "" : ", ") + m.name;
  }
  throw UserError("", "--method", "unknown method '" + name + "' (expected " + known + ")");
}

compiler::CompileOptions compile_options(const SynthCommonOptions& o, const std::string& name) {
  compiler::CompileOptions options;
  options.name = name;
  options.instances = o.instances;
  const auto protocol = parse_protocol(o.protocol);
  if (!protocol) throw UserError("", "--proto", "expected Simple, LL or LL128, got " + o.protocol);
  options.protocol = *protocol;
  apply_dialect_limits(options, formats::parse_xml_dialect(o.xml_dialect));
  return options;
}

// The reference ring (reference_ring()), or nullptr when ring does not apply.
std::unique_ptr<Evaluated> ring_reference(const Algorithm& algorithm, const Topology& topology,
                                          const compiler::CompileOptions& options,
                                          const std::vector<int64_t>& sizes) {
  const std::optional<Algorithm> ring = reference_ring(algorithm.collective, topology);
  if (!ring) return nullptr;
  auto ring_options = options;
  ring_options.name = "ring";
  ring_options.instances = 1;
  return std::make_unique<Evaluated>(evaluate(*ring, topology, ring_options, sizes));
}

int print_failure(const SynthOutcome& outcome, const SynthCommonOptions& o) {
  const std::string status = to_string(outcome.status);
  if (o.json) {
    nlohmann::json doc = {{"format", "ccsynth-synthesis"}, {"version", 1}, {"method", o.method},
                          {"status", status}, {"ok", false}, {"details", outcome.details}};
    std::cout << doc.dump(2) << "\n";
  } else {
    std::cout << (outcome.status == SynthStatus::kInfeasible ? "unsatisfiable" : status)
              << ": no algorithm found\n";
    if (!outcome.details.empty()) std::cout << outcome.details.dump(2) << "\n";
  }
  return kExitCheckFailed;
}

int run_synth(const SynthCommonOptions& o, const std::vector<SynthMethod>& methods) {
  const SynthMethod& method = find_method(methods, o.method);
  const Topology topology = topologies::resolve_topology(o.topology);
  const int64_t bytes = parse_bytes(o.size, "--size");
  const auto started = std::chrono::steady_clock::now();
  std::cerr << "synth: " << method.name << " " << o.collective << " on " << topology.name << "\n";
  const SynthOutcome outcome = method.run(o, topology, std::cerr);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!outcome.algorithm) return print_failure(outcome, o);

  if (!o.algorithm_output.empty()) {
    write_text_file(o.algorithm_output,
                    formats::dump_json(formats::algorithm_to_json(*outcome.algorithm)));
  }
  const auto options = compile_options(o, o.method + "_" + outcome.algorithm->collective.name);
  const std::vector<int64_t> sizes = {bytes};
  // The user's instance count, with and without fusion, timed algorithms also in start-time
  // order: the fastest at --size is written.
  const Evaluated result =
      evaluate_variants(*outcome.algorithm, topology, options, {o.instances}, sizes);
  const auto ring = result.ok() ? ring_reference(result.algorithm, topology, options, sizes)
                                : nullptr;
  if (result.ok() && !o.output.empty()) {
    write_text_file(o.output, formats::write_msccl_xml(result.program,
                                                       formats::parse_xml_dialect(o.xml_dialect)));
  }
  if (o.json) {
    nlohmann::json doc = {{"format", "ccsynth-synthesis"}, {"version", 1},
                          {"method", o.method},            {"topology", topology.name},
                          {"collective", result.algorithm.collective.name},
                          {"status", to_string(outcome.status)},
                          {"synthesis_seconds", seconds},  {"details", outcome.details},
                          {"ok", result.ok()},             {"program", to_json(result)}};
    if (ring) doc["ring_baseline"] = to_json(*ring);
    if (!o.output.empty() && result.ok()) doc["output"] = o.output;
    std::cout << doc.dump(2) << "\n";
  } else {
    std::cout << fmt::format("{} {} on {}: {} in {:.2f} s, {} steps, {} ops\n", o.method,
                             result.algorithm.collective.name, topology.name,
                             to_string(outcome.status), seconds, result.algorithm.num_steps(),
                             result.algorithm.ops.size());
    if (!outcome.details.empty()) std::cout << outcome.details.dump(2) << "\n";
    if (!result.ok()) {
      std::cout << "verification FAILED:\n"
                << result.algorithm_report.summary() << result.program_report.summary();
    } else {
      const SizedResult& chosen = result.results.front();
      std::cout << fmt::format("verified: algorithm and program correct (compiled with {} "
                               "instance{}, fusion {}{})\n",
                               chosen.instances, chosen.instances == 1 ? "" : "s",
                               chosen.fused ? "on" : "off",
                               chosen.schedule_order ? ", in start-time order" : "");
      std::vector<std::string> names = {o.method};
      std::vector<const Evaluated*> rows = {&result};
      if (ring && ring->ok()) {
        names.push_back("ring");
        rows.push_back(ring.get());
      }
      std::cout << results_table(names, rows);
      if (!o.output.empty()) std::cout << "wrote " << o.output << "\n";
    }
  }
  return result.ok() ? kExitOk : kExitCheckFailed;
}

}  // namespace

void add_synth_command(CLI::App& app, CommandResult& result) {
  auto methods = std::make_shared<std::vector<SynthMethod>>(
      std::vector<SynthMethod>{taccl_method(), sccl_method(), tacos_method()});
  std::string method_help = "synthesis method:";
  for (const auto& m : *methods) method_help += "\n  " + m.name + ": " + m.description;
  CLI::App* cmd = app.add_subcommand(
      "synth",
      "Synthesize an algorithm for a collective on a topology, verify and compile it, simulate it "
      "against the ring baseline and the lower bound, and write MSCCL XML.");
  auto o = std::make_shared<SynthCommonOptions>();
  cmd->add_option("--method", o->method, method_help)->required();
  cmd->add_option("--topology,-t", o->topology, "built-in topology name or topology JSON file")
      ->required();
  cmd->add_option("--collective,-c", o->collective, "collective (allgather, alltoall, ...)")
      ->capture_default_str();
  cmd->add_option("--size,-s", o->size, "per-rank input size for the cost model (e.g. 1K, 64M)")
      ->capture_default_str();
  cmd->add_option("--chunks", o->chunks, "chunks per rank (SCCL's C)")->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--root", o->root, "root rank of rooted collectives")->capture_default_str();
  cmd->add_option("--time-limit", o->time_limit_s, "solver time limit per stage, seconds")
      ->capture_default_str()->check(kPositive);
  cmd->add_option("--instances", o->instances, "compiler instances (parallel copies)")
      ->capture_default_str()->check(kPositive);
  cmd->add_option("--proto", o->protocol, "protocol: Simple, LL or LL128")->capture_default_str();
  cmd->add_option("--xml-dialect", o->xml_dialect, "classic or executor")->capture_default_str();
  cmd->add_option("--output,-o", o->output,
                  "write the MSCCL XML program here: the fastest at --size of the compilations "
                  "with and without fusion (timed algorithms also in start-time order; the "
                  "verified line says which)");
  cmd->add_option("--save-algorithm", o->algorithm_output,
                  "also write the synthesized algorithm as ccsynth-algorithm JSON (input of "
                  "`ccsynth compile`), even when verification fails");
  cmd->add_flag("--json", o->json, "print one JSON document on stdout");
  for (const SynthMethod& m : *methods) m.add_options(*cmd);
  cmd->callback([o, methods, &result] { result.exit_code = run_synth(*o, *methods); });
}

}  // namespace ccsynth::cli
