// MPI runtime benchmark (docs/mpi.md "Performance"): ccsynth's compiled baselines executed by
// the MPI runtime against OpenMPI's own MPI_Allreduce / MPI_Allgather, measured in the same run
// and interleaved (iteration i runs every program and the MPI collective once each, so machine
// load hits all alike), as CSV on process 0.
//   cmake --build build/rel --target mpi_bench
//   mpirun -np 4 --oversubscribe build/rel/bin/mpi_bench [--sizes 64K,1M,16M] [--iters 10]
//                                                        [--warmup 2] [--collectives allreduce,allgather]
// Sizes follow nccl-tests: the allreduce buffer, the allgather's gathered output (each process
// contributes size / P). Every program applicable to the collective on `switch:P` (all processes
// reach each other, as processes on one machine do) is compiled, checked once against the
// reference at the smallest size, then timed; a run's time is the slowest process's, after a
// barrier. ratio = program median / MPI median (< 1: ccsynth is faster).

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/mpi/harness.h"
#include "ccsynth/mpi/mpi_executor.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/topologies/library.h"

namespace {

using namespace ccsynth;
using Clock = std::chrono::steady_clock;

struct Args {
  std::vector<int64_t> sizes = {int64_t{64} << 10, int64_t{1} << 20, int64_t{16} << 20};
  std::vector<std::string> collectives = {"allreduce", "allgather"};
  int iters = 10;
  int warmup = 2;
};

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const std::string value = argv[i + 1];
    if (key == "--sizes") {
      a.sizes.clear();
      for (const std::string& s : split(value)) a.sizes.push_back(parse_bytes(s, "--sizes"));
    } else if (key == "--collectives") {
      a.collectives = split(value);
    } else if (key == "--iters") {
      a.iters = std::stoi(value);
    } else if (key == "--warmup") {
      a.warmup = std::stoi(value);
    } else {
      throw UserError("", key, "unknown flag");
    }
  }
  return a;
}

