// `ccsynth demo`: ccsynth's main job on a built-in default (README, first command). For one
// topology and collective it builds the `nccl` reference (what NCCL would run,
// plan/reference.h), synthesizes with TACOS and SCCL (and TACCL when a sketch is given),
// verifies every algorithm and its compiled program, simulates them over a range of sizes and
// prints, per size, the best one against nccl and the physical lower bound.

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "ccsynth/core/error.h"
#include "ccsynth/core/timing.h"
#include "ccsynth/core/units.h"
#include "ccsynth/formats/collective_json.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/plan/evaluate.h"
#include "ccsynth/plan/html_report.h"
#include "ccsynth/plan/reference.h"
#include "ccsynth/plan/report.h"
#include "ccsynth/runtime/harness.h"
#include "ccsynth/synth/registry.h"
#include "ccsynth/synth/sccl.h"
#include "ccsynth/topologies/library.h"
#include "cli/command.h"

namespace ccsynth::cli {

namespace {

struct DemoOptions {
  std::string topology = "dgx1";
  std::string collective = "allgather";
  std::string sizes = "1K:1G:4";
  std::string synth_size = "1M";
  std::string sketch;
  double time_limit_s = 30;  // the DGX-1 frontier needs ~8 s CPU; room for a loaded machine
  std::vector<int> instances = {1, 2, 4};
  int max_sccl_ranks = 16;
  std::string output_dir;
  std::string report;
  bool json = false;
  bool csv = false;
};

// One algorithm the demo compares: how it was made, how long that took, what became of it.
struct Candidate {
  std::string name;
  double synth_seconds = 0;
  std::string skipped;  // why no algorithm, or empty
  std::unique_ptr<plan::Evaluated> evaluated;
  std::optional<runtime::HarnessResult> executed;  // the program run on the CPU runtime
};

// Runs a verified program once on the CPU runtime with random float32 data, 1024 elements per
// chunk, and compares the outputs with the directly computed collective.
runtime::HarnessResult execute(const Program& program) {
  runtime::HarnessOptions options;
  options.check = true;
  const int64_t chunks = std::max(program.gpus.front().input_chunks, 1);
  return runtime::run_program(program, chunks * 1024 * 4, options);
}

// Runs `make` and evaluates its algorithm; a UserError (method does not apply) or no algorithm
// (solver limit) becomes a skipped candidate with the reason.
Candidate make_candidate(const std::string& name,
                         const std::function<std::optional<Algorithm>()>& make,
                         const Topology& topology, const std::vector<int>& instances,
                         const std::vector<int64_t>& sizes) {
  Candidate c;
  c.name = name;
  std::cerr << "demo: " << name << "...\n";
  const auto start = std::chrono::steady_clock::now();
  std::optional<Algorithm> algorithm;
  try {
    algorithm = make();
  } catch (const UserError& e) {
    c.skipped = e.what();
  }
  c.synth_seconds = seconds_since(start);
  if (!algorithm) {
    if (c.skipped.empty()) c.skipped = "no algorithm within the time limit";
    return c;
  }
  compiler::CompileOptions options;
  options.name = name;
  plan::VariantSpace space;
  space.instances = instances;
  plan::EvaluateOptions evaluate;
  evaluate.topology = &topology;
  evaluate.sizes = sizes;
  c.evaluated = std::make_unique<plan::Evaluated>(
      plan::evaluate_variants(*algorithm, options, space, evaluate));
  if (c.evaluated->ok()) c.executed = execute(c.evaluated->program);
  return c;
}

// The nccl reference: every algorithm NCCL would run, the fastest per size kept.
Candidate nccl_candidate(const Topology& topology, const Collective& collective,
                         const std::vector<int>& instances, const std::vector<int64_t>& sizes) {
  Candidate c;
  c.name = "nccl";
  std::cerr << "demo: nccl...\n";
  const auto start = std::chrono::steady_clock::now();
  plan::VariantSpace space;
  space.instances = instances;
  plan::EvaluateOptions evaluate;
  evaluate.topology = &topology;
  evaluate.sizes = sizes;
  std::optional<plan::Evaluated> e =
      plan::evaluate_nccl(collective, topology, compiler::CompileOptions{}, space, evaluate);
  c.synth_seconds = seconds_since(start);
  if (!e) {
    c.skipped = "no NCCL algorithm (ring, tree, p2p, chain) builds it";
    return c;
  }
  c.evaluated = std::make_unique<plan::Evaluated>(std::move(*e));
  if (c.evaluated->ok()) c.executed = execute(c.evaluated->program);
  return c;
}

// SCCL's Pareto frontier (sec. 3.7), searched once for both of its ends.
class ScclFrontier {
 public:
  ScclFrontier(const Collective& collective, const Topology& topology, const DemoOptions& o)
      : collective_(collective), topology_(topology), options_(o) {}

