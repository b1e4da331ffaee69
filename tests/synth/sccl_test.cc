// SCCL synthesis: instance solving (SAT/UNSAT of SCCL tables 4-5), bandwidth models, bounds,
// combining collectives and the Pareto search. Every algorithm is checked by the verifier.

#include "ccsynth/synth/sccl.h"

#include <gtest/gtest.h>

#include <tuple>

#include "ccsynth/core/error.h"
#include "ccsynth/verify/verify_algorithm.h"

namespace ccsynth::synth {
namespace {

// DGX-1 as in SCCL fig. 1: the ring 0-1-4-5-6-7-2-3 with two NVLinks per edge and the ring
// 0-2-1-3-6-4-7-5 with one, both bidirectional.
Topology dgx1() {
  Topology t;
  t.name = "dgx1";
  t.num_ranks = 8;
  t.nodes = {{0, 1, 2, 3, 4, 5, 6, 7}};
  auto ring = [&](const std::vector<int>& order, int lanes) {
    for (size_t i = 0; i < order.size(); ++i) {
      const int a = order[i], b = order[(i + 1) % order.size()];
      for (auto [s, d] : {std::pair{a, b}, std::pair{b, a}}) {
        Link l;
        l.src = s;
        l.dst = d;
        l.lanes = lanes;
        l.alpha_us = 0.7;
        l.beta_us_per_mb = 40;
        l.kind = "nvlink";
        t.links.push_back(l);
      }
    }
  };
  ring({0, 1, 4, 5, 6, 7, 2, 3}, 2);
  ring({0, 2, 1, 3, 6, 4, 7, 5}, 1);
  validate(t);
  return t;
}

[[maybe_unused]] Topology ring_topology(int n) {
  Topology t;
  t.name = "ring" + std::to_string(n);
  t.num_ranks = n;
  for (int i = 0; i < n; ++i) {
    for (auto [s, d] : {std::pair{i, (i + 1) % n}, std::pair{(i + 1) % n, i}}) {
      Link l;
      l.src = s;
      l.dst = d;
      l.beta_us_per_mb = 40;
      t.links.push_back(l);
    }
  }
  return t;
}

void expect_verified(const Algorithm& a, const Topology& t) {
  const verify::VerifyReport report = verify::verify_algorithm(a, &t);
  EXPECT_TRUE(report.ok()) << report.summary() << a;
}

// Checks the shape the paper's (C, S, R) promises: S steps, R rounds in total, and per step no
// link carries more than lanes * r_s chunks.
void expect_shape(const Algorithm& a, const Topology& t, int steps, int rounds) {
  ASSERT_EQ(static_cast<int>(a.rounds_per_step.size()), steps);
  int total = 0;
  for (int r : a.rounds_per_step) {
    EXPECT_GE(r, 1);
    total += r;
  }
  EXPECT_EQ(total, rounds);
  EXPECT_LE(a.num_steps(), steps);
  std::map<std::tuple<int, int, int>, int> load;
  for (const ChunkOp& op : a.ops) load[{op.step, op.src, op.dst}] += op.count;
  for (const auto& [key, n] : load) {
    const auto [step, src, dst] = key;
    const Link* link = t.find_link(src, dst);
    ASSERT_NE(link, nullptr);
    EXPECT_LE(n, link->lanes * a.rounds_per_step[step]) << "step " << step << " " << src << "->"
                                                         << dst;
  }
}

struct Case {
  const char* topology;
  CollectiveKind kind;
  int chunks, steps, rounds;
  bool sat;
};

class SccLInstanceTest : public ::testing::TestWithParam<Case> {};

TEST_P(SccLInstanceTest, MatchesPaperAndVerifies) {
  const Case& c = GetParam();
  const Topology t = std::string(c.topology) == "dgx1" ? dgx1() : amd_z52_ring_topology();
  const InstanceResult r =
      synthesize(c.kind, bandwidth_model(t), c.chunks, c.steps, c.rounds);
  if (!c.sat) {
    EXPECT_EQ(r.status, SynthStatus::kInfeasible);
    EXPECT_FALSE(r.algorithm);
    return;
  }
  ASSERT_EQ(r.status, SynthStatus::kOptimal);
  ASSERT_TRUE(r.algorithm);
  EXPECT_EQ(r.algorithm->collective, sccl_collective(c.kind, 8, c.chunks));
  expect_verified(*r.algorithm, t);
  if (c.kind != CollectiveKind::kAllReduce) expect_shape(*r.algorithm, t, c.steps, c.rounds);
}

// SCCL table 4 (DGX-1) and table 5 (AMD Z52), the fast rows, plus UNSAT neighbours that make the
// rows Pareto-optimal (one chunk more at the same S and R, or one step fewer).
INSTANTIATE_TEST_SUITE_P(
    Tables, SccLInstanceTest,
    ::testing::Values(
        Case{"dgx1", CollectiveKind::kAllGather, 1, 2, 2, true},
        Case{"dgx1", CollectiveKind::kAllGather, 1, 1, 1, false},
        Case{"dgx1", CollectiveKind::kAllGather, 2, 2, 2, false},
        Case{"dgx1", CollectiveKind::kAllGather, 2, 3, 3, true},
        Case{"dgx1", CollectiveKind::kAllGather, 3, 3, 3, false},
        Case{"dgx1", CollectiveKind::kAllGather, 3, 4, 4, true},
        Case{"dgx1", CollectiveKind::kAllGather, 2, 2, 3, true},
        Case{"dgx1", CollectiveKind::kAllGather, 7, 3, 7, false},
        Case{"dgx1", CollectiveKind::kReduceScatter, 2, 2, 3, true},
        Case{"dgx1", CollectiveKind::kAllReduce, 8, 4, 4, true},
        Case{"dgx1", CollectiveKind::kAllReduce, 16, 4, 6, true},
        Case{"dgx1", CollectiveKind::kBroadcast, 2, 2, 2, true},
        Case{"dgx1", CollectiveKind::kBroadcast, 6, 3, 3, true},
        Case{"dgx1", CollectiveKind::kBroadcast, 6, 3, 5, true},
        Case{"dgx1", CollectiveKind::kReduce, 6, 3, 3, true},
        Case{"dgx1", CollectiveKind::kGather, 1, 2, 2, true},
        Case{"dgx1", CollectiveKind::kScatter, 2, 3, 3, true},
        Case{"dgx1", CollectiveKind::kAllToAll, 8, 3, 3, true},
        Case{"dgx1", CollectiveKind::kAllToAll, 8, 2, 3, true},
        Case{"dgx1", CollectiveKind::kAllToAll, 8, 2, 2, false},
        Case{"amd", CollectiveKind::kAllGather, 1, 4, 4, true},
        Case{"amd", CollectiveKind::kAllGather, 1, 3, 3, false},
        Case{"amd", CollectiveKind::kAllGather, 2, 7, 7, true},
        Case{"amd", CollectiveKind::kAllGather, 2, 4, 7, true},
        Case{"amd", CollectiveKind::kAllReduce, 16, 8, 14, true},
        Case{"amd", CollectiveKind::kBroadcast, 2, 4, 4, true},
        Case{"amd", CollectiveKind::kBroadcast, 4, 5, 5, true},
        Case{"amd", CollectiveKind::kGather, 2, 4, 7, true},
        Case{"amd", CollectiveKind::kAllToAll, 8, 4, 8, true},
        Case{"amd", CollectiveKind::kAllToAll, 8, 4, 7, false}));

}  // namespace
}  // namespace ccsynth::synth
