#include "ccsynth/verify/verify_algorithm.h"

#include <gtest/gtest.h>

#include "../compiler/test_algorithms.h"

namespace ccsynth::verify {
namespace {

// The shared reference rings (tests/compiler/test_algorithms.h), one chunk per rank.
Algorithm ring_allgather(int n) { return compiler::testing::ring_allgather(n, 1); }
Algorithm ring_allreduce(int n) { return compiler::testing::ring_allreduce(n, 1); }

TEST(VerifyAlgorithm, RingAllGatherIsCorrect) {
  for (int n : {2, 3, 8}) EXPECT_TRUE(verify_algorithm(ring_allgather(n)).ok()) << n;
}

TEST(VerifyAlgorithm, RingAllReduceIsCorrect) {
  for (int n : {2, 4, 7}) {
    const auto report = verify_algorithm(ring_allreduce(n));
    EXPECT_TRUE(report.ok()) << n << "\n" << report.summary();
  }
}

TEST(VerifyAlgorithm, MissingOpBreaksPostcondition) {
  Algorithm a = ring_allgather(4);
  a.ops.pop_back();
  const auto report = verify_algorithm(a);
  EXPECT_TRUE(report.has(ViolationKind::kPostcondition));
}

TEST(VerifyAlgorithm, ForwardingBeforeArrivalIsUninitializedRead) {
  Algorithm a = ring_allgather(4);
  for (auto& op : a.ops) op.step = 0;  // everything in one step
  EXPECT_TRUE(verify_algorithm(a).has(ViolationKind::kUninitializedRead));
}

TEST(VerifyAlgorithm, DoubleReductionIsCaught) {
  Algorithm a = ring_allreduce(4);
  ChunkOp extra = a.ops[0];
  extra.step = 0;
  a.ops.push_back(extra);  // the same contribution reduced twice
  const auto report = verify_algorithm(a);
  EXPECT_FALSE(report.ok());
}

TEST(VerifyAlgorithm, ReduceInNonCombiningAndBoundsAreStructural) {
  Algorithm a = ring_allgather(4);
  a.ops[0].kind = OpKind::kReduce;
  EXPECT_TRUE(verify_algorithm(a).has(ViolationKind::kStructure));
  a = ring_allgather(4);
  a.ops[0].dst = 9;
  EXPECT_TRUE(verify_algorithm(a).has(ViolationKind::kBounds));
}

TEST(VerifyAlgorithm, TopologyConnectionsAreChecked) {
  Topology line;
  line.name = "line";
  line.num_ranks = 4;
  for (int r = 0; r < 3; ++r) {
    line.links.push_back({r, r + 1, 1, 0.5, 20, "generic"});
    line.links.push_back({r + 1, r, 1, 0.5, 20, "generic"});
  }
  const auto report = verify_algorithm(ring_allgather(4), &line);
  EXPECT_TRUE(report.has(ViolationKind::kStructure));  // 3 -> 0 does not exist
}

}  // namespace
}  // namespace ccsynth::verify
