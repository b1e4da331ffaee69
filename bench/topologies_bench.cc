// Topology library benchmark: time to build (and validate) large built-in topologies
// and to round-trip them through topology JSON. Other engineers synthesize on a 100x100 mesh
// and a 512-rank RFS, so these must build in well under a second.
//
//   topologies_bench [--benchmark_filter=REGEX]

#include <benchmark/benchmark.h>

#include <string>

#include "ccsynth/formats/topology_json.h"
#include "ccsynth/topologies/library.h"

namespace {

const char* const kNames[] = {"mesh2d:100x100", "rfs:8x8x8", "torus3d:16x16x16",
                              "hypercube:12",   "dgx2x8",    "dragonfly:16x16",
                              "fc:256",         "ndv2x16"};

void BM_MakeBuiltin(benchmark::State& state) {
  const std::string name = kNames[state.range(0)];
  state.SetLabel(name);
  for (auto _ : state) {
    ccsynth::Topology t = ccsynth::topologies::make_builtin(name);
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_MakeBuiltin)->DenseRange(0, std::size(kNames) - 1)->Unit(benchmark::kMillisecond);

void BM_JsonRoundTrip(benchmark::State& state) {
  const std::string name = kNames[state.range(0)];
  state.SetLabel(name);
  const ccsynth::Topology t = ccsynth::topologies::make_builtin(name);
  for (auto _ : state) {
    const std::string text = ccsynth::formats::write_topology_json(t);
    ccsynth::Topology back =
        ccsynth::formats::topology_from_json(ccsynth::formats::parse_json(text, "bench"), "bench");
    benchmark::DoNotOptimize(back);
  }
}
BENCHMARK(BM_JsonRoundTrip)->DenseRange(0, 1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
