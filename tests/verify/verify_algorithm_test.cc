#include "ccsynth/verify/verify_algorithm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

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

// Kinds of a report's violations, in order.
std::vector<ViolationKind> kinds(const VerifyReport& report) {
  std::vector<ViolationKind> out;
  for (const Violation& v : report.violations) out.push_back(v.kind);
  return out;
}

constexpr OpKind kCopy = OpKind::kCopy;
constexpr OpKind kReduce = OpKind::kReduce;

TEST(VerifyAlgorithm, WritesOfOneChunkInOneStepRaceInOpOrder) {
  // Allgather on 3 ranks: rank 0's chunk reaches rank 1, then ranks 0 and 1 both copy it to
  // rank 2 in step 1; rank 2 also sends chunk 1, which it does not hold yet.
  Algorithm a;
  a.collective = make_collective(CollectiveKind::kAllGather, 3, 1);
  a.ops = {{0, 0, 1, kCopy, 0}, {0, 0, 2, kCopy, 1}, {1, 2, 0, kCopy, 1}, {0, 1, 2, kCopy, 1}};
  const VerifyReport report = verify_algorithm(a);
  ASSERT_GE(report.violations.size(), 2u) << report.summary();
  EXPECT_EQ(report.violations[0].kind, ViolationKind::kUninitializedRead);
  EXPECT_NE(report.violations[0].message.find("op #2"), std::string::npos);
  EXPECT_EQ(report.violations[1].kind, ViolationKind::kRace);
  EXPECT_NE(report.violations[1].message.find("op #3"), std::string::npos);
  EXPECT_NE(report.violations[1].message.find("chunk 0 written by two ops in one step"),
            std::string::npos);
}

TEST(VerifyAlgorithm, AReduceBesideACopyOfItsChunkRacesAndTwoReducesCombine) {
  // Allreduce on 3 ranks: the other two ranks reduce chunk k into rank k in one step (their
  // contributions add up), rank k copies the sum back: correct.
  Algorithm a;
  a.collective = make_collective(CollectiveKind::kAllReduce, 3, 1);
  for (int step = 0; step < 2; ++step) {
    for (int k = 0; k < a.collective.num_chunks(); ++k) {
      for (const int other : {(k + 1) % 3, (k + 2) % 3}) {
        a.ops.push_back(step == 0 ? ChunkOp{k, other, k, kReduce, 0}
                                  : ChunkOp{k, k, other, kCopy, 1});
      }
    }
  }
  EXPECT_TRUE(verify_algorithm(a).ok()) << verify_algorithm(a).summary();
  // A copy into rank 0 beside the reduces: the reduce after it races with it, the copy after
  // a reduce is a second writer.
  Algorithm copy_first = a;
  copy_first.ops.insert(copy_first.ops.begin(), ChunkOp{0, 1, 0, kCopy, 0});
  const VerifyReport first = verify_algorithm(copy_first);
  ASSERT_FALSE(first.violations.empty());
  EXPECT_EQ(first.violations[0].kind, ViolationKind::kRace);
  EXPECT_NE(first.violations[0].message.find("op #1"), std::string::npos);
  EXPECT_NE(first.violations[0].message.find("reduce and copy into chunk 0 in one step"),
            std::string::npos);
  Algorithm copy_last = a;
  copy_last.ops.insert(copy_last.ops.begin() + 2, ChunkOp{0, 1, 0, kCopy, 0});
  const VerifyReport last = verify_algorithm(copy_last);
  ASSERT_FALSE(last.violations.empty());
  EXPECT_EQ(last.violations[0].kind, ViolationKind::kRace);
  EXPECT_NE(last.violations[0].message.find("op #2"), std::string::npos);
  EXPECT_NE(last.violations[0].message.find("written by two ops"), std::string::npos);
}

TEST(VerifyAlgorithm, OpsOutOfStepOrderRunInStepOrder) {
  // The ring allreduce with its ops reversed: the same steps run in the same order, so the
  // verdict is the same, and so are a broken ring's violations.
  for (const bool broken : {false, true}) {
    Algorithm a = ring_allreduce(5);
    if (broken) a.ops.erase(a.ops.begin() + 3);
    Algorithm reversed = a;
    std::reverse(reversed.ops.begin(), reversed.ops.end());
    const VerifyReport in_order = verify_algorithm(a);
    const VerifyReport out_of_order = verify_algorithm(reversed);
    EXPECT_EQ(in_order.ok(), !broken) << in_order.summary();
    EXPECT_EQ(out_of_order.ok(), !broken) << out_of_order.summary();
    EXPECT_EQ(kinds(in_order), kinds(out_of_order));
  }
}

}  // namespace
}  // namespace ccsynth::verify
