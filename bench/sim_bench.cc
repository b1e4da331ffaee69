// Simulator and lower-bound benchmarks (targets: >= 2 million slice events per second;
// a 1024-rank ring allreduce simulated at one size in under a second).
//   cmake -S . -B build/rel -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target sim_bench
//   build/rel/bin/sim_bench
// Counters: events = step instances (steps x slices) per simulation, events_per_s = their rate.

#include <benchmark/benchmark.h>

#include <string>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/collective.h"
#include "ccsynth/plan/limits.h"
#include "ccsynth/plan/planner.h"
#include "ccsynth/sim/bounds.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/topologies/library.h"
#include "sim/sim_test_util.h"

namespace {

using namespace ccsynth;

// (DoNotOptimize is applied to the integer event count: on a double it miscompiles with this
// GCC and Google Benchmark.)
void report(benchmark::State& state, const sim::SimResult& r) {
  state.counters["events"] = static_cast<double>(r.events);
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(r.events), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel("simulated " + std::to_string(r.time_us) + " us");
}

// Hand-built 1024-rank ring allreduce (2047 steps per rank, one threadblock per rank).
void BM_RingAllreduceHandBuilt(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int64_t bytes = state.range(1);
  const Program program = sim::testing::ring_allreduce(n);
  const Topology topology = topologies::make_builtin("ring:" + std::to_string(n));
  sim::SimResult r;
  for (auto _ : state) {
    r = sim::simulate(program, topology, bytes);
    benchmark::DoNotOptimize(r.events);
  }
  report(state, r);
}
BENCHMARK(BM_RingAllreduceHandBuilt)
    ->Args({1024, 1 << 20})
    ->Args({1024, int64_t{1} << 30})
    ->Unit(benchmark::kMillisecond);

// The same collective from the ring baseline through the compiler (what `synth` produces).
void BM_RingAllreduceCompiled(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int64_t bytes = state.range(1);
  const Topology topology = topologies::make_builtin("ring:" + std::to_string(n));
  const Collective collective = make_collective(CollectiveKind::kAllReduce, n);
  compiler::CompileOptions options;  // one threadblock runs all 2(n-1) sends of its ring
  options.max_steps_per_threadblock = 4 * n;
  const Program program = compiler::compile(
      synth::make_baseline(synth::BaselineKind::kRing, collective, topology), options);
  sim::SimResult r;
  for (auto _ : state) {
    r = sim::simulate(program, topology, bytes);
    benchmark::DoNotOptimize(r.events);
  }
  report(state, r);
}
BENCHMARK(BM_RingAllreduceCompiled)->Args({1024, 1 << 20})->Unit(benchmark::kMillisecond);

// Many slices through few threadblocks: the event rate of the pipelined inner loop.
void BM_RingAllgatherSlices(benchmark::State& state) {
  const int n = 8;
  const Program program = sim::testing::ring_allgather(n, 4);
  const Topology topology = topologies::make_builtin("ring:8");
  sim::SimOptions options;
  options.num_slices = static_cast<int>(state.range(0));
  options.critical_path = state.range(1) != 0;
  sim::SimResult r;
  for (auto _ : state) {
    r = sim::simulate(program, topology, int64_t{1} << 30, options);
    benchmark::DoNotOptimize(r.events);
  }
  report(state, r);
}
BENCHMARK(BM_RingAllgatherSlices)->Args({4096, 1})->Args({4096, 0})->Unit(benchmark::kMillisecond);

// Direct allgather on ring:16: multi-hop routes and heavy contention.
void BM_DirectAllgatherRing16(benchmark::State& state) {
  const Program program = sim::testing::direct_allgather(16);
  const Topology topology = topologies::make_builtin("ring:16");
  sim::SimResult r;
  for (auto _ : state) {
    r = sim::simulate(program, topology, int64_t{64} << 20);
    benchmark::DoNotOptimize(r.events);
  }
  report(state, r);
}
BENCHMARK(BM_DirectAllgatherRing16)->Unit(benchmark::kMillisecond);

// 1024 ranks on one switch: every send holds an egress and an ingress port.
void BM_RingAllgatherSwitch1024(benchmark::State& state) {
  const Program program = sim::testing::ring_allgather(1024);
  const Topology topology = sim::testing::switch_topology(1024, 1.0, 10.0);
  sim::SimResult r;
  for (auto _ : state) {
    r = sim::simulate(program, topology, 1 << 20);
    benchmark::DoNotOptimize(r.events);
  }
  report(state, r);
}
BENCHMARK(BM_RingAllgatherSwitch1024)->Unit(benchmark::kMillisecond);

// Trees allgather on dgx2x2 at 64M, one chunk per rank (`ccsynth synth --method trees -t dgx2x2
// -c allgather -s 64M --chunks 1`): many transfers share each NVSwitch port, so every start and
// end of one re-shares the bandwidth of the others (issues 15/16: ~15 s before the indexed heap
// of data ends, ~0.3 s now).
void BM_TreesAllgatherDgx2x2(benchmark::State& state) {
  const int64_t bytes = int64_t{64} << 20;
  plan::PlanRequest request;  // what `synth` does: the variant it keeps is the one simulated
  request.topology = topologies::make_builtin("dgx2x2");
  request.method = "trees";
  request.kind = CollectiveKind::kAllGather;
  request.chunks = 1;
  request.synth.bytes = bytes;
  request.sizes = {bytes};
  request.compare_with_nccl = false;
  const plan::PlanResult planned = plan::plan(request);
  if (!planned.ok()) {
    state.SkipWithError("trees found no valid allgather on dgx2x2");
    return;
  }
  const Program& program = planned.program->program;
  sim::SimResult r;
  for (auto _ : state) {
    r = sim::simulate(program, request.topology, bytes);
    benchmark::DoNotOptimize(r.events);
  }
  report(state, r);
}
BENCHMARK(BM_TreesAllgatherDgx2x2)->Unit(benchmark::kMillisecond);

// The nccl reference of `synth -t torus3d:8x8x8 -c allgather` (issue 16): NCCL's rings on 512
// ranks, compiled for the executor dialect, in LL at 1M per rank (16 slices per chunk, 8.5 M
// step instances, links shared by the flows on them), as the planner simulates it (no critical
// path). Most of that `synth`'s time went here.
void BM_NcclRingTorus512LL(benchmark::State& state) {
  const Topology topology = topologies::make_builtin("torus3d:8x8x8");
  compiler::CompileOptions options;
  plan::apply_runtime_limits(options, formats::XmlDialect::kExecutor);
  options.protocol = Protocol::kLL;
  const Program program =
      compiler::compile(synth::nccl_ring(topology, CollectiveKind::kAllGather, 0), options);
  sim::SimOptions sim_options;
  sim_options.critical_path = false;
  sim::SimResult r;
  for (auto _ : state) {
    r = sim::simulate(program, topology, 1 << 20, sim_options);
    benchmark::DoNotOptimize(r.events);
  }
  report(state, r);
}
BENCHMARK(BM_NcclRingTorus512LL)->Unit(benchmark::kMillisecond);

void BM_LowerBound(benchmark::State& state, const char* topology_name, CollectiveKind kind) {
  const Topology topology = topologies::make_builtin(topology_name);
  const Collective collective = make_collective(kind, topology.num_ranks);
  for (auto _ : state) {
    benchmark::DoNotOptimize(sim::lower_bound(topology, collective, 1 << 20).lower_bound_us);
  }
}
BENCHMARK_CAPTURE(BM_LowerBound, dgx1_allgather, "dgx1", CollectiveKind::kAllGather)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LowerBound, ring1024_allreduce, "ring:1024", CollectiveKind::kAllReduce)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LowerBound, ring1024_allgather, "ring:1024", CollectiveKind::kAllGather)
    ->Unit(benchmark::kMillisecond);

}  // namespace

// The cost of SimOptions::record_timeline: the pipelined ring of BM_RingAllgatherSlices
// (without the critical path) with the timeline off (0) and on (1).
void BM_RingAllgatherTimeline(benchmark::State& state) {
  const Program program = sim::testing::ring_allgather(8, 4);
  const Topology topology = topologies::make_builtin("ring:8");
  sim::SimOptions options;
  options.num_slices = 4096;
  options.critical_path = false;
  options.record_timeline = state.range(0) != 0;
  sim::SimResult r;
  for (auto _ : state) {
    r = sim::simulate(program, topology, int64_t{1} << 30, options);
    benchmark::DoNotOptimize(r.events);
  }
  report(state, r);
}
BENCHMARK(BM_RingAllgatherTimeline)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
