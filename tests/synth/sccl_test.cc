// SCCL synthesis: instance solving (SAT/UNSAT of SCCL tables 4-5), bandwidth models, bounds,
// combining collectives and the Pareto search. Every algorithm is checked by the verifier.

#include "ccsynth/synth/sccl.h"

#include <gtest/gtest.h>

#include <map>
#include <tuple>
#include <vector>

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
    EXPECT_LE(n, link->lanes * a.rounds_per_step[step])
        << "step " << step << " " << src << "->" << dst;
  }
}

struct Case {
  const char* topology;
  CollectiveKind kind;
  int chunks, steps, rounds;
  bool sat;
};

// "dgx1_allgather_C1_S2_R2", with "_unsat" for the rows no algorithm exists for.
std::string case_name(const Case& c) {
  return std::string(c.topology) + "_" + to_string(c.kind) + "_C" + std::to_string(c.chunks) +
         "_S" + std::to_string(c.steps) + "_R" + std::to_string(c.rounds) + (c.sat ? "" : "_unsat");
}

void PrintTo(const Case& c, std::ostream* os) { *os << case_name(c); }

class SccLInstanceTest : public ::testing::TestWithParam<Case> {};

TEST_P(SccLInstanceTest, MatchesPaperAndVerifies) {
  const Case& c = GetParam();
  const Topology t = std::string(c.topology) == "dgx1" ? dgx1() : amd_z52_ring_topology();
  const InstanceResult r = synthesize_sccl(c.kind, bandwidth_model(t), c.chunks, c.steps, c.rounds);
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
    ::testing::Values(Case{"dgx1", CollectiveKind::kAllGather, 1, 2, 2, true},
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
                      Case{"amd", CollectiveKind::kAllToAll, 8, 4, 7, false}),
    [](const ::testing::TestParamInfo<Case>& info) { return case_name(info.param); });

// The bounds filter in synthesize_sccl() must agree with the solver: below b_l the encoding itself
// is UNSAT (allgather (2,2,2) on the DGX-1: 14 chunks to receive, 12 lane-rounds).
TEST(SccLInstance, SolverProvesBelowBandwidthBoundUnsat) {
  SyncollInstance in;
  in.collective = make_collective(CollectiveKind::kAllGather, 8, 2);
  in.bandwidth = bandwidth_model(dgx1());
  in.steps = 2;
  in.rounds = 2;
  EXPECT_EQ(solve_sccl_instance(in).status, SynthStatus::kInfeasible);
  in.rounds = 3;  // (2,2,3) is SAT (table 4) also without the symmetry breaking
  SolveOptions plain;
  plain.break_symmetry = false;
  const InstanceResult r = solve_sccl_instance(in, plain);
  ASSERT_TRUE(r.algorithm);
  expect_verified(*r.algorithm, dgx1());
}

TEST(SccLInstance, SmtCoreAgreesWithSatCore) {
  SolveOptions smt;
  smt.use_sat_core = false;
  const Topology t = dgx1();
  const InstanceResult r =
      synthesize_sccl(CollectiveKind::kAllGather, bandwidth_model(t), 1, 2, 2, 0, smt);
  ASSERT_TRUE(r.algorithm);
  expect_verified(*r.algorithm, t);
}

TEST(SccLInstance, RejectsBadShapes) {
  const BandwidthModel m = bandwidth_model(dgx1());
  EXPECT_THROW(synthesize_sccl(CollectiveKind::kAllToAll, m, 3, 2, 2), UserError);   // C % P != 0
  EXPECT_THROW(synthesize_sccl(CollectiveKind::kAllReduce, m, 8, 3, 3), UserError);  // odd S
  EXPECT_THROW(synthesize_sccl(CollectiveKind::kCustom, m, 1, 2, 2), UserError);
  SyncollInstance in;
  in.collective = make_collective(CollectiveKind::kReduceScatter, 8, 1);
  in.bandwidth = m;
  EXPECT_THROW(solve_sccl_instance(in), UserError);  // combining
  in.collective = make_collective(CollectiveKind::kAllGather, 8, 1);
  in.steps = 3;
  in.rounds = 2;
  EXPECT_THROW(solve_sccl_instance(in), UserError);  // R < S
}

TEST(SccLCollective, PaperChunkCounts) {
  EXPECT_EQ(sccl_collective(CollectiveKind::kAllGather, 8, 6).num_chunks(), 48);
  const Collective a2a = sccl_collective(CollectiveKind::kAllToAll, 8, 8);
  EXPECT_EQ(a2a.chunks_per_rank, 1);
  EXPECT_EQ(a2a.num_chunks(), 64);  // one chunk per (source, destination)
  EXPECT_EQ(sccl_collective(CollectiveKind::kAllToAll, 8, 24).chunks_per_rank, 3);
  EXPECT_EQ(sccl_collective(CollectiveKind::kAllReduce, 8, 48).chunks_per_rank, 6);
  EXPECT_EQ(sccl_collective(CollectiveKind::kBroadcast, 8, 6).num_chunks(), 6);
}

