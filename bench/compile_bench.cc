// Compile time of the compiler (Algorithm -> Program) on ring and direct algorithms of growing
// size. Run: build/<dir>/bin/compile_bench (Release build).

#include <benchmark/benchmark.h>

#include "ccsynth/compiler/compile.h"
#include "compiler/test_algorithms.h"

namespace {

using namespace ccsynth;
using namespace ccsynth::compiler::testing;

void run(benchmark::State& state, const Algorithm& a, int instances) {
  compiler::CompileOptions o;
  o.instances = instances;
  o.max_steps_per_threadblock = 1 << 20;  // measure the passes, not channel spilling
  int64_t steps = 0;
  for (auto _ : state) {
    const Program p = compiler::compile(a, o);
    steps = p.total_steps();
    benchmark::DoNotOptimize(steps);
  }
  state.counters["ops"] = static_cast<double>(a.ops.size());
  state.counters["steps"] = static_cast<double>(steps);
}

void BM_RingAllGather(benchmark::State& s) { run(s, ring_allgather(s.range(0), 1), 1); }
void BM_RingAllReduce(benchmark::State& s) { run(s, ring_allreduce(s.range(0), 1), 1); }
void BM_RingAllReduceInstances4(benchmark::State& s) { run(s, ring_allreduce(s.range(0), 1), 4); }
void BM_DirectAllToAll(benchmark::State& s) { run(s, direct_alltoall(s.range(0), 1), 1); }

BENCHMARK(BM_RingAllGather)->Arg(8)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RingAllReduce)->Arg(8)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RingAllReduceInstances4)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DirectAllToAll)->Arg(8)->Arg(64)->Arg(128)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
