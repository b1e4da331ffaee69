// `ccsynth tune -t TOPO -c COLL [--sizes 1K:1G] [--sketch S] -o DIR`: the tuner (plan/tune.h)
// over a size sweep; writes one MSCCL XML file per size range and DIR/tuning.json.

#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/formats/json_io.h"
#include "ccsynth/plan/tune.h"
#include "ccsynth/topologies/library.h"
#include "cli/command.h"

namespace ccsynth::cli {

namespace {

struct TuneFlags {
  std::string topology;
  std::string collective = "allgather";
  std::string sizes = "1K:1G";
  int factor = 4;
  std::string sketch;
  std::string output;
  std::string dialect = "executor";
  double time_limit_s = 10;
  std::vector<std::string> skip;
  bool json = false;
  int threads = 0;
};

// "FROM:TO" (or one size) with the --factor step.
std::vector<int64_t> parse_sizes(const std::string& text, int factor) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return {parse_bytes(text, "--sizes")};
  const int64_t from = parse_bytes(text.substr(0, colon), "--sizes");
  const int64_t to = parse_bytes(text.substr(colon + 1), "--sizes");
  try {
    return plan::size_sweep(from, to, factor);
  } catch (const UserError& e) {
    throw UserError("", "--sizes", e.reason());
  }
}

void print_table(const plan::TuneResult& r) {
  std::cout << fmt::format("{:>10}  {:<22} {:>12} {:>12} {:>8} {:>9}\n", "size", "winner",
                           "time_us", "ring_us", "vs_ring", "x_bound");
  for (const plan::TunedSize& s : r.sizes) {
    std::cout << fmt::format("{:>10}  {:<22} {:>12.2f} {:>12.2f} {:>8.3f} {:>9.3f}\n",
                             format_bytes(s.bytes), s.winner, s.time_us, s.ring_time_us,
                             s.ring_time_us > 0 ? s.ring_time_us / s.time_us : 0.0,
                             s.ratio_to_bound());
  }
  std::cout << "entries:\n";
  for (const plan::TuneEntry& e : r.entries) {
    std::cout << fmt::format(
        "  [{}, {}]  {}  {}\n", e.min_bytes,
        e.max_bytes == 0 ? std::string("unlimited") : std::to_string(e.max_bytes), e.label, e.file);
  }
  std::cout << fmt::format("{} verified candidates, {} simulations in {:.2f} s\n", r.candidates,
                           r.simulations, r.seconds);
}

int run_tune(const TuneFlags& f) {
  plan::TuneRequest request;
  request.topology = topologies::resolve_topology(f.topology);
  request.kind = parse_collective_kind(f.collective, "--collective");
  request.sizes = parse_sizes(f.sizes, f.factor);
  request.sketch = f.sketch;
  request.dialect = formats::parse_xml_dialect(f.dialect);
  request.time_limit_s = f.time_limit_s;
  request.skip = f.skip;
  request.threads = f.threads;
  request.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  // Fail before minutes of tuning when the output directory cannot be made.
  std::error_code error;
  std::filesystem::create_directories(f.output, error);
  if (error)
    throw UserError(f.output, "--output", "cannot create the directory: " + error.message());
  const plan::TuneResult result = plan::tune(request);
  plan::write_tuning_dir(result, f.output);
  if (f.json) {
    std::cout << formats::dump_json(plan::tuning_json(result));
  } else {
    print_table(result);
    std::cout << "wrote " << f.output << "/tuning.json\n";
  }
  return kExitOk;
}

}  // namespace

void add_tune_command(CLI::App& app, CommandResult& result) {
  CLI::App* cmd = app.add_subcommand(
      "tune",
      "Run every applicable method over a size sweep, keep the fastest verified program per size "
      "range, and write them as MSCCL XML with minBytes/maxBytes plus DIR/tuning.json.");
  auto f = std::make_shared<TuneFlags>();
  cmd->add_option("--topology,-t", f->topology, "built-in topology name or topology JSON file")
      ->required();
  cmd->add_option("--collective,-c", f->collective, "allgather, reducescatter, allreduce, ...")
      ->capture_default_str();
  cmd->add_option("--sizes", f->sizes, "per-rank sizes FROM:TO (or one size)")
      ->capture_default_str();
  cmd->add_option("--factor", f->factor, "step factor of the size sweep")
      ->capture_default_str()
      ->check(CLI::Range(2, 1 << 20));
  cmd->add_option("--sketch", f->sketch, "TACCL sketch JSON: also run taccl");
  cmd->add_option("--output,-o", f->output, "directory for the XML files and tuning.json")
      ->required();
  cmd->add_option("--xml-dialect", f->dialect, "classic or executor")->capture_default_str();
  cmd->add_option("--time-limit", f->time_limit_s, "sccl, taccl: solver time limit per stage, s")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--skip", f->skip,
                  "leave out a method label (e.g. sccl, tacos, trees, ring, nccl_dbt)");
  cmd->add_option("--threads", f->threads,
                  "threads compiling, verifying and simulating variants (0: one per core)")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  cmd->add_flag("--json", f->json, "print tuning.json on stdout instead of the table");
  cmd->footer("Exit codes: 0 written, 2 bad input. See docs/tuning.md.");
  cmd->callback([f, &result] { result.exit_code = run_tune(*f); });
}

}  // namespace ccsynth::cli