TEST(SccLModel, Dgx1LinksCountLanes) {
  const BandwidthModel m = bandwidth_model(dgx1());
  EXPECT_EQ(m.num_ranks, 8);
  ASSERT_EQ(m.constraints.size(), 32u);  // 16 NVLink pairs, both directions
  int doubles = 0;
  for (const BandwidthConstraint& c : m.constraints) {
    ASSERT_EQ(c.edges.size(), 1u);
    doubles += c.chunks_per_round == 2;
  }
  EXPECT_EQ(doubles, 16);
  EXPECT_EQ(m.edges().size(), 32u);
  EXPECT_EQ(reversed(reversed(m)), m);
}

TEST(SccLModel, SwitchGivesPortConstraints) {
  Topology t;
  t.name = "sw4";
  t.num_ranks = 4;
  Switch sw;
  sw.name = "nvs";
  sw.ranks = {0, 1, 2, 3};
  sw.port_beta_us_per_mb = 10;
  t.switches.push_back(sw);
  const BandwidthModel m = bandwidth_model(t);
  ASSERT_EQ(m.constraints.size(), 8u);  // egress + ingress per rank
  for (const BandwidthConstraint& c : m.constraints) {
    EXPECT_EQ(c.edges.size(), 3u);
    EXPECT_EQ(c.chunks_per_round, 1);
  }
  // Allgather through a switch: each rank receives 3 chunks through one ingress port.
  EXPECT_EQ(sccl_bandwidth_lower_bound(CollectiveKind::kAllGather, m), make_ratio(3, 1));
  const InstanceResult r = synthesize_sccl(CollectiveKind::kAllGather, m, 1, 1, 3);
  ASSERT_TRUE(r.algorithm);
  expect_verified(*r.algorithm, t);
  EXPECT_EQ(synthesize_sccl(CollectiveKind::kAllGather, m, 1, 1, 2).status,
            SynthStatus::kInfeasible);
}

TEST(SccLBounds, PaperBounds) {
  const BandwidthModel dgx = bandwidth_model(dgx1());
  const BandwidthModel amd = bandwidth_model(amd_z52_ring_topology());
  EXPECT_EQ(sccl_latency_lower_bound(CollectiveKind::kAllGather, dgx), 2);
  EXPECT_EQ(sccl_bandwidth_lower_bound(CollectiveKind::kAllGather, dgx), make_ratio(7, 6));
  EXPECT_EQ(sccl_latency_lower_bound(CollectiveKind::kAllReduce, dgx), 4);
  EXPECT_EQ(sccl_bandwidth_lower_bound(CollectiveKind::kAllReduce, dgx), make_ratio(7, 24));
  EXPECT_EQ(sccl_latency_lower_bound(CollectiveKind::kAllGather, amd), 4);
  EXPECT_EQ(sccl_bandwidth_lower_bound(CollectiveKind::kAllGather, amd), make_ratio(7, 2));
  // The AMD ring's bisection bounds alltoall.
  EXPECT_EQ(sccl_bandwidth_lower_bound(CollectiveKind::kAllToAll, amd), make_ratio(1, 1));
  EXPECT_EQ(sccl_latency_lower_bound(CollectiveKind::kBroadcast, amd), 4);
}

std::vector<std::tuple<int, int, int>> shapes(const ParetoResult& r) {
  std::vector<std::tuple<int, int, int>> out;
  for (const ParetoPoint& p : r.frontier) out.emplace_back(p.chunks, p.steps, p.rounds);
  return out;
}

// Table 5: allgather (1,4,4) latency-optimal, (2,7,7) bandwidth-optimal (k = 0), (2,4,7) both.
TEST(SccLPareto, AmdAllgatherTable5) {
  const Topology t = amd_z52_ring_topology();
  ParetoOptions o;
  o.k = 0;
  const ParetoResult r0 = synthesize_sccl_pareto(CollectiveKind::kAllGather, bandwidth_model(t), o);
  EXPECT_EQ(r0.status, SynthStatus::kOptimal);
  using S = std::tuple<int, int, int>;
  EXPECT_EQ(shapes(r0), (std::vector<S>{{1, 4, 4}, {2, 7, 7}}));
  ASSERT_EQ(r0.frontier.size(), 2u);
  EXPECT_TRUE(r0.frontier[0].latency_optimal);
  EXPECT_FALSE(r0.frontier[0].bandwidth_optimal);
  EXPECT_TRUE(r0.frontier[1].bandwidth_optimal);
  for (const ParetoPoint& p : r0.frontier) expect_verified(p.algorithm, t);
  o.k = 3;
  const ParetoResult r3 = synthesize_sccl_pareto(CollectiveKind::kAllGather, bandwidth_model(t), o);
  EXPECT_EQ(shapes(r3), (std::vector<S>{{2, 4, 7}}));
  EXPECT_TRUE(r3.frontier[0].latency_optimal && r3.frontier[0].bandwidth_optimal);
}

