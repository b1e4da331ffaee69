// `ccsynth report -t T -c C --method M,... --xml FILE... --from SYNTH.json... -o report.html`:
// one self-contained HTML page comparing methods (run through the planner), MSCCL XML programs
// and the programs earlier `synth --json -o` runs wrote with the nccl reference and the lower
// bound (plan/html_report.h, docs/formats.md "HTML report").

#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/formats/collective_json.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/formats/tuning_json.h"
#include "ccsynth/plan/html_report.h"
#include "ccsynth/plan/planner.h"
#include "ccsynth/plan/reference.h"
#include "ccsynth/synth/registry.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/verify_program.h"
#include "cli/command.h"

namespace ccsynth::cli {
namespace {

struct ReportFlags {
  std::string topology;
  std::string collective;
  std::vector<std::string> methods;
  std::vector<std::string> xml_files;
  std::vector<std::string> from_files;
  std::string sizes = "1K:1G:4";
  std::string detail_size;
  std::vector<int> instances = {1};
  double time_limit_s = 60;
  bool no_nccl = false;
  std::string title;
  std::string output;
};

// A candidate the page shows; owns what ReportCandidate points at.
struct Owned {
  plan::ReportCandidate candidate;
  std::unique_ptr<plan::Evaluated> evaluated;
};

Owned from_plan(const std::string& method, plan::PlanResult result) {
  Owned out;
  out.candidate.name = method;
  out.candidate.status = to_string(result.synthesis.status);
  out.candidate.synthesis_seconds = result.synthesis_seconds;
  out.candidate.stats = result.synthesis.stats;
  if (result.program) {
    out.evaluated = std::make_unique<plan::Evaluated>(std::move(*result.program));
  } else {
    out.candidate.skipped = "no algorithm (" + out.candidate.status + ")";
  }
  return out;
}

Owned method_candidate(const std::string& method, const ReportFlags& f, const Topology& topology,
                       const Collective& collective, const std::vector<int64_t>& sizes) {
  std::cerr << "report: " << method << "...\n";
  plan::PlanRequest request;
  request.topology = topology;
  request.method = synth::find_synthesizer(method, "--method").name;  // unknown: exit 2
  request.collective = collective;
  request.sizes = sizes;
  request.synth.time_limit_s = f.time_limit_s;
  request.variants.instances = f.instances;
  request.compare_with_nccl = false;
  request.dialect = formats::XmlDialect::kExecutor;
  try {
    return from_plan(method, plan::plan(request));
  } catch (const UserError& e) {
    Owned skipped;  // the method does not apply to this topology or collective
    skipped.candidate.name = method;
    skipped.candidate.skipped = e.what();
    return skipped;
  }
}

Owned xml_candidate(const std::string& path, const Topology& topology, const Collective& collective,
                    const std::vector<int64_t>& sizes) {
  const Program program = formats::read_msccl_xml_file(path);
  // Checked against its own chunking of the collective (as `verify` and `simulate` do).
  Collective own = collective;
  try {
    own = verify::collective_of(program);
  } catch (const UserError&) {
    // a custom program: checked against --collective
  }
  if (own.kind != collective.kind) {
    throw UserError(
        path, "coll",
        "the program is a " + to_string(own.kind) + ", the report compares " + collective.name);
  }
  plan::EvaluateOptions evaluate;
  evaluate.topology = &topology;
  evaluate.sizes = sizes;
  Owned out;
  out.candidate.name = program.name.empty() ? path : program.name;
  out.evaluated = std::make_unique<plan::Evaluated>(plan::evaluate_program(program, own, evaluate));
  return out;
}

// A `synth --json -o OUT.xml` document: its method, status and statistics, and OUT.xml (as
// written, else next to the document).
struct SynthRun {
  nlohmann::json doc;
  std::string xml;
};

// The program file `name` a document at `path` refers to: as given, else next to the document.
std::string program_next_to(const std::string& path, const std::string& field,
                            const std::string& name) {
  std::filesystem::path xml = name;
  if (!std::filesystem::exists(xml)) xml = std::filesystem::path(path).parent_path() / xml;
  if (!std::filesystem::exists(xml)) throw UserError(path, field, "program " + name + " not found");
  return xml.string();
}

// A tuner's table (`tune -o DIR`: DIR/tuning.json): one run per entry, named by its method
// and size range, with the table's topology and collective.
std::vector<SynthRun> tuning_runs(const nlohmann::json& doc, const std::string& path) {
  const std::vector<formats::TuningTableEntry> entries = formats::read_tuning_table(doc, path);
  std::vector<SynthRun> runs;
  for (size_t i = 0; i < entries.size(); ++i) {
    const formats::TuningTableEntry& e = entries[i];
    nlohmann::json run{{"format", "ccsynth-synthesis"},
                       {"method", fmt::format("{} [{}, {})", e.method, e.min_bytes, e.max_bytes)},
                       {"status", "tuned"}};
    for (const char* key : {"topology", "collective"})
      if (doc.contains(key)) run[key] = doc[key];
    runs.push_back(
        {std::move(run), program_next_to(path, fmt::format("entries[{}].file", i), e.file)});
  }
  return runs;
}

// A `synth --json -o X.xml` document (one run) or a tuner's tuning.json (one run per entry).
std::vector<SynthRun> read_runs(const std::string& path) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw UserError(path, "", std::string("not JSON: ") + e.what());
  }
  const std::string format = doc.is_object() ? doc.value("format", "") : "";
  if (format == "ccsynth-tuning") return tuning_runs(doc, path);
  if (format != "ccsynth-synthesis") {
    throw UserError(path, "format",
                    "expected a ccsynth-synthesis document (synth --json) or a ccsynth-tuning "
                    "table (tune -o DIR: DIR/tuning.json)");
  }
  if (!doc.contains("output") || !doc["output"].is_string()) {
    throw UserError(path, "output", "the run wrote no program (run synth with -o FILE.xml)");
  }
  const std::string xml = program_next_to(path, "output", doc["output"].get<std::string>());
  return {{std::move(doc), xml}};
}

