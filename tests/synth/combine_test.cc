#include "ccsynth/synth/combine.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "ccsynth/core/error.h"
#include "ccsynth/verify/verify_algorithm.h"

namespace ccsynth::synth {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

// Ring allgather with C chunks per rank: at step s rank r forwards its C chunks of origin r - s.
Algorithm ring_allgather(int n, int chunks = 1) {
  Algorithm a;
  a.name = "ring";
  a.collective = make_collective(CollectiveKind::kAllGather, n, chunks);
  for (int s = 0; s < n - 1; ++s)
    for (int r = 0; r < n; ++r)
      a.ops.push_back({mod(r - s, n) * chunks, r, (r + 1) % n, OpKind::kCopy, s, -1, chunks});
  return a;
}

// Binomial-tree broadcast from `root` over n = 2^k ranks (relative ranks double each step).
Algorithm tree_broadcast(int n, int root) {
  Algorithm a;
  a.name = "tree";
  a.collective = make_collective(CollectiveKind::kBroadcast, n, 1, root);
  int step = 0;
  for (int have = 1; have < n; have *= 2, ++step)
    for (int rel = 0; rel < have && rel + have < n; ++rel)
      a.ops.push_back({0, (root + rel) % n, (root + rel + have) % n, OpKind::kCopy, step});
  return a;
}

// Linear gather to `root`: every rank sends its chunk straight to the root in step 0.
Algorithm direct_gather(int n, int root) {
  Algorithm a;
  a.name = "direct";
  a.collective = make_collective(CollectiveKind::kGather, n, 1, root);
  for (int r = 0; r < n; ++r)
    if (r != root) a.ops.push_back({r, r, root, OpKind::kCopy, 0});
  return a;
}

void expect_valid(const Algorithm& a) {
  const auto report = verify::verify_algorithm(a);
  EXPECT_TRUE(report.ok()) << a << report.summary();
}

TEST(Invert, RingAllGatherBecomesRingReduceScatter) {
  for (int n : {2, 3, 8})
    for (int chunks : {1, 3}) {
      const Algorithm rs = invert(ring_allgather(n, chunks));
      EXPECT_EQ(rs.collective, make_collective(CollectiveKind::kReduceScatter, n, chunks));
      EXPECT_EQ(rs.num_steps(), n - 1);
      EXPECT_EQ(rs.ops.size(), static_cast<size_t>(n * (n - 1)));
      for (const ChunkOp& op : rs.ops) {
        EXPECT_EQ(op.kind, OpKind::kReduce);
        EXPECT_EQ(op.dst, mod(op.src - 1, n));  // the ring runs backwards
      }
      expect_valid(rs);
    }
}

TEST(Invert, StepsAreReversed) {
  const Algorithm ag = ring_allgather(4);
  const Algorithm rs = invert(ag);
  // The allgather's last op 3 -> 0 (chunk 1, step 2) becomes the reducescatter's step 0 op 0 -> 3.
  ChunkOp expected{1, 0, 3, OpKind::kReduce, 0};
  EXPECT_NE(std::find(rs.ops.begin(), rs.ops.end(), expected), rs.ops.end()) << rs;
}

TEST(Invert, BroadcastBecomesReduce) {
  for (int root : {0, 5}) {
    const Algorithm bc = tree_broadcast(8, root);
    expect_valid(bc);
    const Algorithm red = invert(bc);
    EXPECT_EQ(red.collective.kind, CollectiveKind::kReduce);
    EXPECT_EQ(red.collective.root, root);
    EXPECT_EQ(red.num_steps(), 3);
    expect_valid(red);
  }
}

TEST(Invert, InverseOfInverseIsTheOriginal) {
  Algorithm ag = ring_allgather(5, 2);
  Algorithm back = invert(invert(ag));
  sort_ops(ag);
  EXPECT_EQ(back.ops, ag.ops);
  EXPECT_EQ(back.collective, ag.collective);
  const Algorithm bc = tree_broadcast(8, 3);
  EXPECT_EQ(invert(invert(bc)).ops, bc.ops);
}

TEST(Invert, GatherAndScatterSwapWithCopies) {
  const Algorithm sc = invert(direct_gather(4, 2));
  EXPECT_EQ(sc.collective, make_collective(CollectiveKind::kScatter, 4, 1, 2));
  for (const ChunkOp& op : sc.ops) EXPECT_EQ(op.kind, OpKind::kCopy);
  expect_valid(sc);
  expect_valid(invert(sc));
}

TEST(Invert, RedundantDeliveriesAreDropped) {
  // A broadcast that sends the chunk to rank 1 twice (steps 0 and 1) and to rank 2 twice in
  // one step (from 0 and from 1 is impossible at step 0, so use step 1 from both 0 and 1).
  Algorithm bc;
  bc.collective = make_collective(CollectiveKind::kBroadcast, 3);
  bc.ops = {{0, 0, 1, OpKind::kCopy, 0},
            {0, 0, 1, OpKind::kCopy, 1},
            {0, 0, 2, OpKind::kCopy, 1},
            {0, 1, 2, OpKind::kCopy, 1}};
  const Algorithm red = invert(bc);
  EXPECT_EQ(red.ops.size(), 2u) << red;
  expect_valid(red);
}

TEST(Invert, DeliveryBackToTheRootIsDropped) {
  // The root holds the chunk from the start: rank 1's send back to it at step 1 is redundant.
  Algorithm bc;
  bc.collective = make_collective(CollectiveKind::kBroadcast, 3);
  bc.ops = {{0, 0, 1, OpKind::kCopy, 0}, {0, 1, 0, OpKind::kCopy, 1}, {0, 1, 2, OpKind::kCopy, 1}};
  const Algorithm red = invert(bc);
  ASSERT_EQ(red.ops.size(), 2u) << red;
  for (const ChunkOp& op : red.ops) EXPECT_NE(op.src, 0) << red;  // inverse: nothing from rank 0
  expect_valid(red);
}

TEST(Invert, PartiallyRedundantMultiChunkOpIsSplit) {
  // Rank 1 receives chunks 0..2 at step 0, then rank 0 resends 0..3 (only chunk 3 is new).
  Algorithm bc;
  bc.collective = make_collective(CollectiveKind::kBroadcast, 2, 4);
  bc.ops = {{0, 0, 1, OpKind::kCopy, 0, -1, 3}, {0, 0, 1, OpKind::kCopy, 1, -1, 4}};
  const Algorithm red = invert(bc);
  ASSERT_EQ(red.ops.size(), 2u) << red;
  EXPECT_EQ(red.ops[0].chunk, 3);
  EXPECT_EQ(red.ops[0].count, 1);
  EXPECT_EQ(red.ops[0].step, 0);
  EXPECT_EQ(red.ops[1].count, 3);
  expect_valid(red);
}

TEST(Invert, RejectsAllReduceAndAllToAll) {
  Algorithm a;
  a.collective = make_collective(CollectiveKind::kAllReduce, 4);
  EXPECT_THROW(invert(a), UserError);
  a.collective = make_collective(CollectiveKind::kAllToAll, 4);
  EXPECT_THROW(invert(a), UserError);
}

TEST(Invert, RejectsCombiningAlgorithmWithCopies) {
  Algorithm a = invert(ring_allgather(4));
  a.ops[0].kind = OpKind::kCopy;
  EXPECT_THROW(invert(a), UserError);
}

TEST(AllReduceFrom, RingReduceScatterThenRingAllGather) {
  for (int n : {2, 4, 7})
    for (int chunks : {1, 2}) {
      const Algorithm ag = ring_allgather(n, chunks);
      const Algorithm ar = allreduce_from(invert(ag), ag);
      EXPECT_EQ(ar.collective, make_collective(CollectiveKind::kAllReduce, n, chunks));
      EXPECT_EQ(ar.num_steps(), 2 * (n - 1));
      EXPECT_EQ(ar.ops.size(), static_cast<size_t>(2 * n * (n - 1)));
      expect_valid(ar);
    }
}

TEST(AllReduceFrom, TheOrderMatters) {
  const Algorithm ag = ring_allgather(4);
  Algorithm ar = allreduce_from(invert(ag), ag);
  for (ChunkOp& op : ar.ops)
    if (op.kind == OpKind::kCopy) op.step -= 3;  // allgather runs before the reduction finished
  EXPECT_FALSE(verify::verify_algorithm(ar).ok());
}

TEST(AllReduceFrom, RoundsPerStepConcatenate) {
  Algorithm ag = ring_allgather(3);
  ag.rounds_per_step = {1, 2};
  Algorithm rs = invert(ag);
  EXPECT_EQ(rs.rounds_per_step, (std::vector<int>{2, 1}));
  EXPECT_EQ(allreduce_from(rs, ag).rounds_per_step, (std::vector<int>{2, 1, 1, 2}));
}

TEST(AllReduceFrom, RejectsMismatchedInputs) {
  const Algorithm ag = ring_allgather(4);
  EXPECT_THROW(allreduce_from(ag, ag), UserError);
  EXPECT_THROW(allreduce_from(invert(ag), invert(ag)), UserError);
  EXPECT_THROW(allreduce_from(invert(ring_allgather(4, 2)), ag), UserError);
  EXPECT_THROW(allreduce_from(invert(ring_allgather(5)), ag), UserError);
}

}  // namespace
}  // namespace ccsynth::synth
