#include "ccsynth/core/program.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "ccsynth/core/error.h"

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

// A program of `ranks` ranks with buffers of 2 chunks and no threadblocks yet.
Program empty_program(int ranks) {
  Program p;
  p.num_ranks = ranks;
  for (int r = 0; r < ranks; ++r) p.gpus.push_back({r, 2, 2, 0, {}});
  return p;
}

// Appends a threadblock to `rank` with one send (when send_peer >= 0) and one receive (when
// recv_peer >= 0) of chunk 0; returns its index.
int add_threadblock(Program& p, int rank, int send_peer, int recv_peer, int channel) {
  std::vector<Threadblock>& tbs = p.gpus[rank].threadblocks;
  Threadblock tb{static_cast<int>(tbs.size()), send_peer, recv_peer, channel, {}};
  if (recv_peer >= 0) {
    tb.steps.push_back({.type = StepType::kRecv, .dst_buffer = Buffer::kOutput, .dst_offset = 0});
  }
  if (send_peer >= 0) {
    tb.steps.push_back({.type = StepType::kSend, .src_buffer = Buffer::kInput, .src_offset = 0});
  }
  tbs.push_back(tb);
  return tb.id;
}

std::string structure_error(const Program& p) {
  try {
    validate_structure(p, "p.xml");
  } catch (const UserError& e) {
    return e.field() + ": " + e.reason();
  }
  return "";
}

TEST(Program, ConnectionsArePairedInKeyOrder) {
  Program p = empty_program(3);
  add_threadblock(p, 2, 0, -1, 1);  // 2 -> 0 on channel 1
  add_threadblock(p, 0, 1, 2, 1);   // 0 -> 1 on 1; receives 2 -> 0 on 1
  add_threadblock(p, 0, 1, -1, 0);  // 0 -> 1 on 0
  add_threadblock(p, 1, -1, 0, 1);  // receives 0 -> 1 on 1
  add_threadblock(p, 1, -1, 0, 0);  // receives 0 -> 1 on 0
  const std::vector<PairedConnection> connections = validated_connections(p, "p.xml");
  ASSERT_EQ(connections.size(), 3u);
  auto expect = [&](size_t i, int sender, int receiver, int channel, int sender_tb,
                    int receiver_tb) {
    const PairedConnection& c = connections[i];
    EXPECT_EQ(std::tie(c.sender, c.receiver, c.channel, c.sender_tb, c.receiver_tb),
              std::tie(sender, receiver, channel, sender_tb, receiver_tb))
        << "connection " << i;
  };
  expect(0, 0, 1, 0, 1, 1);
  expect(1, 0, 1, 1, 0, 0);
  expect(2, 2, 0, 1, 0, 0);
}

TEST(Program, ASecondThreadblockAtAConnectionIsReportedWhereItComesFirst) {
  Program p = empty_program(2);
  add_threadblock(p, 0, 1, -1, 0);
  add_threadblock(p, 0, -1, 1, 0);
  add_threadblock(p, 0, 1, -1, 0);  // the second sender of 0 -> 1 on channel 0
  add_threadblock(p, 0, 1, -1, 0);  // the third
  add_threadblock(p, 1, -1, 0, 0);
  add_threadblock(p, 1, 0, -1, 0);
  EXPECT_EQ(structure_error(p),
            "gpu[0]/tb[2]: two threadblocks send to rank 1 on channel 0 (tb 0 too)");
  // A defect of an earlier threadblock comes first.
  p.gpus[0].threadblocks[1].steps[0].dst_offset = 5;
  EXPECT_EQ(structure_error(p),
            "gpu[0]/tb[1]/step[0]: destination chunks [5, 6) of buffer 'o' are outside its 2 "
            "chunks");
  p.gpus[0].threadblocks[1].steps[0].dst_offset = 0;
  // Receivers alike, and a duplicate before a later defect.
  add_threadblock(p, 1, -1, 0, 0);
  p.gpus[0].threadblocks.resize(2);
  p.gpus[1].threadblocks.back().steps[0].dst_offset = 7;
  EXPECT_EQ(structure_error(p),
            "gpu[1]/tb[2]: two threadblocks receive from rank 0 on channel 0 (tb 0 too)");
}

TEST(Program, AnUnmatchedEndIsReportedForTheFirstConnection) {
  Program p = empty_program(3);
  add_threadblock(p, 2, 1, -1, 0);  // 2 -> 1 on 0: no receiver
  add_threadblock(p, 1, -1, 0, 3);  // 0 -> 1 on 3: no sender
  add_threadblock(p, 0, 2, -1, 0);  // 0 -> 2 on 0: no receiver
  EXPECT_EQ(structure_error(p),
            "gpu[1]/tb[0]: receives from rank 0 on channel 3 but no threadblock of rank 0 sends "
            "to rank 1 on that channel");
  add_threadblock(p, 0, 1, -1, 3);
  EXPECT_EQ(structure_error(p),
            "gpu[0]/tb[0]: sends to rank 2 on channel 0 but no threadblock of rank 2 receives "
            "from rank 0 on that channel");
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
