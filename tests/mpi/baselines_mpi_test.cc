// Every baseline (synth/baselines.h) and every built-in collective it builds, compiled and run
// by the MPI runtime with the reference check on as many ranks as the job has processes (the
// CTest entries run 4 and 8), out-of-place and in-place, over every element type and reduction
// operator, with pipelined slices; and programs with more ranks than processes.

#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/error.h"
#include "ccsynth/mpi/harness.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/topologies/library.h"

namespace ccsynth::mpi {
namespace {

int processes() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

compiler::CompileOptions relaxed(bool inplace) {
  compiler::CompileOptions o;
  o.inplace = inplace;
  o.max_steps_per_threadblock = 1 << 14;
  o.max_threadblocks_per_rank = 1 << 14;
  return o;
}

// Topologies of n ranks the baselines are made for: a switch, a ring, a hypercube, and two
// nodes (dragonfly groups) for the hierarchical ones.
std::vector<std::string> topologies_of(int n) {
  std::vector<std::string> out = {"switch:" + std::to_string(n), "ring:" + std::to_string(n)};
  int d = 0;
  while ((1 << d) < n) ++d;
  if ((1 << d) == n) out.push_back("hypercube:" + std::to_string(d));
  if (n % 2 == 0) out.push_back("dragonfly:2x" + std::to_string(n / 2));
  return out;
}

// Runs `program` on the MPI runtime with the check; returns the combined result.
runtime::HarnessResult run_checked(const Program& program, const Collective& c, bool inplace,
                                   int variant) {
  const std::vector<runtime::DataType> dtypes = runtime::all_data_types();
  const std::vector<runtime::ReduceOp> ops = runtime::all_reduce_ops();
  runtime::HarnessOptions o;
  o.check = true;
  o.iters = 1;
  o.inplace = inplace;
  o.collective = &c;
  o.exec.dtype = dtypes[variant % dtypes.size()];
  o.exec.op = ops[(variant / 2) % ops.size()];
  o.exec.slices = variant % 2 == 0 ? 3 : 1;  // one slice: whole multi-chunk messages move zero-copy
  o.exec.fifo_slots = 8;
  o.exec.timeout_s = 30;
  o.seed = 11 + variant;
  MpiExecutor executor(program, MPI_COMM_WORLD);
  const int64_t chunk_elems = 37;
  return run_program(executor, chunk_elems * c.input_chunks * runtime::size_of(o.exec.dtype), o);
}

TEST(MpiBaselines, EveryBaselineAndCollectiveRunsCorrectly) {
  const int n = processes();
  int runs = 0;
  int variant = 0;
  std::vector<std::string> covered;
  for (synth::BaselineKind kind : synth::all_baseline_kinds()) {
    std::vector<Collective> collectives;
    for (CollectiveKind k : builtin_collective_kinds())
      collectives.push_back(make_collective(k, n, 1, 1));
    collectives.push_back(make_alltonext(n, n / 2));  // the cooperative baseline's collective
    for (const Collective& c : collectives) {
      for (const std::string& name : topologies_of(n)) {
        const Topology t = topologies::make_builtin(name);
        if (!synth::baseline_inapplicable_reason(kind, c, t).empty()) continue;
        const Algorithm a = synth::make_baseline(kind, c, t);
        for (bool inplace : {false, true}) {
          const std::string label =
              synth::to_string(kind) + " " + c.name + " on " + name + (inplace ? " in-place" : "");
          SCOPED_TRACE(label);
          const Program p = compiler::compile(a, relaxed(inplace));
          const runtime::HarnessResult r = run_checked(p, c, inplace, variant++);
          ASSERT_TRUE(r.ok) << r.message;
          EXPECT_TRUE(r.checked);
          EXPECT_GT(r.checked_elements, 0);
          EXPECT_GT(r.time_us, 0.0);
          ++runs;
        }
        covered.push_back(synth::to_string(kind) + "/" + c.name);
        break;  // the first topology the baseline applies to
      }
    }
  }
  // Every baseline kind builds something on n ranks (hier on the two-node dragonfly).
  for (synth::BaselineKind kind : synth::all_baseline_kinds()) {
    bool any = false;
    for (const std::string& pair : covered)
      any = any || pair.rfind(synth::to_string(kind) + "/", 0) == 0;
    EXPECT_TRUE(any) << synth::to_string(kind) << " ran no collective on " << n << " ranks";
  }
  EXPECT_GE(runs, 40);
  RecordProperty("runs", runs);
}

// Two ranks per process: the ring allreduce and the direct alltoall of 2n ranks on n processes.
TEST(MpiBaselines, SeveralRanksPerProcess) {
  const int n = processes();
  const Topology t = topologies::make_builtin("ring:" + std::to_string(2 * n));
  int variant = 3;
  for (auto [kind, collective] :
       {std::pair{synth::BaselineKind::kRing, CollectiveKind::kAllReduce},
        std::pair{synth::BaselineKind::kDirect, CollectiveKind::kAllToAll}}) {
    const Collective c = make_collective(collective, 2 * n);
    const Program p = compiler::compile(synth::make_baseline(kind, c, t), relaxed(false));
    MpiExecutor executor(p, MPI_COMM_WORLD);
    EXPECT_EQ(executor.local_ranks().size(), 2u);
    EXPECT_EQ(executor.placement().describe(),
              std::to_string(2 * n) + " ranks on " + std::to_string(n) +
                  " processes, 2 ranks per process (blocks of consecutive ranks)");
    const runtime::HarnessResult r = run_checked(p, c, false, variant++);
    ASSERT_TRUE(r.ok) << r.message;
    EXPECT_GT(r.checked_elements, 0);
  }
}

// A program that writes a wrong output chunk fails the combined check, and process 0's message
// names the process whose rank is wrong.
TEST(MpiBaselines, WrongOutputsAreFound) {
  const int n = processes();
  const Topology t = topologies::make_builtin("ring:" + std::to_string(n));
  const Collective c = make_collective(CollectiveKind::kAllGather, n);
  Program p =
      compiler::compile(synth::make_baseline(synth::BaselineKind::kRing, c, t), relaxed(false));
  // Break the program: the last rank's first receive writes the wrong output chunk.
  bool broken = false;
  for (Threadblock& tb : p.gpus[n - 1].threadblocks) {
    for (Step& s : tb.steps) {
      if (!broken && s.type == StepType::kRecv && s.dst_buffer == Buffer::kOutput) {
        s.dst_offset = (s.dst_offset + 1) % n;
        broken = true;
      }
    }
  }
  ASSERT_TRUE(broken);
  const runtime::HarnessResult r = run_checked(p, c, false, 4);
  EXPECT_FALSE(r.ok);
  EXPECT_GT(r.mismatches, 0);
  int process = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &process);
  if (process == 0) {
    EXPECT_NE(r.message.find("process " + std::to_string(n - 1)), std::string::npos) << r.message;
  }
}

}  // namespace
}  // namespace ccsynth::mpi
