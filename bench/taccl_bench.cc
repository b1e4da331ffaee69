// TACCL synthesis benchmark: synthesis time of the paper's table 2 cases against the
// Gurobi times reported there, and the simulated time of the synthesized algorithms against the
// ring baseline (1 KB - 1 GB) and the lower bound (1 GB).
//
//   taccl_bench [--time-limit SEC | --budget] [--no-sim] [--no-relays] [CASE...]  (CASE e.g. allgather:dgx2-sk-1)
//   taccl_bench --custom COLLECTIVE SKETCH.json TOPOLOGY     (one extra case, paper time 0)
//
// --no-relays routes on shortest paths only (TacclOptions::intra_node_relays = false).
// --budget gives each MILP stage 80% of the paper's time divided by the number of MILP stages
// (a stage that hits its limit returns its incumbent with status timed-out and its gap).
//
// Sketches come from examples/sketches/ (CCSYNTH_SOURCE_DIR). Programs are evaluated by the
// planner (plan/evaluate.h) with 1, 2, 4 and 8 instances, with and without fusion, in step and
// start-time order, the fastest per size; the nccl reference (plan/reference.h: NCCL's rings, one per NIC
// on clusters) gets the same choice.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/plan/evaluate.h"
#include "ccsynth/plan/reference.h"
#include "ccsynth/synth/taccl.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/verify_algorithm.h"

namespace {

using namespace ccsynth;

struct Case {
  CollectiveKind kind;
  std::string sketch;
  std::string topology;
  double paper_seconds;  // TACCL table 2 (Gurobi)
};

std::vector<Case>& cases() {
  static std::vector<Case> kCases = {
      {CollectiveKind::kAllGather, "dgx2-sk-1", "dgx2x2", 35.8},
      {CollectiveKind::kAllGather, "dgx2-sk-2", "dgx2x2", 11.3},
      {CollectiveKind::kAllGather, "ndv2-sk-1", "ndv2x2", 2.6},
      {CollectiveKind::kAllToAll, "dgx2-sk-2", "dgx2x2", 92.5},
      {CollectiveKind::kAllToAll, "ndv2-sk-2", "ndv2x2", 8.4},
      {CollectiveKind::kAllReduce, "dgx2-sk-1", "dgx2x2", 6.1},
      {CollectiveKind::kAllReduce, "ndv2-sk-1", "ndv2x2", 0.3},
  };
  return kCases;
}

// Every program is compiled with 1, 2, 4 and 8 instances (TACCL sec. 7 tries 1 and 8), with
// and without fusion, and for timed algorithms also in start-time order; per size the fastest.
plan::Evaluated evaluate_all(const Algorithm& a, const Topology& t,
                             const std::vector<int64_t>& sizes) {
  plan::VariantSpace space;
  space.instances = {1, 2, 4, 8};
  plan::EvaluateOptions options;
  options.topology = &t;
  options.sizes = sizes;
  return plan::evaluate_variants(a, compiler::CompileOptions{}, space, options);
}

void simulate_case(const Case& c, const Algorithm& a, const Topology& t) {
  std::vector<int64_t> sizes;
  for (int64_t bytes = 1024; bytes <= (int64_t{1} << 30); bytes *= 4) sizes.push_back(bytes);
  const plan::Evaluated ours = evaluate_all(a, t, sizes);
  plan::VariantSpace space;
  space.instances = {1, 2, 4, 8};
  plan::EvaluateOptions options;
  options.topology = &t;
  options.sizes = sizes;
  const std::optional<plan::Evaluated> base =
      plan::evaluate_nccl(a.collective, t, compiler::CompileOptions{}, space, options);
  std::printf("  nccl reference: %s, %d chunk(s) per rank\n",
              base ? base->options.name.c_str() : "none",
              base ? base->algorithm.collective.chunks_per_rank : 0);
  std::printf(
      "  %8s %12s %6s %12s %5s %8s %8s   (inst: instances, n = no fusion, "
      "s = start-time order)\n",
      "size", "taccl_us", "inst", "nccl_us", "inst", "speedup", "vs_lb");
  int slower = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const plan::SizedResult& r = ours.results[i];
    const plan::SizedResult b = base ? base->results[i] : plan::SizedResult{};
    if (base && r.time_us > b.time_us * 1.0001) ++slower;
    std::printf("  %8s %12.1f %4d%c%c %12.1f %4d%c %8.2f %8.2f\n", format_bytes(sizes[i]).c_str(),
                r.time_us, r.instances, r.fused ? ' ' : 'n', r.schedule_order ? 's' : ' ',
                b.time_us, b.instances, b.fused ? ' ' : 'n',
                b.time_us > 0 ? b.time_us / r.time_us : 0.0, r.ratio_to_bound());
  }
  const plan::SizedResult& gb = ours.results.back();
  std::printf(
      "  %s %s: slower than nccl at %d sizes; 1G: %.1f us (%d inst%s%s) vs lower bound "
      "%.1f us (%.3fx)\n",
      to_string(c.kind).c_str(), c.sketch.c_str(), slower, gb.time_us, gb.instances,
      gb.fused ? "" : ", no fusion", gb.schedule_order ? ", start-time order" : "",
      gb.lower_bound_us, gb.ratio_to_bound());
}

}  // namespace

