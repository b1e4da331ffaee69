#include "ccsynth/core/program.h"

#include <gtest/gtest.h>

namespace ccsynth {
namespace {

TEST(Program, StepTypeNamesRoundTrip) {
  for (const char* name : {"s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop"}) {
    const auto type = parse_step_type(name);
    ASSERT_TRUE(type.has_value()) << name;
    EXPECT_EQ(to_string(*type), name);
  }
  EXPECT_FALSE(parse_step_type("ra").has_value());
  EXPECT_FALSE(parse_protocol("simple").has_value());  // case-sensitive as in the runtime
  EXPECT_EQ(parse_protocol("LL128"), Protocol::kLL128);
}

TEST(Program, InstructionClasses) {
  EXPECT_TRUE(sends(StepType::kRecvCopySend));
  EXPECT_TRUE(receives(StepType::kRecvReduceSend));
  EXPECT_FALSE(sends(StepType::kRecvReduceCopy));
  EXPECT_TRUE(reduces(StepType::kReduce));
  EXPECT_FALSE(reduces(StepType::kCopy));
}

TEST(Program, InPlaceLocationsFollowNccl) {
  const Collective ag = make_collective(CollectiveKind::kAllGather, 4, 2);
  EXPECT_EQ(input_location(ag, {3, 1}, true), (BufferRef{Buffer::kOutput, 7}));
  EXPECT_EQ(input_location(ag, {3, 1}, false), (BufferRef{Buffer::kInput, 1}));
  const Collective rs = make_collective(CollectiveKind::kReduceScatter, 4, 2);
  EXPECT_EQ(output_location(rs, {3, 1}, true), (BufferRef{Buffer::kInput, 7}));
  const Collective ar = make_collective(CollectiveKind::kAllReduce, 4);
  EXPECT_EQ(output_location(ar, {1, 2}, true), (BufferRef{Buffer::kInput, 2}));
  EXPECT_EQ(output_location(ar, {1, 2}, false), (BufferRef{Buffer::kOutput, 2}));
}

TEST(Program, StructuralEqualityAndCounts) {
  Program p;
  p.num_ranks = 1;
  p.gpus.push_back({0,
                    1,
                    1,
                    0,
                    {{0,
                      -1,
                      -1,
                      0,
                      {Step{.type = StepType::kCopy,
                            .src_buffer = Buffer::kInput,
                            .dst_buffer = Buffer::kOutput,
                            .src_offset = 0,
                            .dst_offset = 0,
                            .count = 1}}}}});
  Program q = p;
  EXPECT_EQ(p, q);
  EXPECT_EQ(p.total_steps(), 1);
  q.gpus[0].threadblocks[0].steps[0].dst_offset = 1;
  EXPECT_NE(p, q);
}

}  // namespace
}  // namespace ccsynth
