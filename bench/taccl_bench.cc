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
// Sketches come from examples/sketches/ (CCSYNTH_SOURCE_DIR). Every program is compiled with 1,
// 2, 4 and 8 instances (TACCL sec. 7 tries 1 and 8), with and without fusion, in step order and
// in the schedule's start-time order (CompileOptions::schedule_order), and the fastest is
// reported per size; the ring baseline gets the same choice. The ring baseline is NCCL-like: every edge-disjoint ring
// find_rings finds (at most 16), one chunk per ring (as reference_ring in src/cli/pipeline.cc).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/compiler/schedule_order.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/sim/bounds.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/synth/baselines.h"
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

constexpr int kInstanceCounts[] = {1, 2, 4, 8};

// One compilation of an algorithm.
struct Variant {
  int instances = 1;
  bool fused = true;
  bool ordered = false;  // CompileOptions::schedule_order
  Program program;
};

// Programs of `a` compiled with every instance count, with and without fusion, and for timed
// algorithms also in start-time order (those that fail to compile are skipped).
std::vector<Variant> compile_all(const Algorithm& a) {
  std::vector<Variant> out;
  std::vector<bool> orders = {false};
  if (compiler::has_schedule_order(a)) orders.push_back(true);
  for (int instances : kInstanceCounts) {
    for (const bool fuse : {true, false}) {
      for (const bool ordered : orders) {
        compiler::CompileOptions o;
        o.instances = instances;
        o.fuse = fuse;
        o.schedule_order = ordered;
        try {
          out.push_back({instances, fuse, ordered, compiler::compile(a, o)});
        } catch (const UserError&) {
          // e.g. too many threadblocks with 8 instances: keep the others.
        }
      }
    }
  }
  return out;
}

struct Best {
  double us = -1;
  int instances = 0;
  bool fused = true;
  bool ordered = false;
};

// Fastest simulated time over the compiled variants.
Best best_time(const std::vector<Variant>& variants, const Topology& t, int64_t bytes) {
  Best best;
  for (const Variant& v : variants) {
    const double us = sim::simulate(v.program, t, bytes).time_us;
    if (best.us < 0 || us < best.us) best = {us, v.instances, v.fused, v.ordered};
  }
  return best;
}

// The NCCL-like ring baseline: all edge-disjoint rings, one chunk per ring.
std::optional<Algorithm> nccl_ring(const Collective& collective, const Topology& t, int* rings) {
  *rings = std::max<int>(1, static_cast<int>(synth::find_rings(t, 16).size()));
  const Collective per_ring = make_collective(collective.kind, t.num_ranks, *rings, collective.root);
  if (!synth::baseline_applies(synth::BaselineKind::kRing, per_ring, t)) return std::nullopt;
  return synth::make_baseline(synth::BaselineKind::kRing, per_ring, t);
}

void simulate_case(const Case& c, const Algorithm& a, const Topology& t) {
  int rings = 0;
  const std::optional<Algorithm> ring = nccl_ring(a.collective, t, &rings);
  const auto ours_programs = compile_all(a);
  const auto ring_programs = ring ? compile_all(*ring) : std::vector<Variant>{};
  std::printf("  ring baseline: %d ring(s)\n", rings);
  std::printf("  %8s %12s %6s %12s %5s %8s %8s   (inst: instances, n = no fusion, "
              "s = start-time order)\n",
              "size", "taccl_us", "inst", "ring_us", "inst", "speedup", "vs_lb");
  int slower = 0;
  for (int64_t bytes = 1024; bytes <= (int64_t{1} << 30); bytes *= 4) {
    const Best ours = best_time(ours_programs, t, bytes);
    const Best base = ring ? best_time(ring_programs, t, bytes) : Best{};
    const double lb = sim::lower_bound(t, a.collective, bytes).lower_bound_us;
    if (base.us > 0 && ours.us > base.us * 1.0001) ++slower;
    std::printf("  %8s %12.1f %4d%c%c %12.1f %4d%c %8.2f %8.2f\n", format_bytes(bytes).c_str(),
                ours.us, ours.instances, ours.fused ? ' ' : 'n', ours.ordered ? 's' : ' ',
                base.us, base.instances, base.fused ? ' ' : 'n',
                base.us > 0 ? base.us / ours.us : 0.0, ours.us / lb);
  }
  const int64_t gb = int64_t{1} << 30;
  const sim::LowerBound lb = sim::lower_bound(t, a.collective, gb);
  const Best at_gb = best_time(ours_programs, t, gb);
  std::printf("  %s %s: slower than ring at %d sizes; 1G: %.1f us (%d inst%s%s) vs lower bound "
              "%.1f us (%.3fx)\n",
              to_string(c.kind).c_str(), c.sketch.c_str(), slower, at_gb.us, at_gb.instances,
              at_gb.fused ? "" : ", no fusion", at_gb.ordered ? ", start-time order" : "",
              lb.lower_bound_us, at_gb.us / lb.lower_bound_us);
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
    const synth::Sketch sketch = synth::read_sketch_file(is_file ? c.sketch : dir + c.sketch + ".json");
    synth::TacclOptions o;
    o.time_limit_s = time_limit;
    o.intra_node_relays = relays;
    if (budget) {
      const int milp_stages = c.kind == CollectiveKind::kAllReduce ? 3 : 2;
      o.time_limit_s = 0.8 * c.paper_seconds / milp_stages;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const synth::TacclResult r = synth::synthesize_taccl(t, sketch, c.kind, o);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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
