// Time to trace a DSL program into an Algorithm and compile it to MSCCL-IR (docs/lang.md), for
// the shipped examples (examples/dsl/) on the topologies they are written for:
//   build/release/bin/dsl_bench [--benchmark_filter=three_step] [--benchmark_format=csv]
// BM_Trace builds and traces the program; BM_TraceCompile also compiles it (1 instance).

#include <benchmark/benchmark.h>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/topologies/library.h"
#include "example.h"

namespace ccsynth::examples {
Example alltoall_three_step_example();
Example alltoall_two_step_example();
Example hierarchical_allreduce_example();
Example ring_allreduce_example();
Example alltonext_example();
}  // namespace ccsynth::examples

namespace ex = ccsynth::examples;
using ex::alltoall_three_step_example, ex::alltoall_two_step_example,
    ex::hierarchical_allreduce_example, ex::ring_allreduce_example, ex::alltonext_example;

namespace {

struct Case {
  const char* name;
  ex::Example (*make)();
  const char* topology;
};

const Case kCases[] = {
    {"alltoall_three_step/ndv4x4", alltoall_three_step_example, "ndv4x4"},
    {"alltoall_two_step/ndv4x4", alltoall_two_step_example, "ndv4x4"},
    {"alltoall_three_step/ndv4x8", alltoall_three_step_example, "ndv4x8"},
    {"hierarchical_allreduce/ndv4x8", hierarchical_allreduce_example, "ndv4x8"},
    {"ring_allreduce/ndv4", ring_allreduce_example, "ndv4"},
    {"alltonext/ndv4x3", alltonext_example, "ndv4x3"},
};

void trace(benchmark::State& state, const Case& c, bool compile) {
  const ex::Example example = c.make();
  const ccsynth::Topology topology = ccsynth::topologies::make_builtin(c.topology);
  ex::ExampleArgs args;
  args.topology = c.topology;
  for (auto _ : state) {
    const auto program = example.build(topology, args);
    const ccsynth::Algorithm algorithm = program->to_algorithm();
    benchmark::DoNotOptimize(algorithm.ops.data());
    if (compile) {
      ccsynth::compiler::CompileOptions options;
      options.inplace = program->options().inplace;
      benchmark::DoNotOptimize(ccsynth::compiler::compile(algorithm, options).gpus.data());
    }
    state.counters["ops"] = static_cast<double>(program->operations().size());
  }
}

const bool kRegistered = [] {
  for (const Case& c : kCases) {
    benchmark::RegisterBenchmark((std::string("BM_Trace/") + c.name).c_str(),
                                 [&c](benchmark::State& s) { trace(s, c, false); })
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("BM_TraceCompile/") + c.name).c_str(),
                                 [&c](benchmark::State& s) { trace(s, c, true); })
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