Owned synth_run_candidate(const SynthRun& run, const Topology& topology,
                          const Collective& collective, const std::vector<int64_t>& sizes) {
  Owned out = xml_candidate(run.xml, topology, collective, sizes);
  out.candidate.name = run.doc.value("method", out.candidate.name);
  out.candidate.status = run.doc.value("status", "");
  out.candidate.synthesis_seconds = run.doc.value("synthesis_seconds", 0.0);
  out.candidate.stats = run.doc.value("details", nlohmann::json());
  return out;
}

Owned nccl_candidate(const Topology& topology, const Collective& collective, const ReportFlags& f,
                     const std::vector<int64_t>& sizes) {
  std::cerr << "report: nccl...\n";
  plan::VariantSpace space;
  space.instances = f.instances;
  plan::EvaluateOptions evaluate;
  evaluate.topology = &topology;
  evaluate.sizes = sizes;
  Owned out;
  out.candidate.name = "nccl";
  std::optional<plan::Evaluated> e =
      plan::evaluate_nccl(collective, topology, compiler::CompileOptions{}, space, evaluate);
  if (e) {
    out.evaluated = std::make_unique<plan::Evaluated>(std::move(*e));
  } else {
    out.candidate.skipped = "no NCCL algorithm (ring, tree, p2p, chain) builds it";
  }
  return out;
}