// One compiled baseline with its executor and buffers of the current size.
struct Candidate {
  std::string name;
  std::unique_ptr<mpi::MpiExecutor> executor;
  std::unique_ptr<runtime::RunBuffers> buffers;
  std::vector<double> times_us;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double slowest(double local_us) {
  MPI_Allreduce(MPI_IN_PLACE, &local_us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return local_us;
}

std::vector<Candidate> candidates(CollectiveKind kind, int p) {
  const Topology t = topologies::make_builtin("switch:" + std::to_string(p));
  const Collective c = make_collective(kind, p);
  std::vector<Candidate> out;
  for (synth::BaselineKind b : synth::all_baseline_kinds()) {
    if (!synth::baseline_inapplicable_reason(b, c, t).empty()) continue;
    compiler::CompileOptions o;
    o.max_steps_per_threadblock = 1 << 14;
    o.max_threadblocks_per_rank = 1 << 14;
    Candidate candidate;
    candidate.name = synth::to_string(b);
    candidate.executor = std::make_unique<mpi::MpiExecutor>(
        compiler::compile(synth::make_baseline(b, c, t), o), MPI_COMM_WORLD);
    out.push_back(std::move(candidate));
  }
  return out;
}

// The MPI collective on buffers of the size, timed once.
struct MpiCall {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::vector<float> send;
  std::vector<float> recv;
  int count = 0;  // elements each process contributes (allgather) or reduces (allreduce)
  double run() {
    MPI_Barrier(MPI_COMM_WORLD);
    const Clock::time_point start = Clock::now();
    if (kind == CollectiveKind::kAllReduce) {
      MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    } else {
      MPI_Allgather(send.data(), count, MPI_FLOAT, recv.data(), count, MPI_FLOAT, MPI_COMM_WORLD);
    }
    return slowest(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
};

void bench(CollectiveKind kind, const Args& a, int me, int p) {
  std::vector<Candidate> programs = candidates(kind, p);
  for (size_t s = 0; s < a.sizes.size(); ++s) {
    const int64_t size = a.sizes[s];
    const int64_t per_rank = kind == CollectiveKind::kAllGather ? size / p : size;
    runtime::HarnessOptions options;
    options.exec.timeout_s = 120;
    MpiCall call;
    call.kind = kind;
    call.count = static_cast<int>(per_rank / 4);
    call.send.assign(call.count, 1.0f);
    call.recv.assign(kind == CollectiveKind::kAllGather ? call.count * p : call.count, 0.0f);
    std::vector<Candidate*> usable;
    for (Candidate& c : programs) {
      const int in_chunks = collective_of(c.executor->program()).input_chunks;
      if (per_rank % (4 * in_chunks) != 0) continue;
      if (s == 0) {  // the check, once per program
        runtime::HarnessOptions check = options;
        check.check = true;
        check.iters = 0;
        const runtime::HarnessResult r = mpi::run_program(*c.executor, per_rank, check);
        if (!r.ok) {
          if (me == 0)
            std::fprintf(stderr, "%s: check failed: %s\n", c.name.c_str(), r.message.c_str());
          continue;
        }
      }
      c.buffers = std::make_unique<runtime::RunBuffers>(c.executor->program(), per_rank, options,
                                                        c.executor->local_ranks());
      c.times_us.clear();
      usable.push_back(&c);
    }
    std::vector<double> mpi_us;
    for (int i = 0; i < a.warmup + a.iters; ++i) {
      for (Candidate* c : usable) {
        MPI_Barrier(MPI_COMM_WORLD);
        const runtime::ExecResult r =
            c->executor->run(c->buffers->views(), c->buffers->chunk_elems(), options.exec);
        if (!r.ok) {
          std::fprintf(stderr, "%s: %s\n", c->name.c_str(), r.error.c_str());
          mpi::abort_job(MPI_COMM_WORLD, 1);
        }
        const double t = slowest(r.time_us);
        if (i >= a.warmup) c->times_us.push_back(t);
      }
      const double t = call.run();
      if (i >= a.warmup) mpi_us.push_back(t);
    }
    const double mpi_median = median(mpi_us);
    const Candidate* best = nullptr;
    for (const Candidate* c : usable) {
      if (best == nullptr || median(c->times_us) < median(best->times_us)) best = c;
    }
    for (const Candidate* c : usable) {
      if (me != 0) continue;
      const double m = median(c->times_us);
      std::printf("%d,%s,%lld,%lld,%s,%.1f,%.1f,%.1f,%.1f,%.3f,%d\n", p, to_string(kind).c_str(),
                  static_cast<long long>(size), static_cast<long long>(per_rank), c->name.c_str(),
                  m, *std::min_element(c->times_us.begin(), c->times_us.end()), mpi_median,
                  *std::min_element(mpi_us.begin(), mpi_us.end()), m / mpi_median, c == best);
      std::fflush(stdout);
    }
    for (Candidate* c : usable) c->buffers.reset();
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0;
  int p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  try {
    const Args a = parse(argc, argv);
    if (me == 0) {
      std::printf(
          "processes,collective,size_bytes,per_rank_bytes,program,median_us,min_us,"
          "mpi_median_us,mpi_min_us,ratio,best\n");
    }
    for (const std::string& name : a.collectives) {
      const CollectiveKind kind = parse_collective_kind(name);
      if (kind != CollectiveKind::kAllReduce && kind != CollectiveKind::kAllGather) {
        throw UserError("", "--collectives", "allreduce or allgather, not " + name);
      }
      bench(kind, a, me, p);
    }
  } catch (const std::exception& e) {
    if (me == 0) std::fprintf(stderr, "mpi_bench: %s\n", e.what());
    MPI_Finalize();
    return 2;
  }
  MPI_Finalize();
  return 0;
}