int main(int argc, char** argv) {
  double time_limit = 60;
  bool simulate = true;
  bool budget = false;
  bool relays = true;
  std::vector<std::string> wanted;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--time-limit" && i + 1 < argc) {
      time_limit = std::atof(argv[++i]);
    } else if (arg == "--custom" && i + 3 < argc) {
      cases() = {{parse_collective_kind(argv[i + 1]), argv[i + 2], argv[i + 3], 0.0}};
      i += 3;
    } else if (arg == "--budget") {
      budget = true;
    } else if (arg == "--no-relays") {
      relays = false;
    } else if (arg == "--no-sim") {
      simulate = false;
    } else {
      wanted.push_back(arg);
    }
  }
  const std::string dir = std::string(CCSYNTH_SOURCE_DIR) + "/examples/sketches/";
  for (const Case& c : cases()) {
    const std::string name = to_string(c.kind) + ":" + c.sketch;
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), name) == wanted.end()) continue;
    const Topology t = topologies::make_builtin(c.topology);
    const bool is_file = c.sketch.size() > 5 && c.sketch.substr(c.sketch.size() - 5) == ".json";
    const synth::Sketch sketch =
        synth::read_sketch_file(is_file ? c.sketch : dir + c.sketch + ".json");
    synth::TacclOptions o;
    o.time_limit_s = time_limit;
    o.intra_node_relays = relays;
    if (budget) {
      const int milp_stages = c.kind == CollectiveKind::kAllReduce ? 3 : 2;
      o.time_limit_s = 0.8 * c.paper_seconds / milp_stages;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const synth::TacclResult r = synth::synthesize_taccl(t, sketch, c.kind, o);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const bool ok = r.algorithm && verify::verify_algorithm(*r.algorithm, &t).ok();
    std::printf("%-22s on %s: %.2f s (paper %.1f s) %s, status %s, verified %s, estimate %.1f us\n",
                name.c_str(), c.topology.c_str(), seconds, c.paper_seconds,
                seconds <= c.paper_seconds ? "MET" : "MISSED", to_string(r.status).c_str(),
                ok ? "yes" : "NO", r.makespan_us);
    for (const synth::StageReport& s : r.stages) {
      std::printf("  %-15s %7.2f s  %-10s gap %.4f  estimate %.1f us  (%d vars, %d int, %d rows)\n",
                  s.name.c_str(), s.seconds, s.status.c_str(), s.gap, s.objective_us, s.variables,
                  s.integers, s.rows);
    }
    std::fflush(stdout);
    if (simulate && ok && c.kind == CollectiveKind::kAllGather) simulate_case(c, *r.algorithm, t);
    std::fflush(stdout);
  }
  return 0;
}
