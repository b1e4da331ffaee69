#include "ccsynth/core/collective.h"

#include <gtest/gtest.h>

#include "ccsynth/core/error.h"

namespace ccsynth {
namespace {

struct Sizes {
  CollectiveKind kind;
  int input;  // in units of C, times R when `input_times_r`
  bool input_times_r;
  bool output_times_r;
  int chunks_times_r;  // 0: C chunks, 1: R*C, 2: R*R*C
  bool combining;
};

// gtest prints a case by its collective.
void PrintTo(const Sizes& s, std::ostream* os) { *os << to_string(s.kind); }

class CollectiveSizes : public ::testing::TestWithParam<Sizes> {};

TEST_P(CollectiveSizes, BufferAndChunkCounts) {
  const Sizes p = GetParam();
  for (int R : {1, 2, 5, 8}) {
    for (int C : {1, 3}) {
      const Collective c = make_collective(p.kind, R, C, R - 1);
      EXPECT_EQ(c.input_chunks, p.input_times_r ? R * C : C);
      EXPECT_EQ(c.output_chunks, p.output_times_r ? R * C : C);
      const int expected_chunks = p.chunks_times_r == 0   ? C
                                  : p.chunks_times_r == 1 ? R * C
                                                          : R * R * C;
      EXPECT_EQ(c.num_chunks(), expected_chunks);
      EXPECT_EQ(c.combining, p.combining);
      EXPECT_NO_THROW(validate(c));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, CollectiveSizes,
    ::testing::Values(Sizes{CollectiveKind::kAllGather, 0, false, true, 1, false},
                      Sizes{CollectiveKind::kReduceScatter, 0, true, false, 1, true},
                      Sizes{CollectiveKind::kAllReduce, 0, true, true, 1, true},
                      Sizes{CollectiveKind::kAllToAll, 0, true, true, 2, false},
                      Sizes{CollectiveKind::kBroadcast, 0, false, false, 0, false},
                      Sizes{CollectiveKind::kReduce, 0, false, false, 0, true},
                      Sizes{CollectiveKind::kGather, 0, false, true, 1, false},
                      Sizes{CollectiveKind::kScatter, 0, true, false, 1, false}),
    [](const auto& info) { return to_string(info.param.kind); });

TEST(Collective, AllGatherRelation) {
  // SCCL table 1: chunk c starts at rank c / C and ends everywhere.
  const Collective c = make_collective(CollectiveKind::kAllGather, 4, 2);
  EXPECT_EQ(c.pre_ranks(5), std::vector<int>({2}));
  EXPECT_EQ(c.chunks[5].pre[0].index, 1);
  EXPECT_EQ(c.post_ranks(5), std::vector<int>({0, 1, 2, 3}));
  EXPECT_EQ(c.chunks[5].post[3].index, 5);
}

TEST(Collective, AllToAllRelation) {
  const Collective c = make_collective(CollectiveKind::kAllToAll, 3, 2);
  // chunk (s=1, d=2, c=1)
  const int k = (1 * 3 + 2) * 2 + 1;
  EXPECT_EQ(c.chunks[k].pre, std::vector<Slot>({{1, 2 * 2 + 1}}));
  EXPECT_EQ(c.chunks[k].post, std::vector<Slot>({{2, 1 * 2 + 1}}));
}

TEST(Collective, ReduceScatterRelation) {
  const Collective c = make_collective(CollectiveKind::kReduceScatter, 4, 2);
  EXPECT_EQ(c.pre_ranks(5), std::vector<int>({0, 1, 2, 3}));
  EXPECT_EQ(c.chunks[5].post, std::vector<Slot>({{2, 1}}));
}

TEST(Collective, RootedRelations) {
  const Collective b = make_collective(CollectiveKind::kBroadcast, 4, 1, 2);
  EXPECT_EQ(b.pre_ranks(0), std::vector<int>({2}));
  const Collective g = make_collective(CollectiveKind::kGather, 4, 1, 3);
  EXPECT_EQ(g.chunks[1].post, std::vector<Slot>({{3, 1}}));
  const Collective s = make_collective(CollectiveKind::kScatter, 4, 1, 3);
  EXPECT_EQ(s.chunks[1].pre, std::vector<Slot>({{3, 1}}));
  EXPECT_EQ(s.chunks[1].post, std::vector<Slot>({{1, 0}}));
}

TEST(Collective, AllToNext) {
  const Collective c = make_alltonext(4, 2);
  EXPECT_EQ(c.num_chunks(), 6);
  EXPECT_EQ(c.chunks[2].pre, std::vector<Slot>({{1, 0}}));
  EXPECT_EQ(c.chunks[2].post, std::vector<Slot>({{2, 0}}));
  EXPECT_NO_THROW(validate(c));
}

TEST(Collective, ParsesNames) {
  EXPECT_EQ(parse_collective_kind("AllGather"), CollectiveKind::kAllGather);
  EXPECT_EQ(parse_collective_kind("reduce_scatter"), CollectiveKind::kReduceScatter);
  EXPECT_EQ(parse_collective_kind("all-reduce"), CollectiveKind::kAllReduce);
  EXPECT_THROW(parse_collective_kind("allscatter"), UserError);
  for (CollectiveKind k : builtin_collective_kinds())
    EXPECT_EQ(parse_collective_kind(to_string(k)), k);
}

TEST(Collective, RejectsBadArguments) {
  EXPECT_THROW(make_collective(CollectiveKind::kAllGather, 0), UserError);
  EXPECT_THROW(make_collective(CollectiveKind::kAllGather, 4, 0), UserError);
  EXPECT_THROW(make_collective(CollectiveKind::kBroadcast, 4, 1, 4), UserError);
  EXPECT_THROW(make_collective(CollectiveKind::kCustom, 4), UserError);
}

TEST(Collective, ValidateCatchesBrokenRelations) {
  Collective c = make_collective(CollectiveKind::kAllGather, 2);
  c.chunks[0].post.push_back({1, 1});  // slot (1,1) is chunk 1's
  EXPECT_THROW(validate(c), UserError);
  c = make_collective(CollectiveKind::kAllGather, 2);
  c.chunks[0].pre.push_back({1, 0});
  EXPECT_THROW(validate(c), UserError);
  c = make_collective(CollectiveKind::kAllGather, 2);
  c.chunks[0].post[0].index = 7;
  EXPECT_THROW(validate(c), UserError);
}

}  // namespace
}  // namespace ccsynth
