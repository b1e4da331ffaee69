// CPU runtime benchmark: busbw of the ring allreduce baseline on 8 ranks at 64 MB per
// rank, next to this machine's memcpy bandwidth measured in the same run, as CSV.
//   cmake -S . -B build/rel -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build/rel --target runtime_bench
//   build/rel/bin/runtime_bench [--bytes 64M] [--iters 5] [--warmup 1] [--topology ring:8]
//                               [--workers 0] [--dtype float32]
// The runtime moves every byte through a FIFO slot (send: copy in, receive: copy out or reduce),
// so a ring allreduce step costs about two memory copies per byte per rank; with all ranks on
// one machine the memcpy figure bounds what the runtime can reach.

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/runtime/harness.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/topologies/library.h"

namespace {

using namespace ccsynth;

struct Args {
  int64_t bytes = int64_t{64} << 20;
  int iters = 5;
  int warmup = 1;
  std::string topology = "ring:8";
  int workers = 0;
  std::string dtype = "float32";
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const std::string value = argv[i + 1];
    if (key == "--bytes") {
      a.bytes = parse_bytes(value, "--bytes");
    } else if (key == "--iters") {
      a.iters = std::stoi(value);
    } else if (key == "--warmup") {
      a.warmup = std::stoi(value);
    } else if (key == "--topology") {
      a.topology = value;
    } else if (key == "--workers") {
      a.workers = std::stoi(value);
    } else if (key == "--dtype") {
      a.dtype = value;
    } else {
      throw UserError("", key, "unknown flag");
    }
  }
  return a;
}

// busbw_best uses the fastest iteration (the machine is shared, so the mean is noisy).
void row(const char* name, const std::string& topology, int ranks, int64_t bytes, int iters,
         int workers, double time_us, double algbw, double busbw, double busbw_best) {
  std::printf("%s,%s,%d,%lld,%d,%d,%.1f,%.3f,%.3f,%.3f\n", name, topology.c_str(), ranks,
              static_cast<long long>(bytes), iters, workers, time_us, algbw, busbw, busbw_best);
  std::fflush(stdout);
}

void bench_allreduce(const Args& a, bool inplace, int workers) {
  const Topology t = topologies::make_builtin(a.topology);
  const Collective c = make_collective(CollectiveKind::kAllReduce, t.num_ranks);
  compiler::CompileOptions co;
  co.inplace = inplace;
  const Program p = compiler::compile(synth::make_baseline(synth::BaselineKind::kRing, c, t), co);
  runtime::HarnessOptions h;
  h.exec.dtype = runtime::parse_data_type(a.dtype);
  h.exec.workers = workers;
  h.exec.timeout_s = 600;
  h.inplace = inplace;
  h.iters = a.iters;
  h.warmup = a.warmup;
  h.collective = &c;
  const runtime::HarnessResult r = runtime::run_program(p, a.bytes, h);
  if (!r.ok) throw UserError("", "run", r.message);
  const double algbw = static_cast<double>(a.bytes) / (r.time_us * 1e3);
  const double best = static_cast<double>(a.bytes) / (r.min_time_us * 1e3);
  const double factor = sim::bus_factor(c.kind, t.num_ranks);
  row(inplace ? "ring_allreduce_inplace" : "ring_allreduce", a.topology, t.num_ranks, a.bytes,
      a.iters, r.workers, r.time_us, algbw, algbw * factor, best * factor);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    std::printf(
        "benchmark,topology,ranks,bytes,iters,workers,time_us,algbw_gbps,busbw_gbps,"
        "busbw_best_gbps\n");
    const double memcpy_gbps = runtime::measure_memcpy_gbps(a.bytes, 10);
    row("memcpy", "-", 1, a.bytes, 10, 1, static_cast<double>(a.bytes) / (memcpy_gbps * 1e3),
        memcpy_gbps, memcpy_gbps, memcpy_gbps);
    bench_allreduce(a, false, a.workers);
    bench_allreduce(a, true, a.workers);
    if (a.workers == 0) bench_allreduce(a, false, 1);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "runtime_bench: %s\n", e.what());
    return 2;
  }
}
