#include "ccsynth/synth/tacos.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/compiler/schedule_order.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/synth/combine.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"

namespace ccsynth::synth {
namespace {

constexpr double kAlpha = 0.5;
constexpr double kGbps = 50;
constexpr int64_t kMiB = 1 << 20;
// One 1 MiB chunk over a 50 GB/s, 0.5 us link (TACOS sec. V costs).
const double kChunkUs = kAlpha + transfer_us(beta_from_gbps(kGbps), kMiB);

Topology blank(const std::string& name, int ranks) {
  Topology t;
  t.name = name;
  t.num_ranks = ranks;
  t.nodes.push_back({});
  for (int r = 0; r < ranks; ++r) t.nodes[0].push_back(r);
  return t;
}

void link(Topology& t, int a, int b, double alpha = kAlpha, double gbps = kGbps, int lanes = 1) {
  t.links.push_back({a, b, lanes, alpha, beta_from_gbps(gbps), "generic"});
}

void pair(Topology& t, int a, int b, double alpha = kAlpha, double gbps = kGbps) {
  link(t, a, b, alpha, gbps);
  link(t, b, a, alpha, gbps);
}

Topology ring(int n) {
  Topology t = blank("ring:" + std::to_string(n), n);
  for (int r = 0; r < n; ++r) pair(t, r, (r + 1) % n);
  return t;
}

Topology uring(int n) {
  Topology t = blank("uring:" + std::to_string(n), n);
  for (int r = 0; r < n; ++r) link(t, r, (r + 1) % n);
  return t;
}

Topology mesh(int x, int y) {
  Topology t = blank("mesh2d:" + std::to_string(x) + "x" + std::to_string(y), x * y);
  for (int r = 0; r < x * y; ++r) {
    if (r % x + 1 < x) pair(t, r, r + 1);
    if (r / x + 1 < y) pair(t, r, r + x);
  }
  return t;
}

Topology hypercube(int dims) {
  Topology t = blank("hypercube:" + std::to_string(dims), 1 << dims);
  for (int r = 0; r < t.num_ranks; ++r) {
    for (int d = 0; d < dims; ++d) {
      if (!(r & (1 << d))) pair(t, r, r | (1 << d));
    }
  }
  return t;
}

Topology switched(int n) {
  Topology t = blank("switch:" + std::to_string(n), n);
  Switch sw;
  sw.name = "sw";
  for (int r = 0; r < n; ++r) sw.ranks.push_back(r);
  sw.alpha_us = kAlpha;
  sw.port_beta_us_per_mb = beta_from_gbps(kGbps);
  t.switches.push_back(sw);
  return t;
}

// A small heterogeneous two-node machine: 2x2 fast rings per node (200 GB/s), nodes joined by
// per-position switches (25 GB/s) as in TACOS's RFS; plus one asymmetric slow shortcut.
Topology hetero() {
  Topology t = blank("hetero", 8);
  for (int node = 0; node < 2; ++node) {
    const int b = node * 4;
    for (int i = 0; i < 4; ++i) pair(t, b + i, b + (i + 1) % 4, 0.2, 200);
  }
  for (int p = 0; p < 4; ++p) {
    Switch sw;
    sw.name = "sw" + std::to_string(p);
    sw.ranks = {p, p + 4};
    sw.alpha_us = 1.0;
    sw.port_beta_us_per_mb = beta_from_gbps(25);
    t.switches.push_back(sw);
  }
  link(t, 0, 6, 2.0, 10);
  return t;
}

// TACOS's Ring x FullyConnected x Switch (sec. VI) at 200/100/50 GB/s: rank = i + a*j + a*b*k,
// one switch per (i, j) across the c nodes.
Topology rfs(int a, int b, int c) {
  Topology t = blank("rfs", a * b * c);
  for (int k = 0; k < c; ++k) {
    for (int j = 0; j < b; ++j) {
      for (int i = 0; i < a; ++i) {
        const int r = i + a * j + a * b * k;
        if (a > 2 || i == 0) pair(t, r, i + 1 < a ? r + 1 : r - i, kAlpha, 200);
        for (int j2 = j + 1; j2 < b; ++j2) pair(t, r, i + a * j2 + a * b * k, kAlpha, 100);
      }
    }
  }
  for (int p = 0; p < a * b; ++p) {
    Switch sw;
    sw.name = "sw" + std::to_string(p);
    for (int k = 0; k < c; ++k) sw.ranks.push_back(p + k * a * b);
    sw.alpha_us = kAlpha;
    sw.port_beta_us_per_mb = beta_from_gbps(50);
    t.switches.push_back(sw);
  }
  return t;
}

// A topology with links whose cost is `alpha` only (beta tiny) for hand-checked TEN times.
Topology alpha_only(int n, const std::vector<std::tuple<int, int, double>>& links) {
  Topology t = blank("alpha_only", n);
  for (auto [a, b, alpha] : links) link(t, a, b, alpha, 1e9);
  return t;
}

TacosOptions bytes_per_chunk(const Collective& c, int64_t chunk_bytes) {
  TacosOptions o;
  o.bytes = chunk_bytes * c.input_chunks;
  return o;
}

void expect_verified(const Algorithm& a, const Topology& t) {
  const verify::VerifyReport report = verify::verify_algorithm(a, &t);
  EXPECT_TRUE(report.ok()) << report.summary();
}

// Every op's source held the chunk (pre, or delivered by an op that started earlier and ran in
// an earlier step) when the op starts: the causality chunk replacement must keep (sec. IV.F).
void expect_causal(const Algorithm& a) {
  const Collective& c = a.collective;
  std::set<std::pair<int, int>> pre;  // (chunk, rank)
  for (int k = 0; k < c.num_chunks(); ++k) {
    for (int r : c.pre_ranks(k)) pre.insert({k, r});
  }
  std::map<std::pair<int, int>, const ChunkOp*> delivered;
  for (const ChunkOp& op : a.ops) delivered[{op.chunk, op.dst}] = &op;
  for (const ChunkOp& op : a.ops) {
    if (pre.count({op.chunk, op.src})) continue;
    auto it = delivered.find({op.chunk, op.src});
    ASSERT_NE(it, delivered.end()) << op;
    EXPECT_LT(it->second->step, op.step) << op;
    EXPECT_LT(it->second->start_us, op.start_us) << op;
  }
}

double last_start(const Algorithm& a) {
  double t = 0;
  for (const ChunkOp& op : a.ops) t = std::max(t, op.start_us);
  return t;
}

TEST(TenLinks, UnwindsSwitchWithDegree) {
  const Topology t = switched(4);
  const double beta = beta_from_gbps(kGbps);
  const auto d1 = ten_links(t, kMiB, 1);
  ASSERT_EQ(d1.size(), 4u);  // a unidirectional ring (Fig. 13(b))
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(d1[i].src, i);
    EXPECT_EQ(d1[i].dst, (i + 1) % 4);
    EXPECT_DOUBLE_EQ(d1[i].cost_us, kAlpha + beta);
  }
  const auto d2 = ten_links(t, kMiB, 2);
  ASSERT_EQ(d2.size(), 8u);
  EXPECT_EQ(d2[1].dst, 2);
  EXPECT_DOUBLE_EQ(d2[1].cost_us, kAlpha + 2 * beta);  // port shared by 2 links
  const auto full = ten_links(t, kMiB, 0);
  ASSERT_EQ(full.size(), 12u);
  EXPECT_DOUBLE_EQ(full[0].cost_us, kAlpha + 3 * beta);
  EXPECT_EQ(ten_links(t, kMiB, 7).size(), 12u);
  EXPECT_THROW(ten_links(t, kMiB, -1), UserError);
}

TEST(TenLinks, DirectLinksWinOverSwitchPairs) {
  Topology t = switched(3);
  link(t, 0, 1, 0.1, 400, 2);
  const auto links = ten_links(t, kMiB, 2);
  ASSERT_EQ(links.size(), 6u);
  EXPECT_EQ(links[0].lanes, 2);
  EXPECT_DOUBLE_EQ(links[0].cost_us, 0.1 + transfer_us(beta_from_gbps(400), kMiB));
  EXPECT_EQ(std::count_if(links.begin(), links.end(),
                          [](const TenLink& l) { return l.src == 0 && l.dst == 1; }),
            1);
  const double beta = beta_from_gbps(kGbps);
  for (const TenLink& l : links) {
    if (l.src == 0 && l.dst == 2) {
      EXPECT_DOUBLE_EQ(l.cost_us, kAlpha + beta);  // rank 0's port serves one switch link
    }
    if (l.src == 1) {
      EXPECT_DOUBLE_EQ(l.cost_us, kAlpha + 2 * beta);
    }
  }
}

TEST(TenLinks, CheaperSwitchWinsSharedPairs) {
  // Two fast 2-rank "NVSwitches" {0,1}, {2,3} inside a slow 4-rank "IB" switch listed first:
  // intra pairs use the fast switch, the IB port is shared by the 2 inter-node links only.
  Topology t = blank("two_level", 4);
  t.switches.push_back({"ib", {0, 1, 2, 3}, 2.0, beta_from_gbps(10), "ib"});
  t.switches.push_back({"nv0", {0, 1}, 0.5, beta_from_gbps(100), "nvswitch"});
  t.switches.push_back({"nv1", {2, 3}, 0.5, beta_from_gbps(100), "nvswitch"});
  const auto links = ten_links(t, kMiB, 3);
  ASSERT_EQ(links.size(), 12u);
  for (const TenLink& l : links) {
    const bool intra = l.src / 2 == l.dst / 2;
    const double expected = intra ? 0.5 + transfer_us(beta_from_gbps(100), kMiB)
                                  : 2.0 + transfer_us(2 * beta_from_gbps(10), kMiB);
    EXPECT_DOUBLE_EQ(l.cost_us, expected) << l.src << "->" << l.dst;
  }
  // Degree 1 and auto: offset 2 is the only one new for every rank, so 0->2, 1->3, 2->0, 3->1,
  // each with the whole IB port.
  for (int degree : {1, 0}) {
    const auto d1 = ten_links(t, kMiB, degree);
    ASSERT_EQ(d1.size(), 8u);
    for (const TenLink& l : d1) {
      if (l.src / 2 != l.dst / 2) {
        EXPECT_EQ(l.dst, (l.src + 2) % 4);
        EXPECT_DOUBLE_EQ(l.cost_us, 2.0 + transfer_us(beta_from_gbps(10), kMiB));
      }
    }
  }
}

TEST(Tacos, Ring4AllGatherTakesTwoChunkTimes) {
  // Bidirectional ring of 4: step 0 every rank sends its chunk both ways, step 1 the opposite
  // rank's chunk comes from one neighbour: 2 chunk times, 12 copies, 2 steps.
  const Topology t = ring(4);
  const Collective c = make_collective(CollectiveKind::kAllGather, 4);
  const TacosResult r = synthesize_tacos(t, c, bytes_per_chunk(c, kMiB));
  EXPECT_NEAR(r.time_us, 2 * kChunkUs, 1e-5);
  EXPECT_EQ(r.algorithm.ops.size(), 12u);
  EXPECT_EQ(r.algorithm.num_steps(), 2);
  EXPECT_NEAR(last_start(r.algorithm), kChunkUs, 1e-5);
  expect_verified(r.algorithm, t);
}

TEST(Tacos, UnidirectionalRingIsTheRingAlgorithm) {
  const Topology t = uring(5);
  const Collective c = make_collective(CollectiveKind::kAllGather, 5);
  const TacosResult r = synthesize_tacos(t, c, bytes_per_chunk(c, kMiB));
  EXPECT_NEAR(r.time_us, 4 * kChunkUs, 1e-5);
  EXPECT_EQ(r.algorithm.num_steps(), 4);
  for (const ChunkOp& op : r.algorithm.ops) {
    // At step s rank r forwards the chunk of rank r - s (Fig. 9).
    EXPECT_EQ(op.chunk, ((op.src - op.step) % 5 + 5) % 5) << op;
    EXPECT_NEAR(op.start_us, op.step * kChunkUs, 1e-5) << op;
  }
  expect_verified(r.algorithm, t);
}

TEST(Tacos, Mesh2x2HeterogeneousTimes) {
  // Ranks 0 1 / 2 3; horizontal links cost 1 us, vertical 3 us. At t=0 every rank gets its
  // horizontal neighbour's chunk (t=1) and its vertical neighbour's (t=3); the diagonal chunk
  // is only at a neighbour from t=3 on, over the cheap link: done at t=4.
  const Topology t = alpha_only(
      4, {{0, 1, 1}, {1, 0, 1}, {2, 3, 1}, {3, 2, 1}, {0, 2, 3}, {2, 0, 3}, {1, 3, 3}, {3, 1, 3}});
  const Collective c = make_collective(CollectiveKind::kAllGather, 4);
  const TacosResult r = synthesize_tacos(t, c, bytes_per_chunk(c, 1));
  EXPECT_NEAR(r.time_us, 4.0, 1e-5);
  EXPECT_EQ(r.algorithm.ops.size(), 12u);
  std::multiset<double> starts;
  for (const ChunkOp& op : r.algorithm.ops) starts.insert(std::round(op.start_us * 1e3) / 1e3);
  EXPECT_EQ(starts.count(0.0), 8u);
  EXPECT_EQ(starts.count(3.0), 4u);
  for (const ChunkOp& op : r.algorithm.ops) {
    if (op.start_us > 1) {
      EXPECT_EQ(std::abs(op.src - op.dst), 1) << "diagonal chunk must take the cheap link " << op;
    }
  }
  expect_verified(r.algorithm, t);
}

TEST(Tacos, LowerCostLinkFirst) {
  // Broadcast from 0; at t=1 ranks 1 and 2 both hold the chunk and both links into rank 3 are
  // idle: the cheaper 2->3 (cost 2) must serve it, not 1->3 (cost 5), whatever the seed, even
  // without replacement to repair a bad choice (sec. IV.F).
  const Topology t = alpha_only(4, {{0, 1, 1}, {0, 2, 1}, {1, 3, 5}, {2, 3, 2}});
  const Collective c = make_collective(CollectiveKind::kBroadcast, 4, 1, 0);
  for (uint64_t seed = 0; seed < 8; ++seed) {
    TacosOptions o = bytes_per_chunk(c, 1);
    o.seed = seed;
    o.chunk_replacement = false;
    const TacosResult r = synthesize_tacos(t, c, o);
    EXPECT_NEAR(r.time_us, 3.0, 1e-5);
    ASSERT_EQ(r.algorithm.ops.size(), 3u);
    EXPECT_EQ(r.algorithm.ops[2].src, 2);
    EXPECT_EQ(r.algorithm.ops[2].dst, 3);
    expect_verified(r.algorithm, t);
  }
}

TEST(Tacos, CheaperLinkTakesOverSlowTransfer) {
  // Broadcast from 0: 0->1 costs 1, 0->2 costs 5, 1<->2 cost 1. At t=0 only the slow 0->2 can
  // serve rank 2 (arriving at 5); at t=1 rank 1 holds the chunk and 1->2 re-sends it (arriving
  // at 2); the slow transfer has no substitute and is dropped.
  const Topology t = alpha_only(3, {{0, 1, 1}, {0, 2, 5}, {1, 2, 1}, {2, 1, 1}});
  const Collective c = make_collective(CollectiveKind::kBroadcast, 3, 1, 0);
  const TacosResult r = synthesize_tacos(t, c, bytes_per_chunk(c, 1));
  EXPECT_NEAR(r.time_us, 2.0, 1e-5);
  EXPECT_EQ(r.replacements, 1);
  EXPECT_EQ(r.substitutions, 0);
  ASSERT_EQ(r.algorithm.ops.size(), 2u);
  EXPECT_EQ(r.algorithm.ops[1].src, 1);
  EXPECT_EQ(r.algorithm.ops[1].dst, 2);
  expect_verified(r.algorithm, t);
}

TEST(Tacos, ChunkReplacementSubstitutesHeldChunks) {
  // Broadcast of 3 chunks from rank 2; 2->0 and 0->1 cost 1, 2->1 costs 10 (Fig. 12(b)). The
  // slow link first carries k0; as rank 0 forwards k0, k1, k2 faster, the slow transfer gets
  // k1, then k2 (all at rank 2 when it started), then is dropped: done at t=4 instead of 10.
  const Topology t = alpha_only(3, {{2, 0, 1}, {0, 1, 1}, {2, 1, 10}});
  const Collective c = make_collective(CollectiveKind::kBroadcast, 3, 3, 2);
  TacosOptions o = bytes_per_chunk(c, 1);
  o.pick_window = 1;
  const TacosResult r = synthesize_tacos(t, c, o);
  EXPECT_NEAR(r.time_us, 4.0, 1e-5);
  EXPECT_EQ(r.replacements, 3);
  EXPECT_EQ(r.substitutions, 2);
  for (const ChunkOp& op : r.algorithm.ops) EXPECT_NE(op.src * 10 + op.dst, 21) << op;
  expect_verified(r.algorithm, t);
  expect_causal(r.algorithm);

  o.chunk_replacement = false;
  const TacosResult plain = synthesize_tacos(t, c, o);
  EXPECT_NEAR(plain.time_us, 10.0, 1e-5);
  EXPECT_EQ(plain.replacements, 0);
  expect_verified(plain.algorithm, t);
}

TEST(Tacos, ChunkReplacementStaysCausal) {
  // Root 3 -> 2 (1), 2 -> 0 (1), 0 -> 1 (1), 2 -> 1 (10). The slow 2->1 starts k0 at t=1; at
  // t=2 rank 0 re-sends k0 faster. Chunk k1 reached rank 2 only at t=2, after the slow transfer
  // started, so it must NOT be substituted into it (the reference implementation does): the
  // slow transfer is dropped instead and its lane restarts with k1 at t=2.
  const Topology t = alpha_only(4, {{3, 2, 1}, {2, 0, 1}, {0, 1, 1}, {2, 1, 10}});
  const Collective c = make_collective(CollectiveKind::kBroadcast, 4, 2, 3);
  TacosOptions o = bytes_per_chunk(c, 1);
  o.pick_window = 1;
  const TacosResult r = synthesize_tacos(t, c, o);
  EXPECT_EQ(r.substitutions, 0);
  EXPECT_GE(r.replacements, 1);
  EXPECT_NEAR(r.time_us, 4.0, 1e-5);
  for (const ChunkOp& op : r.algorithm.ops) {
    if (op.src == 2 && op.dst == 1) {
      EXPECT_GE(op.start_us, 2.0 - 1e-9) << op;
    }
  }
  expect_verified(r.algorithm, t);
  expect_causal(r.algorithm);
}

TEST(Tacos, HeterogeneousRfsReplacesCausally) {
  // Fast intra-node links overtake slow switch transfers: replacement must happen, and every
  // substitute must already be at its sender when the slow transfer starts.
  const Topology t = rfs(4, 2, 4);
  for (CollectiveKind kind : {CollectiveKind::kAllGather, CollectiveKind::kBroadcast}) {
    const Collective c = make_collective(kind, t.num_ranks, 2, 5);
    TacosOptions o = bytes_per_chunk(c, kMiB);
    const TacosResult r = synthesize_tacos(t, c, o);
    EXPECT_GT(r.replacements, 0) << to_string(kind);
    expect_verified(r.algorithm, t);
    expect_causal(r.algorithm);
    o.chunk_replacement = false;
    const TacosResult plain = synthesize_tacos(t, c, o);
    EXPECT_EQ(plain.replacements, 0);
    EXPECT_LE(r.time_us, plain.time_us) << to_string(kind);
    expect_verified(plain.algorithm, t);
  }
}

TEST(Tacos, SameSeedSameAlgorithmAndTrialsKeepTheBest) {
  const Topology t = hypercube(4);
  const Collective c = make_collective(CollectiveKind::kAllGather, 16);
  TacosOptions o = bytes_per_chunk(c, kMiB);
  o.seed = 3;
  const TacosResult a = synthesize_tacos(t, c, o);
  const TacosResult b = synthesize_tacos(t, c, o);
  EXPECT_EQ(a.algorithm, b.algorithm);
  EXPECT_EQ(a.phase_seed, std::vector<uint64_t>{3});
  double best_single = 1e300;
  bool differs = false;
  for (uint64_t s = 3; s < 3 + 16; ++s) {
    o.seed = s;
    const TacosResult one = synthesize_tacos(t, c, o);
    best_single = std::min(best_single, one.time_us);
    differs = differs || one.algorithm.ops != a.algorithm.ops;
  }
  EXPECT_TRUE(differs) << "the seed must change tie-breaks";
  o.seed = 3;
  o.trials = 16;
  const TacosResult best = synthesize_tacos(t, c, o);
  EXPECT_DOUBLE_EQ(best.time_us, best_single);
  // 15 chunks over 4 in-links need 4 chunk times; some seed finds it (TEN bound).
  EXPECT_NEAR(best.time_us, 4 * kChunkUs, 1e-5);
  expect_verified(best.algorithm, t);
}

TEST(Tacos, TrialsOnThreadsKeepTheSameBest) {
  // 7 trials on 3 threads run in batches of 3, 3 and 1: the same algorithm and seed as one by
  // one, for an allgather and for an allreduce (two phases, each its own best seed).
  const Topology t = hypercube(4);
  for (const CollectiveKind kind : {CollectiveKind::kAllGather, CollectiveKind::kAllReduce}) {
    const Collective c = make_collective(kind, 16);
    TacosOptions o = bytes_per_chunk(c, kMiB);
    o.seed = 5;
    o.trials = 7;
    const TacosResult one_by_one = synthesize_tacos(t, c, o);
    o.threads = 3;
    const TacosResult at_once = synthesize_tacos(t, c, o);
    EXPECT_EQ(at_once.algorithm, one_by_one.algorithm) << c.name;
    EXPECT_EQ(at_once.phase_seed, one_by_one.phase_seed) << c.name;
    EXPECT_DOUBLE_EQ(at_once.time_us, one_by_one.time_us) << c.name;
  }
}

TEST(Tacos, HomogeneousMeshAllGatherMeetsIngressBound) {
  // Corner ranks have 2 in-links and need 15 chunks: ceil(15/2) = 8 chunk times.
  const Topology t = mesh(4, 4);
  const Collective c = make_collective(CollectiveKind::kAllGather, 16);
  const TacosResult r = synthesize_tacos(t, c, bytes_per_chunk(c, kMiB));
  EXPECT_NEAR(r.time_us, 8 * kChunkUs, 1e-5);
  expect_verified(r.algorithm, t);
}

TEST(Tacos, ManyChunksPerRank) {
  const Topology t = mesh(3, 3);
  const Collective c = make_collective(CollectiveKind::kAllGather, 9, 4);
  const TacosResult r = synthesize_tacos(t, c, bytes_per_chunk(c, kMiB));
  EXPECT_EQ(r.algorithm.ops.size(), 9u * 8u * 4u);
  // Corners: 32 chunks over 2 in-links.
  EXPECT_GE(r.time_us, 16 * kChunkUs - 1e-5);
  EXPECT_LE(r.time_us, 1.1 * 16 * kChunkUs);
  expect_verified(r.algorithm, t);
}

TEST(Tacos, ReduceScatterIsTheTimedInverseOfAllGather) {
  const Topology t = hetero();
  const Collective rs = make_collective(CollectiveKind::kReduceScatter, 8, 2);
  const TacosResult r = synthesize_tacos(t, rs, bytes_per_chunk(rs, kMiB));
  expect_verified(r.algorithm, t);
  for (const ChunkOp& op : r.algorithm.ops) {
    EXPECT_EQ(op.kind, OpKind::kReduce);
    EXPECT_GE(op.start_us, 0);
    EXPECT_LT(op.start_us, r.time_us);
  }
  // The same op set as H4's step-only inversion of the allgather on the transposed TEN.
  Topology transposed_topology = t;
  for (Link& l : transposed_topology.links) std::swap(l.src, l.dst);
  const Collective ag = make_collective(CollectiveKind::kAllGather, 8, 2);
  const TacosResult forward = synthesize_tacos(transposed_topology, ag, bytes_per_chunk(ag, kMiB));
  EXPECT_DOUBLE_EQ(forward.time_us, r.time_us);
  const Algorithm inverted = invert(forward.algorithm);
  auto key = [](const Algorithm& a) {
    std::multiset<std::tuple<int, int, int, OpKind>> k;
    for (const ChunkOp& op : a.ops) k.insert({op.chunk, op.src, op.dst, op.kind});
    return k;
  };
  EXPECT_EQ(key(inverted), key(r.algorithm));
}

TEST(Tacos, AllReduceIsReduceScatterThenAllGather) {
  const Topology t = mesh(3, 3);
  const Collective c = make_collective(CollectiveKind::kAllReduce, 9);
  const TacosResult r = synthesize_tacos(t, c, bytes_per_chunk(c, kMiB));
  ASSERT_EQ(r.phase_time_us.size(), 2u);
  EXPECT_DOUBLE_EQ(r.time_us, r.phase_time_us[0] + r.phase_time_us[1]);
  EXPECT_EQ(r.algorithm.ops.size(), 2u * 9u * 8u);
  for (const ChunkOp& op : r.algorithm.ops) {
    if (op.kind == OpKind::kCopy) {
      EXPECT_GE(op.start_us, r.phase_time_us[0] - 1e-9) << op;
    } else {
      EXPECT_LT(op.start_us, r.phase_time_us[0]) << op;
    }
  }
  expect_verified(r.algorithm, t);
}

TEST(Tacos, RejectsWhatItCannotSynthesize) {
  const Topology t = ring(4);
  EXPECT_THROW(synthesize_tacos(t, make_collective(CollectiveKind::kAllToAll, 4)), UserError);
  EXPECT_THROW(synthesize_tacos(t, make_collective(CollectiveKind::kAllGather, 5)), UserError);
  TacosOptions o;
  o.trials = 0;
  EXPECT_THROW(synthesize_tacos(t, make_collective(CollectiveKind::kAllGather, 4), o), UserError);
  // A gather needs relays through ranks that do not want the chunks.
  const Topology line = alpha_only(3, {{0, 1, 1}, {1, 0, 1}, {1, 2, 1}, {2, 1, 1}});
  EXPECT_THROW(synthesize_tacos(line, make_collective(CollectiveKind::kGather, 3, 1, 0)),
               UserError);
}

struct MatrixCase {
  std::string topology;
  CollectiveKind kind;
  int chunks;
};

// gtest prints a case as "topology collective C=chunks".
void PrintTo(const MatrixCase& c, std::ostream* os) {
  *os << c.topology << " " << to_string(c.kind) << " C=" << c.chunks;
}

Topology by_name(const std::string& name) {
  if (name == "ring5") return ring(5);
  if (name == "uring4") return uring(4);
  if (name == "mesh3x3") return mesh(3, 3);
  if (name == "hypercube3") return hypercube(3);
  if (name == "switch5") return switched(5);
  return hetero();
}

class TacosMatrix : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(TacosMatrix, VerifiesOnTopology) {
  const MatrixCase& p = GetParam();
  const Topology t = by_name(p.topology);
  const Collective c = make_collective(p.kind, t.num_ranks, p.chunks, t.num_ranks - 1);
  TacosOptions o;
  o.bytes = 4 * kMiB;
  o.trials = 2;
  const TacosResult r = synthesize_tacos(t, c, o);
  EXPECT_EQ(r.algorithm.collective, c);
  EXPECT_GT(r.time_us, 0);
  EXPECT_GT(r.transfers, 0);
  for (const ChunkOp& op : r.algorithm.ops) EXPECT_GE(op.start_us, 0) << op;
  expect_verified(r.algorithm, t);
  // Its start times are a schedule, so it also compiles in start-time order, correctly.
  ASSERT_TRUE(compiler::has_schedule_order(r.algorithm));
  compiler::CompileOptions ordered;
  ordered.schedule_order = true;
  verify::VerifyProgramOptions vo;
  vo.collective = &r.algorithm.collective;
  const verify::VerifyReport report =
      verify::verify_program(compiler::compile(r.algorithm, ordered), vo);
  EXPECT_TRUE(report.ok()) << report.summary();
}

std::vector<MatrixCase> matrix() {
  std::vector<MatrixCase> out;
  for (const char* t : {"ring5", "uring4", "mesh3x3", "hypercube3", "switch5", "hetero"}) {
    for (CollectiveKind k :
         {CollectiveKind::kAllGather, CollectiveKind::kBroadcast, CollectiveKind::kReduceScatter,
          CollectiveKind::kReduce, CollectiveKind::kAllReduce}) {
      for (int chunks : {1, 3}) out.push_back({t, k, chunks});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(All, TacosMatrix, ::testing::ValuesIn(matrix()), [](const auto& info) {
  return info.param.topology + "_" + to_string(info.param.kind) + "_c" +
         std::to_string(info.param.chunks);
});

// Two nodes of two ranks joined by a link inside; every node's pair shares one port (a NIC)
// of a switch over all four ranks.
Topology shared_nic_pair(bool shared) {
  Topology t;
  t.name = "shared-nic";
  t.num_ranks = 4;
  t.nodes = {{0, 1}, {2, 3}};
  for (auto [a, b] : {std::pair{0, 1}, std::pair{1, 0}, std::pair{2, 3}, std::pair{3, 2}}) {
    t.links.push_back(Link{a, b, 1, 0.0, 5.0, "nvlink"});
  }
  t.switches.push_back(Switch{"ib", {0, 1, 2, 3}, 0.0, 100.0, "ib"});
  if (shared) t.switches[0].port_group = {0, 0, 1, 1};
  validate(t);
  return t;
}

TEST(TacosTen, SharedSwitchPortIsSplitAmongItsLinks) {
  // Auto unwinding pairs rank i with i + 2. Two links leave (and enter) each shared port, so
  // each gets half of it: 2 x 100 us per MiB; with a port per rank, the full 100.
  for (bool shared : {false, true}) {
    const std::vector<TenLink> links = ten_links(shared_nic_pair(shared), 1 << 20, 0);
    int ib = 0;
    for (const TenLink& l : links) {
      if (l.src / 2 == l.dst / 2) continue;
      ++ib;
      EXPECT_EQ(l.dst, (l.src + 2) % 4);
      EXPECT_NEAR(l.cost_us, shared ? 200.0 : 100.0, 1e-9) << l.src << "->" << l.dst;
    }
    EXPECT_EQ(ib, 4);
  }
  // Synthesis still verifies on the shared model.
  const Topology t = shared_nic_pair(true);
  const Algorithm a =
      synthesize_tacos(t, make_collective(CollectiveKind::kAllGather, 4, 2)).algorithm;
  EXPECT_TRUE(verify::verify_algorithm(a, &t).ok());
}

}  // namespace
}  // namespace ccsynth::synth
