// The throughput method against the bound and the existing methods (docs/trees.md), and the
// tuner's wall time (docs/tuning.md). Prints CSV; progress goes to stderr.
//
//   trees_bench [--quick] [--topology T] [--size S] [--tuner] [--large]
//
// Default: per topology of issue 15's target list and per allgather, reducescatter and
// allreduce at --size (default 1G) per rank, one tuner run at that size (plan::tune, every
// method but sccl, each compiled in every variant) and the row
//
//   topology,collective,ranks,bytes,bound_us,trees,trees_us,trees_ratio,best_other,
//   best_other_us,best_other_ratio,trees_vs_other,seconds
//
// where trees is the fastest trees chunking, best_other the fastest other method (nccl
// reference, baselines, tacos) of the same run, ratios are to the lower bound and
// trees_vs_other = best_other_us / trees_us. --quick keeps the 8-32 rank topologies.
// --tuner instead times the tuner's whole table (1K..1G, factor 4) for dgx1, dgx2x2 and ndv2x4
// (or --topology T) allgather and allreduce:
// topology,collective,sizes,entries,sizes_not_ring,candidates,simulations,seconds
// (simulations: the (variant, size) pairs simulated; the others were pruned by their bound).
// --large times the trees method alone on 1024 ranks (torus3d:8x8x16):
// topology,collective,ranks,trees_per_root,seconds,bottleneck_ratio.

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "ccsynth/core/collective.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/timing.h"
#include "ccsynth/core/units.h"
#include "ccsynth/plan/tune.h"
#include "ccsynth/synth/trees.h"
#include "ccsynth/topologies/library.h"

namespace {

using namespace ccsynth;

const std::vector<std::string> kTargets = {"dgx1",        "dgx2x2",      "ndv2x4",
                                           "ndv4x2",      "dgxh100x2",   "mesh2d:8x8",
                                           "torus2d:8x8", "hypercube:6", "rfs:4x4x4"};
const std::vector<std::string> kQuick = {"dgx1", "dgx2x2", "ndv2x4"};
const std::vector<CollectiveKind> kKinds = {
    CollectiveKind::kAllGather, CollectiveKind::kReduceScatter, CollectiveKind::kAllReduce};

bool is_trees(const std::string& label) { return label.rfind("trees", 0) == 0; }

void progress(const std::string& line) { std::cerr << line << "\n"; }

void compare_row(const std::string& name, CollectiveKind kind, int64_t bytes) {
  plan::TuneRequest request;
  request.topology = topologies::make_builtin(name);
  request.kind = kind;
  request.sizes = {bytes};
  request.skip = {"sccl"};
  request.progress = progress;
  const plan::TuneResult r = plan::tune(request);
  const plan::TunedSize& s = r.sizes.front();
  const plan::TunedTime* trees = nullptr;
  const plan::TunedTime* other = nullptr;
  for (const plan::TunedTime& t : s.times) {
    const plan::TunedTime*& best = is_trees(t.label) ? trees : other;
    if (best == nullptr || t.time_us < best->time_us) best = &t;
  }
  const double bound = s.lower_bound_us;
  auto field = [bound](const plan::TunedTime* t) {
    return t == nullptr ? std::string("none,0,0")
                        : t->label + "," + std::to_string(t->time_us) + "," +
                              std::to_string(t->time_us / bound);
  };
  std::printf("%s,%s,%d,%lld,%.2f,%s,%s,%.4f,%.2f\n", name.c_str(), to_string(kind).c_str(),
              request.topology.num_ranks, static_cast<long long>(bytes), bound,
              field(trees).c_str(), field(other).c_str(),
              trees && other ? other->time_us / trees->time_us : 0.0, r.seconds);
  std::fflush(stdout);
}

void tuner_row(const std::string& name, CollectiveKind kind) {
  plan::TuneRequest request;
  request.topology = topologies::make_builtin(name);
  request.kind = kind;
  request.sizes = plan::size_sweep(int64_t{1} << 10, int64_t{1} << 30, 4);
  request.progress = progress;
  const plan::TuneResult r = plan::tune(request);
  int not_ring = 0;
  for (const plan::TunedSize& s : r.sizes) not_ring += s.winner != "nccl_ring";
  std::printf("%s,%s,%zu,%zu,%d,%d,%d,%.2f\n", name.c_str(), to_string(kind).c_str(),
              r.sizes.size(), r.entries.size(), not_ring, r.candidates, r.simulations, r.seconds);
  std::fflush(stdout);
}

void large_row(const std::string& name, CollectiveKind kind) {
  const Topology t = topologies::make_builtin(name);
  const auto started = std::chrono::steady_clock::now();
  synth::TreesOptions o;
  o.trees_per_root = 1;
  const synth::TreesResult r = synth::synthesize_trees(t, make_collective(kind, t.num_ranks, 1), o);
  std::printf("%s,%s,%d,%d,%.2f,%.4f\n", name.c_str(), to_string(kind).c_str(), t.num_ranks,
              r.trees_per_root, seconds_since(started), r.bottleneck_ratio);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, tuner = false, large = false;
  std::vector<std::string> topologies;  // default: kTargets, or kQuick with --tuner
  int64_t bytes = int64_t{1} << 30;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--quick") {
        quick = true;
      } else if (arg == "--tuner") {
        tuner = true;
      } else if (arg == "--large") {
        large = true;
      } else if (arg == "--topology" && i + 1 < argc) {
        topologies = {argv[++i]};
      } else if (arg == "--size" && i + 1 < argc) {
        bytes = parse_bytes(argv[++i], "--size");
      } else {
        std::cerr << "usage: trees_bench [--quick] [--topology T] [--size S] [--tuner] [--large]\n";
        return 2;
      }
    }
    if (quick || (tuner && topologies.empty())) topologies = kQuick;
    if (topologies.empty()) topologies = kTargets;
    if (large) {
      std::printf("topology,collective,ranks,trees_per_root,seconds,bottleneck_ratio\n");
      large_row("torus3d:8x8x16", CollectiveKind::kAllGather);
      return 0;
    }
    if (tuner) {
      std::printf(
          "topology,collective,sizes,entries,sizes_not_ring,candidates,simulations,seconds\n");
      for (const std::string& name : topologies) {
        for (CollectiveKind kind : {CollectiveKind::kAllGather, CollectiveKind::kAllReduce})
          tuner_row(name, kind);
      }
      return 0;
    }
    std::printf(
        "topology,collective,ranks,bytes,bound_us,trees,trees_us,trees_ratio,best_other,"
        "best_other_us,best_other_ratio,trees_vs_other,seconds\n");
    for (const std::string& name : topologies) {
      for (CollectiveKind kind : kKinds) compare_row(name, kind, bytes);
    }
  } catch (const UserError& e) {
    std::cerr << "trees_bench: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