int run_report(const ReportFlags& f) {
  if (f.methods.empty() && f.xml_files.empty() && f.from_files.empty() && f.no_nccl) {
    throw UserError("", "--method/--xml/--from",
                    "nothing to compare: give a method, a program or a synth run");
  }
  std::vector<SynthRun> runs;
  for (const std::string& path : f.from_files) {
    for (SynthRun& run : read_runs(path)) runs.push_back(std::move(run));
  }
  // Without -t / -c the first synth run's topology and collective.
  const auto from_run = [&](const std::string& given, const char* key, const char* flag) {
    if (!given.empty()) return given;
    if (runs.empty() || !runs.front().doc.contains(key)) {
      if (std::string(key) == "collective") return std::string("allgather");
      throw UserError("", flag, "required (or give --from SYNTH.json)");
    }
    return runs.front().doc[key].get<std::string>();
  };
  const Topology topology =
      topologies::resolve_topology(from_run(f.topology, "topology", "--topology"));
  const Collective collective = formats::resolve_collective(
      from_run(f.collective, "collective", "--collective"), topology.num_ranks, 1, 0);
  const std::vector<int64_t> sizes = parse_byte_list(f.sizes, "--size");
  if (sizes.empty()) throw UserError("", "--size", "no sizes given");
  std::vector<Owned> owned;
  if (!f.no_nccl) owned.push_back(nccl_candidate(topology, collective, f, sizes));
  for (const std::string& method : f.methods) {
    owned.push_back(method_candidate(method, f, topology, collective, sizes));
  }
  for (const std::string& path : f.xml_files) {
    owned.push_back(xml_candidate(path, topology, collective, sizes));
  }
  for (const SynthRun& run : runs) {
    owned.push_back(synth_run_candidate(run, topology, collective, sizes));
  }
  std::vector<plan::ReportCandidate> candidates;
  bool all_ok = true;
  bool any_ok = false;
  for (Owned& o : owned) {
    o.candidate.evaluated = o.evaluated.get();
    all_ok = all_ok && (!o.evaluated || o.evaluated->ok());
    any_ok = any_ok || (o.evaluated && o.evaluated->ok());
    candidates.push_back(o.candidate);
  }
  if (!any_ok) {
    std::cerr << "report: no candidate verified; nothing to plot\n";
    for (const Owned& o : owned) {
      if (o.evaluated) {
        std::cerr << o.candidate.name << ":\n"
                  << o.evaluated->algorithm_report.summary()
                  << o.evaluated->program_report.summary();
      }
    }
    return kExitCheckFailed;
  }
  plan::ReportOptions options;
  options.title = f.title;
  if (!f.detail_size.empty()) options.detail_bytes = parse_bytes(f.detail_size, "--detail-size");
  write_text_file(f.output, plan::html_report(topology, collective, candidates, options));
  std::cout << "wrote " << f.output << "\n";
  return all_ok ? kExitOk : kExitCheckFailed;
}

}  // namespace

void add_report_command(CLI::App& app, CommandResult& result) {
  auto f = std::make_shared<ReportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Write one self-contained HTML page (inline SVG, no scripts, no network) comparing methods "
      "and MSCCL XML programs with the nccl reference and the lower bound: time and busbw "
      "against size, link utilization on the topology, a timeline of links and threadblocks, "
      "verification verdicts and synthesis statistics");
  cmd->add_option("-t,--topology", f->topology,
                  "Built-in topology name or topology JSON file (default: the first --from "
                  "run's)");
  cmd->add_option("-c,--collective", f->collective,
                  "Built-in collective name or collective JSON file (default: the first --from "
                  "run's, else allgather)");
  cmd->add_option("-m,--method", f->methods,
                  "Methods to synthesize and compare (registered names: tacos, sccl, ring, ...)")
      ->delimiter(',');
  cmd->add_option("--xml", f->xml_files, "MSCCL-IR XML programs to compare (repeatable)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--from", f->from_files,
                  "ccsynth-synthesis documents of earlier `synth --json -o OUT.xml` runs (their "
                  "programs, with the method's status and statistics) or a tuner's "
                  "DIR/tuning.json (every entry's program) (repeatable)")
      ->check(CLI::ExistingFile);
  cmd->add_option("-s,--size", f->sizes,
                  "Bytes per rank to simulate: a list (1K,1M) or a range MIN:MAX[:FACTOR]")
      ->capture_default_str();
  cmd->add_option("--detail-size", f->detail_size,
                  "Size of the link-utilization view and the timeline (default: the largest)");
  cmd->add_option("--instances", f->instances,
                  "Compiler instance counts tried for every method; the fastest per size wins")
      ->delimiter(',')
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--time-limit", f->time_limit_s, "Per-solver time limit, seconds")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_flag("--no-nccl", f->no_nccl, "Leave out the nccl reference");
  cmd->add_option("--title", f->title, "Page title (default: COLLECTIVE on TOPOLOGY)");
  cmd->add_option("-o,--output", f->output, "The HTML file to write")->required();
  cmd->footer(
      "Exit codes: 0 ok, 1 some candidate failed verification (the page shows it), 2 bad "
      "input. See docs/formats.md \"HTML report\".");
  cmd->callback([f, &result] { result.exit_code = run_report(*f); });
}

}  // namespace ccsynth::cli