// Table 5: alltoall (8,4,8) is latency- and bandwidth-optimal on the AMD ring.
TEST(SccLPareto, AmdAlltoallTable5) {
  const Topology t = amd_z52_ring_topology();
  ParetoOptions o;
  o.k = 4;
  std::vector<ParetoAttempt> seen;
  const ParetoResult r = synthesize_sccl_pareto(CollectiveKind::kAllToAll, bandwidth_model(t), o, 0,
                                                [&](const ParetoAttempt& a) { seen.push_back(a); });
  EXPECT_EQ(shapes(r), (std::vector<std::tuple<int, int, int>>{{8, 4, 8}}));
  EXPECT_EQ(seen.size(), r.attempts.size());
  expect_verified(r.frontier.at(0).algorithm, t);
}

// Table 4, k = 0 prefix: (1,2,2) latency-optimal, then (2,3,3), (3,4,4).
TEST(SccLPareto, Dgx1AllgatherK0Prefix) {
  const Topology t = dgx1();
  ParetoOptions o;
  o.k = 0;
  o.max_steps = 4;
  const ParetoResult r = synthesize_sccl_pareto(CollectiveKind::kAllGather, bandwidth_model(t), o);
  EXPECT_EQ(shapes(r), (std::vector<std::tuple<int, int, int>>{{1, 2, 2}, {2, 3, 3}, {3, 4, 4}}));
  EXPECT_EQ(r.status, SynthStatus::kFeasible);  // stopped by max_steps before 7/6
  EXPECT_TRUE(r.frontier.at(0).latency_optimal);
  for (const ParetoPoint& p : r.frontier) expect_verified(p.algorithm, t);
}

TEST(SccLLeastSteps, AmdAllgatherNeedsFourSteps) {
  const Topology t = amd_z52_ring_topology();
  std::vector<int> tried;
  const InstanceResult r =
      synthesize_sccl_least_steps(CollectiveKind::kAllGather, bandwidth_model(t), 1, 0, 8, 0, {},
                                  [&](int s, const InstanceResult&) { tried.push_back(s); });
  ASSERT_TRUE(r.algorithm);
  EXPECT_EQ(r.algorithm->rounds_per_step.size(), 4u);
  EXPECT_EQ(tried, (std::vector<int>{4}));
  expect_verified(*r.algorithm, t);
}

// The paper's AMD ring is a subgraph of topologies' amdz52 (checked here link by link against
// SCCL sec. 5.1.2: GPU 1 reaches 0, 2, 3 over PCIe, GPU 5 reaches 4, 6, 7).
TEST(SccLModel, AmdRingUsesPcieOfGpus1And5) {
  const Topology t = amd_z52_ring_topology();
  validate(t);
  int pcie = 0;
  for (const Link& l : t.links) {
    if (l.kind == "pcie") {
      ++pcie;
      EXPECT_TRUE(l.src == 1 || l.dst == 1 || l.src == 5 || l.dst == 5);
    }
  }
  EXPECT_EQ(pcie, 4);
  EXPECT_EQ(t.diameter(), 4);
}

TEST(ScclModel, SharedSwitchPortIsOneConstraint) {
  // Nodes {0, 1} and {2, 3} with links inside; a switch over all four whose ports are shared
  // per node: the cross-node edges of a node share one egress and one ingress constraint.
  Topology t;
  t.name = "shared-nic";
  t.num_ranks = 4;
  t.nodes = {{0, 1}, {2, 3}};
  for (auto [a, b] : {std::pair{0, 1}, std::pair{1, 0}, std::pair{2, 3}, std::pair{3, 2}}) {
    t.links.push_back(Link{a, b, 1, 0.7, 5.0, "nvlink"});
  }
  t.switches.push_back(Switch{"ib", {0, 1, 2, 3}, 1.7, 100.0, "ib", {0, 0, 1, 1}});
  validate(t);
  const BandwidthModel m = bandwidth_model(t);
  int links = 0, ports = 0;
  for (const BandwidthConstraint& c : m.constraints) {
    if (c.label.rfind("link", 0) == 0) {
      ++links;
      continue;
    }
    ++ports;
    EXPECT_EQ(c.edges.size(), 4u) << c.label;  // both GPUs of a node to both of the other
    EXPECT_EQ(c.chunks_per_round, 1);
  }
  EXPECT_EQ(links, 4);
  EXPECT_EQ(ports, 4);  // egress and ingress of two shared ports
  t.switches[0].port_group.clear();
  int own = 0;
  for (const BandwidthConstraint& c : bandwidth_model(t).constraints) own += c.label[0] == 's';
  EXPECT_EQ(own, 8);  // a port per rank
}

}  // namespace
}  // namespace ccsynth::synth
