// The CPU executor on hand-made and compiled programs: every instruction type, slicing,
// dependencies, in-place calls, and broken programs that must fail cleanly (no hang) with a
// message naming the waiting steps.

#include "ccsynth/runtime/cpu_executor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/error.h"
#include "ccsynth/runtime/harness.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/topologies/library.h"

namespace ccsynth::runtime {
namespace {

Program ring_program(CollectiveKind kind, int ranks, bool inplace = false, int instances = 1) {
  const Topology t = topologies::make_builtin("ring:" + std::to_string(ranks));
  compiler::CompileOptions o;
  o.inplace = inplace;
  o.instances = instances;
  return compiler::compile(synth::make_baseline(synth::BaselineKind::kRing,
                                                make_collective(kind, ranks), t),
                           o);
}

HarnessOptions checked(DataType dtype = DataType::kFloat32, ReduceOp op = ReduceOp::kSum) {
  HarnessOptions o;
  o.check = true;
  o.iters = 1;
  o.exec.dtype = dtype;
  o.exec.op = op;
  o.exec.timeout_s = 20;
  return o;
}

TEST(CpuExecutor, RingAllreduceIsCorrect) {
  const Program p = ring_program(CollectiveKind::kAllReduce, 4);
  const HarnessResult r = run_program(p, 4 * 1024, checked());
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_TRUE(r.checked);
  EXPECT_EQ(r.checked_elements, 4 * 1024);  // 4 ranks x 1024 output floats
  EXPECT_EQ(r.mismatches, 0);
}

}  // namespace
}  // namespace ccsynth::runtime
