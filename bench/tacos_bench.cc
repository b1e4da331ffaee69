// TACOS synthesis benchmark: synthesis time, peak memory and TEN collective time
// against a simple lower bound, on meshes, tori, hypercubes and the heterogeneous 3-D RFS.
//
//   tacos_bench [CASE...]     (no argument: every case but mesh64 and mesh100; `list` prints the cases)
//
// Topologies come from topologies::make_builtin with their default costs, TACOS sec. V: 50 GB/s
// links with 0.5 us latency (RFS: 200/100/50 GB/s); 1 MiB chunks unless a case says otherwise. Each case prints one line; run heavy cases one per process
// so that the reported peak RSS is theirs.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "ccsynth/core/collective.h"
#include "ccsynth/core/topology.h"
#include "ccsynth/core/units.h"
#include "ccsynth/sim/bounds.h"
#include "ccsynth/synth/tacos.h"
#include "ccsynth/topologies/library.h"

namespace {

using ccsynth::Collective;
using ccsynth::CollectiveKind;
using ccsynth::Link;
using ccsynth::Switch;
using ccsynth::Topology;
namespace synth = ccsynth::synth;

constexpr double kAlphaUs = 0.5;  // the built-ins' default latency (ring closed form)
constexpr int64_t kMiB = 1 << 20;

// Smallest T with sum over in-links of lanes * floor(T / cost) >= n: a rank receiving n chunks
// over its TEN in-links cannot finish earlier (each lane carries one whole chunk at a time).
double ingress_bound(const std::vector<std::pair<double, int>>& in, int64_t n) {
  if (n <= 0) return 0;
  auto delivered = [&](double t) {
    int64_t sum = 0;
    for (auto [cost, lanes] : in) sum += lanes * static_cast<int64_t>(std::floor(t / cost + 1e-9));
    return sum;
  };
  double lo = 0, hi = 1;
  while (delivered(hi) < n) hi *= 2;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (delivered(mid) >= n ? hi : lo) = mid;
  }
  // Snap to the smallest multiple of an in-link cost that is >= hi - eps (the true minimum).
  double best = hi;
  for (auto [cost, lanes] : in) {
    const double t = std::ceil(hi / cost - 1e-9) * cost;
    if (t >= hi - 1e-9 && delivered(t) >= n) best = std::min(best, t);
  }
  return best;
}

// Lower bound for an allgather / broadcast on TEN links: max of the per-rank ingress bound and
// the TEN distance from sampled sources (all sources when there are few).
double lower_bound_us(const std::vector<synth::TenLink>& links, const Collective& c) {
  const int ranks = c.num_ranks;
  std::vector<std::vector<std::pair<double, int>>> in(ranks);
  std::vector<std::vector<std::pair<int, double>>> out(ranks);
  for (const auto& l : links) {
    in[l.dst].push_back({l.cost_us, l.lanes});
    out[l.src].push_back({l.dst, l.cost_us});
  }
  std::vector<int64_t> need(ranks, 0);
  std::vector<int> sources;
  for (int k = 0; k < c.num_chunks(); ++k) {
    sources.push_back(c.chunks[k].pre[0].rank);
    for (const auto& s : c.chunks[k].post) need[s.rank] += s.rank != c.chunks[k].pre[0].rank;
  }
  std::sort(sources.begin(), sources.end());
  sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
  if (sources.size() > 16) {
    std::vector<int> sample;
    for (size_t i = 0; i < 16; ++i) sample.push_back(sources[i * (sources.size() - 1) / 15]);
    sources = sample;
  }
  double bound = 0;
  for (int v = 0; v < ranks; ++v) bound = std::max(bound, ingress_bound(in[v], need[v]));
  for (int s : sources) {  // Dijkstra
    std::vector<double> dist(ranks, std::numeric_limits<double>::infinity());
    using Item = std::pair<double, int>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> queue;
    dist[s] = 0;
    queue.push({0, s});
    while (!queue.empty()) {
      auto [d, u] = queue.top();
      queue.pop();
      if (d > dist[u]) continue;
      for (auto [v, cost] : out[u]) {
        if (d + cost < dist[v]) queue.push({dist[v] = d + cost, v});
      }
    }
    for (double d : dist) bound = std::max(bound, d);
  }
  return bound;
}

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6 + usage.ru_stime.tv_sec +
         usage.ru_stime.tv_usec * 1e-6;
}

long peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;
}

struct Case {
  std::string name;
  std::string topology;  // topologies::make_builtin name
  CollectiveKind kind;
  int chunks_per_rank = 1;
  int64_t chunk_bytes = kMiB;  // bytes per chunk
};

