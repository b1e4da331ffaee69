// Topology library benchmark: time to build (and validate) large built-in topologies
// and to round-trip them through topology JSON; parsing a large JSON document. Other engineers synthesize on a 100x100 mesh
// and a 512-rank RFS, so these must build in well under a second.
//
//   topologies_bench [--benchmark_filter=REGEX]

#include <benchmark/benchmark.h>

#include <string>

#include "ccsynth/formats/json_io.h"
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

// Reading a JSON array of n objects (an algorithm's ops): linear in n. nlohmann's callback
// parser, which the structure checks used before, searched the array after every object
// (quadratic: `ccsynth compile` spent 4.5 minutes reading the 1M-op mesh2d:32x32 algorithm,
// 8 s now including the compilation).
void BM_ParseArrayOfObjects(benchmark::State& state) {
  std::string text = "{\"ops\": [";
  for (int64_t i = 0; i < state.range(0); ++i) {
    text += (i ? ", " : "") + std::string("{\"chunk\": ") + std::to_string(i) +
            ", \"src\": 1, \"dst\": 2, \"step\": 3}";
  }
  text += "]}";
  for (auto _ : state) {
    ccsynth::formats::Json json = ccsynth::formats::parse_json(text, "bench.json");
    benchmark::DoNotOptimize(json);
  }
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_ParseArrayOfObjects)
    ->RangeMultiplier(4)
    ->Range(4096, 262144)
    ->Complexity()
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