  /// The latency-optimal end (fewest steps) or the bandwidth end (lowest R/C found).
  std::optional<Algorithm> point(bool bandwidth_end) {
    if (!result_) result_ = search();
    if (result_->frontier.empty()) return std::nullopt;
    return bandwidth_end ? result_->frontier.back().algorithm : result_->frontier.front().algorithm;
  }

 private:
  synth::ParetoResult search() const {
    if (topology_.num_ranks > options_.max_sccl_ranks) {
      throw UserError(
          "", "topology",
          fmt::format("SCCL is run up to {} ranks (--max-sccl-ranks)", options_.max_sccl_ranks));
    }
    synth::ParetoOptions options;
    options.time_limit_s = options_.time_limit_s;
    options.solve.time_limit_s = options_.time_limit_s;
    options.max_chunks = 2 * topology_.num_ranks;
    return synth::synthesize_sccl_pareto(collective_.kind, synth::paper_bandwidth_model(topology_),
                                         options, collective_.root);
  }

  const Collective& collective_;
  const Topology& topology_;
  const DemoOptions& options_;
  std::optional<synth::ParetoResult> result_;
};

std::vector<Candidate> make_candidates(const Topology& topology, const Collective& collective,
                                       const DemoOptions& o, const std::vector<int64_t>& sizes) {
  const std::vector<int> instances = o.instances;
  std::vector<Candidate> out;
  out.push_back(nccl_candidate(topology, collective, instances, sizes));
  out.push_back(make_candidate(
      "tacos",
      [&]() -> std::optional<Algorithm> {
        synth::SynthOptions options;
        options.bytes = parse_bytes(o.synth_size, "--synth-size");
        return synth::synthesize(synth::find_synthesizer("tacos"), topology, collective, options)
            .algorithm;
      },
      topology, instances, sizes));
  ScclFrontier sccl(collective, topology, o);
  out.push_back(make_candidate(
      "sccl-lat", [&] { return sccl.point(false); }, topology, instances, sizes));
  out.push_back(make_candidate(
      "sccl-bw", [&] { return sccl.point(true); }, topology, instances, sizes));
  if (!o.sketch.empty()) {
    out.push_back(make_candidate(
        "taccl",
        [&]() -> std::optional<Algorithm> {
          synth::SynthOptions options;
          options.time_limit_s = o.time_limit_s;
          options.bytes = parse_bytes(o.synth_size, "--synth-size");
          options.params = {{"sketch", o.sketch}};
          return synth::synthesize(synth::find_synthesizer("taccl"), topology, collective, options)
              .algorithm;
        },
        topology, instances, sizes));
  }
  return out;
}

std::string candidate_line(const Candidate& c) {
  if (!c.evaluated) return fmt::format("  {:<9} skipped: {}\n", c.name, c.skipped);
  const plan::Evaluated& e = *c.evaluated;
  if (!e.ok()) {
    return fmt::format("  {:<9} VERIFICATION FAILED\n{}{}", c.name, e.algorithm_report.summary(),
                       e.program_report.summary());
  }
  const int threadblocks = e.program.total_threadblocks();
  const std::string run = c.executed->ok
                              ? fmt::format("ran correctly on the CPU runtime ({} values checked)",
                                            c.executed->checked_elements)
                              : "FAILED on the CPU runtime: " + c.executed->message;
  return fmt::format(
      "  {:<9} {:>3} steps {:>5} sends, {:>4} threadblocks, made in {:.2f} s; "
      "verified; {}\n",
      c.name, e.algorithm.num_steps(), e.algorithm.ops.size(), threadblocks, c.synth_seconds, run);
}

nlohmann::json candidate_json(const Candidate& c) {
  nlohmann::json doc = c.evaluated ? plan::to_json(*c.evaluated) : nlohmann::json{{"ok", false}};
  doc["name"] = c.name;
  doc["synth_seconds"] = c.synth_seconds;
  if (c.executed) {
    doc["executed"] = {{"ok", c.executed->ok},
                       {"bytes", c.executed->bytes},
                       {"checked_elements", c.executed->checked_elements},
                       {"message", c.executed->message}};
  }
  if (!c.skipped.empty()) doc["skipped"] = c.skipped;
  return doc;
}

void write_programs(const std::vector<Candidate>& candidates, const std::string& dir) {
  std::filesystem::create_directories(dir);
  for (const Candidate& c : candidates) {
    if (!c.evaluated || !c.evaluated->ok()) continue;
    const std::string path = (std::filesystem::path(dir) / (c.name + ".xml")).string();
    write_xml_file(path, c.evaluated->program, formats::XmlDialect::kExecutor);
    std::cerr << "demo: wrote " << path << "\n";
  }
}

// The HTML page of the run (plan/html_report.h): every candidate, skipped ones included.
void write_report(const std::vector<Candidate>& candidates, const Topology& topology,
                  const Collective& collective, const std::string& path) {
  std::vector<plan::ReportCandidate> shown;
  for (const Candidate& c : candidates) {
    plan::ReportCandidate r;
    r.name = c.name;
    r.evaluated = c.evaluated.get();
    r.skipped = c.skipped;
    r.synthesis_seconds = c.synth_seconds;
    shown.push_back(std::move(r));
  }
  write_text_file(path, plan::html_report(topology, collective, shown));
  std::cerr << "demo: wrote report " << path << "\n";
}

int run_demo(const DemoOptions& o) {
  const Topology topology = topologies::resolve_topology(o.topology);
  const Collective collective = formats::resolve_collective(o.collective, topology.num_ranks, 1, 0);
  const std::vector<int64_t> sizes = parse_byte_list(o.sizes, "--size");
  const std::vector<Candidate> candidates = make_candidates(topology, collective, o, sizes);
  if (!o.output_dir.empty()) write_programs(candidates, o.output_dir);
  if (!o.report.empty()) write_report(candidates, topology, collective, o.report);

  std::vector<std::string> names;
  std::vector<const plan::Evaluated*> verified;
  bool all_ok = true;
  for (const Candidate& c : candidates) {
    if (!c.evaluated) continue;
    all_ok = all_ok && c.evaluated->ok() && c.executed && c.executed->ok;
    if (!c.evaluated->ok()) continue;
    names.push_back(c.name);
    verified.push_back(c.evaluated.get());
  }
  if (o.json) {
    nlohmann::json doc = {{"format", "ccsynth-demo"},
                          {"version", 1},
                          {"topology", topology.name},
                          {"collective", collective.name},
                          {"ok", all_ok},
                          {"candidates", nlohmann::json::array()},
                          {"best", plan::best_json(names, verified)}};
    for (const Candidate& c : candidates) doc["candidates"].push_back(candidate_json(c));
    std::cout << doc.dump(2) << "\n";
    return all_ok ? kExitOk : kExitCheckFailed;
  }
  if (o.csv) {
    print_csv(plan::results_rows(names, verified));
    return all_ok ? kExitOk : kExitCheckFailed;
  }
  std::cout << fmt::format("{} on {}: {} ranks, {} links{}\n", collective.name, topology.name,
                           topology.num_ranks, topology.links.size(),
                           topology.switches.empty()
                               ? std::string()
                               : fmt::format(", {} switches", topology.switches.size()));
  for (const Candidate& c : candidates) std::cout << candidate_line(c);
  std::cout << "\nsimulated time per size (bytes per rank), best against nccl and "
               "the lower bound:\n"
            << plan::results_table(names, verified);
  return all_ok ? kExitOk : kExitCheckFailed;
}

}  // namespace

void add_demo_command(CLI::App& app, CommandResult& result) {
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "ccsynth's main job on a built-in default: the nccl reference, TACOS and SCCL (TACCL with "
      "--sketch) synthesis, verification of every algorithm and program, simulation against the "
      "lower bound over a range of sizes.");
  auto o = std::make_shared<DemoOptions>();
  cmd->add_option("--topology,-t", o->topology, "built-in topology name or topology JSON file")
      ->capture_default_str();
  cmd->add_option("--collective,-c", o->collective,
                  "allgather, reducescatter, allreduce, broadcast, reduce, alltoall, ...")
      ->capture_default_str();
  cmd->add_option("--size,-s", o->sizes,
                  "bytes per rank to simulate: a list (1K,1M) or a range MIN:MAX[:FACTOR]")
      ->capture_default_str();
  cmd->add_option("--synth-size", o->synth_size, "message size TACOS optimizes for")
      ->capture_default_str();
  cmd->add_option("--sketch", o->sketch, "TACCL communication sketch; adds a TACCL candidate");
  cmd->add_option("--instances", o->instances,
                  "compiler instance counts tried for every algorithm; the fastest per size wins")
      ->delimiter(',')
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--time-limit", o->time_limit_s, "per-solver time limit, seconds")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--max-sccl-ranks", o->max_sccl_ranks, "skip SCCL on larger topologies")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--output-dir", o->output_dir, "write every verified program as DIR/NAME.xml");
  cmd->add_option("--report", o->report,
                  "write the run as one self-contained HTML page (charts, link utilization, "
                  "timeline; docs/formats.md \"HTML report\")");
  cmd->add_flag("--json", o->json, "print one JSON document on stdout");
  add_csv_flag(cmd, o->csv, "size and candidate (the results table)");
  cmd->callback([o, &result] { result.exit_code = run_demo(*o); });
}

}  // namespace ccsynth::cli