std::vector<Case> cases() {
  using K = CollectiveKind;
  return {
      {"mesh8", "mesh2d:8x8", K::kAllGather},
      {"mesh32", "mesh2d:32x32", K::kAllGather},
      {"mesh48", "mesh2d:48x48", K::kAllGather},
      {"mesh64", "mesh2d:64x64", K::kAllGather},
      {"torus2d16", "torus2d:16x16", K::kAllGather},
      {"torus3d8", "torus3d:8x8x8", K::kAllGather},
      {"hypercube4", "hypercube:4", K::kAllGather},
      {"hypercube6", "hypercube:6", K::kAllGather},
      {"hypercube8", "hypercube:8", K::kAllGather},
      {"hypercube10", "hypercube:10", K::kAllGather},
      {"mesh8_ar", "mesh2d:8x8", K::kAllReduce},
      {"mesh8_ar_c4", "mesh2d:8x8", K::kAllReduce, 4},
      {"rfs8_ar", "rfs:8x8x8", K::kAllReduce},
      {"rfs8_ag", "rfs:8x8x8", K::kAllGather},
      {"mesh100", "mesh2d:100x100", K::kAllGather},
  };
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void run(const Case& c) {
  const Topology topology = ccsynth::topologies::make_builtin(c.topology);
  Collective collective = ccsynth::make_collective(c.kind, topology.num_ranks, c.chunks_per_rank);
  synth::TacosOptions options;
  options.bytes = c.chunk_bytes * collective.input_chunks;
  if (const char* trials = std::getenv("TACOS_TRIALS")) options.trials = std::atoi(trials);
  if (const char* window = std::getenv("TACOS_WINDOW")) options.pick_window = std::atoi(window);
  if (const char* degree = std::getenv("TACOS_SWITCH_DEGREE")) {
    options.switch_degree = std::atoi(degree);
  }
  const auto started = std::chrono::steady_clock::now();
  const double cpu_started = cpu_seconds();
  const synth::TacosResult r = synth::synthesize_tacos(topology, std::move(collective), options);
  const double synth_s = seconds_since(started);
  const double synth_cpu_s = cpu_seconds() - cpu_started;
  const auto links =
      synth::ten_links(topology, static_cast<double>(c.chunk_bytes), options.switch_degree);
  std::string compare;
  if (c.kind == CollectiveKind::kAllReduce) {
    // Ring allreduce (closed form): 2(R-1) steps of one chunk of bytes/R over the slowest hop;
    // TACOS runs chunks of bytes/(R*C), so the ring moves C of them per step.
    const int ranks = topology.num_ranks;
    double slowest_beta = 0;
    for (const Link& l : topology.links) slowest_beta = std::max(slowest_beta, l.beta_us_per_mb);
    for (const Switch& s : topology.switches) {
      slowest_beta = std::max(slowest_beta, s.port_beta_us_per_mb);
    }
    const double ring_us =
        2.0 * (ranks - 1) *
        (kAlphaUs + ccsynth::transfer_us(slowest_beta, static_cast<double>(options.bytes) / ranks));
    char buf[128];
    std::snprintf(buf, sizeof buf, "ring %.1f us, speedup %.3fx", ring_us, ring_us / r.time_us);
    compare = buf;
  } else {
    const double bound = lower_bound_us(links, r.algorithm.collective);
    char buf[128];
    std::snprintf(buf, sizeof buf, "bound %.1f us, ratio %.4f", bound, r.time_us / bound);
    compare = buf;
  }
  if (topology.num_ranks <= 1024) {  // H5's simulator bound (fluid, so it may be lower)
    const auto sim = ccsynth::sim::lower_bound(
        topology, r.algorithm.collective, options.bytes,
        ccsynth::sim::bound_options_for(topology, ccsynth::Protocol::kSimple));
    char buf[64];
    std::snprintf(buf, sizeof buf, ", sim bound %.1f us", sim.lower_bound_us);
    compare += buf;
  }
  std::printf(
      "%-12s %-16s %-10s ranks=%-6d wall=%.3fs cpu=%.3fs ten=%.1fus %s ops=%lld "
      "repl=%lld rss=%ldMB\n",
      c.name.c_str(), topology.name.c_str(), r.algorithm.collective.name.c_str(),
      topology.num_ranks, synth_s, synth_cpu_s, r.time_us, compare.c_str(),
      static_cast<long long>(r.transfers), static_cast<long long>(r.replacements), peak_rss_mb());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const auto all = cases();
  std::vector<std::string> wanted(argv + 1, argv + argc);
  if (wanted.size() == 1 && wanted[0] == "list") {
    for (const Case& c : all) std::printf("%s\n", c.name.c_str());
    return 0;
  }
  for (const Case& c : all) {
    const bool chosen = wanted.empty()
                            ? c.name != "mesh100" && c.name != "mesh64"
                            : std::find(wanted.begin(), wanted.end(), c.name) != wanted.end();
    if (chosen) run(c);
  }
  return 0;
}
