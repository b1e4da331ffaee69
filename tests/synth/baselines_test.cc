#include "ccsynth/synth/baselines.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/compiler/instances.h"
#include "ccsynth/core/error.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"

namespace ccsynth::synth {

// gtest prints a baseline kind by name (found by argument-dependent lookup, so outside the
// unnamed namespace).
void PrintTo(BaselineKind kind, std::ostream* os) { *os << to_string(kind); }

namespace {

const std::vector<std::string> kTopologies = {"ring:8", "fc:8",       "dgx1",        "dgx2",
                                              "ndv2x2", "mesh2d:4x4", "torus2d:4x4", "hypercube:3"};

const Topology& topology(const std::string& name) {
  static std::map<std::string, Topology> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, topologies::make_builtin(name)).first;
  return it->second;
}

// Cases where compile() with 2 instances and 2 chunks per rank reports that the program cannot
// fit the executor's limits (compile.h): 16-rank ring alltoall and binary-tree allreduce exceed
// 64 steps per threadblock even over 16 channels. With one instance they must all compile.
bool known_compile_limit(BaselineKind kind, const Collective& c, const Topology& t) {
  if (t.num_ranks < 16) return false;
  return (kind == BaselineKind::kRing && c.kind == CollectiveKind::kAllToAll) ||
         (kind == BaselineKind::kTree && c.kind == CollectiveKind::kAllReduce);
}

// Every applicable (baseline, collective, topology, chunks) builds a correct algorithm that
// only uses the topology's connections.
class BaselineMatrix : public ::testing::TestWithParam<std::tuple<BaselineKind, std::string, int>> {
};

TEST_P(BaselineMatrix, EveryApplicableCollectiveVerifies) {
  const auto [kind, topo_name, chunks] = GetParam();
  const Topology& t = topology(topo_name);
  int built = 0;
  for (CollectiveKind ck : builtin_collective_kinds()) {
    const int root = (ck == CollectiveKind::kBroadcast || ck == CollectiveKind::kReduce ||
                      ck == CollectiveKind::kGather || ck == CollectiveKind::kScatter)
                         ? t.num_ranks - 1
                         : 0;
    const Collective c = make_collective(ck, t.num_ranks, chunks, root);
    SCOPED_TRACE(to_string(kind) + " " + c.name + " on " + t.name);
    const std::string reason = baseline_inapplicable_reason(kind, c, t);
    if (!reason.empty()) {
      EXPECT_THROW(make_baseline(kind, c, t), UserError);
      continue;
    }
    for (int pipeline : {1, 2}) {
      BaselineOptions o;
      o.pipeline_chunks = pipeline;
      const Algorithm a = make_baseline(kind, c, t, o);
      const auto report = verify::verify_algorithm(a, &t);
      EXPECT_TRUE(report.ok()) << to_string(kind) << " " << c << " on " << t.name << "\n"
                               << report.summary();
      EXPECT_EQ(a.collective, c);
      EXPECT_GT(a.ops.size(), 0u);
      ++built;
      if (pipeline == 2) continue;  // the compiled checks below once per algorithm shape
      for (int instances : {1, 2}) {
        SCOPED_TRACE("instances " + std::to_string(instances));
        compiler::CompileOptions co;
        co.instances = instances;
        Program p;
        try {
          p = compiler::compile(a, co);
        } catch (const UserError& e) {
          if (instances == 1 || !known_compile_limit(kind, c, t)) {
            ADD_FAILURE() << "compile failed: " << e.what();
          }
          EXPECT_NE(std::string(e.what()).find("runtime limits"), std::string::npos) << e.what();
          continue;
        }
        // With instances every chunk is split into subchunks (compiler/instances.h).
        const Collective replicated = compiler::replicate_collective(c, instances);
        verify::VerifyProgramOptions vo;
        vo.collective = &replicated;
        const auto program_report = verify::verify_program(p, vo);
        EXPECT_TRUE(program_report.ok())
            << to_string(kind) << " " << c << " on " << t.name << " x" << instances << "\n"
            << program_report.summary();
        const std::string xml = formats::write_msccl_xml(p);
        Program back = formats::read_msccl_xml(xml, "roundtrip.xml");
        back.root = p.root;  // the XML has no root attribute (core/program.h)
        EXPECT_EQ(back, p) << to_string(kind) << " " << c << " on " << t.name;
      }
    }
  }
  // Every baseline builds something on at least the topologies it was made for.
  // cooperative builds custom collectives only (tests below).
  if (topo_name == "fc:8" && kind != BaselineKind::kHier && kind != BaselineKind::kTwoStep &&
      kind != BaselineKind::kCooperative) {
    EXPECT_GT(built, 0) << to_string(kind);
  }
  // NDv2 x2 reaches the other node only from GPUs 0 and 1: the hypercube and tree patterns of
  // rd, rhd and dbt cannot be placed; everything else routes over the existing connections.
  const bool pattern_bound = kind == BaselineKind::kRecursiveDoubling ||
                             kind == BaselineKind::kRhd || kind == BaselineKind::kDbt ||
                             kind == BaselineKind::kCooperative;
  if (topo_name == "ndv2x2") {
    EXPECT_EQ(built > 0, !pattern_bound) << to_string(kind);
  }
}

INSTANTIATE_TEST_SUITE_P(All, BaselineMatrix,
                         ::testing::Combine(::testing::ValuesIn(all_baseline_kinds()),
                                            ::testing::ValuesIn(kTopologies),
                                            ::testing::Values(1, 2)),
                         [](const auto& info) {
                           std::string topo = std::get<1>(info.param);
                           for (char& ch : topo)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return to_string(std::get<0>(info.param)) + "_" + topo + "_c" +
                                  std::to_string(std::get<2>(info.param));
                         });

int steps(BaselineKind kind, CollectiveKind ck, const std::string& topo, int chunks = 1,
          BaselineOptions o = {}) {
  const Topology& t = topology(topo);
  return make_baseline(kind, make_collective(ck, t.num_ranks, chunks), t, o).num_steps();
}

TEST(Baselines, StepCountsMatchTheTextbook) {
  using BK = BaselineKind;
  using CK = CollectiveKind;
  EXPECT_EQ(steps(BK::kRing, CK::kAllGather, "ring:8"), 7);
  EXPECT_EQ(steps(BK::kRing, CK::kReduceScatter, "ring:8"), 7);
  EXPECT_EQ(steps(BK::kRing, CK::kAllReduce, "ring:8"), 14);
  EXPECT_EQ(steps(BK::kRing, CK::kAllToAll, "ring:8"), 7);
  EXPECT_EQ(steps(BK::kDirect, CK::kAllGather, "fc:8"), 1);
  EXPECT_EQ(steps(BK::kDirect, CK::kAllReduce, "fc:8"), 2);   // MSCCLang all-pairs: 2 steps
  EXPECT_EQ(steps(BK::kDirect, CK::kAllToAll, "ring:8"), 4);  // relayed over the diameter
  EXPECT_EQ(steps(BK::kRecursiveDoubling, CK::kAllGather, "hypercube:3"), 3);
  EXPECT_EQ(steps(BK::kRecursiveDoubling, CK::kAllReduce, "hypercube:3"), 3);
  EXPECT_EQ(steps(BK::kRhd, CK::kAllReduce, "hypercube:3"), 6);
  EXPECT_EQ(steps(BK::kRhd, CK::kAllReduce, "torus2d:4x4"), 8);  // Q4 = C4 x C4 embeds
  EXPECT_EQ(steps(BK::kHier, CK::kAllGather, "dgx2x2"), 1 + 15);
  // Two-step: per remote node one relay round and one aggregated cross-node round, staggered
  // by one step per remote node (the hubs' own chunks are gathered by the compiler).
  EXPECT_EQ(steps(BK::kTwoStep, CK::kAllToAll, "dgx2x2"), 2);
  EXPECT_EQ(steps(BK::kTwoStep, CK::kAllToAll, "ndv4x3"), 3);
  // Hierarchical allreduce (MSCCLang fig. 3): (G-1) + 2(N-1) + (G-1).
  EXPECT_EQ(steps(BK::kHier, CK::kAllReduce, "ndv4x2"), 7 + 2 + 7);
  EXPECT_EQ(steps(BK::kHier, CK::kAllReduce, "ndv4x3"), 7 + 4 + 7);
  BaselineOptions pipelined;
  pipelined.pipeline_chunks = 4;
  // Chain broadcast of 4 pieces over 8 ranks: 7 hops + 3 extra pieces.
  EXPECT_EQ(steps(BK::kChain, CK::kBroadcast, "ring:8", 4, pipelined), 10);
  EXPECT_EQ(steps(BK::kChain, CK::kBroadcast, "ring:8", 4), 7);
  // A binary tree over fc:8 has height 3 (1 + 2 + 4 + 1 ranks): reduce up, then broadcast.
  EXPECT_EQ(steps(BK::kTree, CK::kAllReduce, "fc:8"), 6);
  EXPECT_EQ(steps(BK::kTree, CK::kBroadcast, "fc:8"), 3);
  // Double binary tree on 8 ranks: each tree has height 3.
  EXPECT_EQ(steps(BK::kDbt, CK::kAllReduce, "fc:8"), 6);
}

TEST(Baselines, RingsUseEveryNvlinkOfDgx1) {
  // SCCL fig. 1: DGX-1's 6 NVLink lanes per GPU form 3 bidirectional rings = 6 directed ones.
  const auto rings = find_rings(topology("dgx1"));
  EXPECT_EQ(rings.size(), 6u);
  std::map<std::pair<int, int>, int> used;
  for (const auto& ring : rings) {
    EXPECT_EQ(std::set<int>(ring.begin(), ring.end()).size(), 8u);
    for (size_t i = 0; i < ring.size(); ++i) ++used[{ring[i], ring[(i + 1) % ring.size()]}];
  }
  for (const auto& [edge, count] : used) {
    const Link* link = topology("dgx1").find_link(edge.first, edge.second);
    ASSERT_NE(link, nullptr);
    EXPECT_LE(count, link->lanes);
  }
  const auto pairs = find_rings(topology("dgx1"), 0, true);
  ASSERT_EQ(pairs.size() % 2, 0u);
  EXPECT_EQ(pairs.size(), 6u);
  EXPECT_EQ(pairs[1][1], pairs[0].back());  // the second ring is the first one reversed
  EXPECT_EQ(find_rings(topology("ring:8")).size(), 2u);  // one each way
  EXPECT_EQ(find_rings(topology("dgx2")).size(), 1u);    // one switch port per GPU
}

// NIC ports (switch index, port) of the inter-node fabric that a compiled program sends from
// and receives on: every threadblock sending to / receiving from another node.
struct NicUse {
  std::set<std::pair<int, int>> egress, ingress;
};
NicUse nic_ports_used(const Program& p, const Topology& t) {
  NicUse out;
  for (size_t r = 0; r < p.gpus.size(); ++r) {
    const int rank = static_cast<int>(r);
    for (const Threadblock& tb : p.gpus[r].threadblocks) {
      for (size_t s = 0; s < t.switches.size(); ++s) {
        const Switch& sw = t.switches[s];
        if (sw.kind != "ib") continue;
        const int si = static_cast<int>(s);
        if (tb.send_peer >= 0 && t.node_of(tb.send_peer) != t.node_of(rank) &&
            sw.port_of_rank(rank) >= 0 && sw.port_of_rank(tb.send_peer) >= 0)
          out.egress.insert({si, sw.port_of_rank(rank)});
        if (tb.recv_peer >= 0 && t.node_of(tb.recv_peer) != t.node_of(rank) &&
            sw.port_of_rank(rank) >= 0 && sw.port_of_rank(tb.recv_peer) >= 0)
          out.ingress.insert({si, sw.port_of_rank(rank)});
      }
    }
  }
  return out;
}

int nic_count(const Topology& t) {
  int n = 0;
  for (const Switch& sw : t.switches) n += sw.kind == "ib" ? sw.num_ports() : 0;
  return n;
}

// NCCL's cluster rings: one ring per NIC of a node, entering and leaving every node at NIC
// GPUs, so the rings (and the compiled ring allgather) use every NIC port once each way.
TEST(Baselines, NcclRingsUseEveryNicOfAClusterOnce) {
  for (const std::string name : {"dgx2x2", "ndv4x2", "dgxh100x2", "dgx1x2", "ndv2x2", "ndv4x3"}) {
    const Topology& t = topology(name);
    const NcclRings nccl = nccl_rings(t);
    const int nics = nic_count(t);
    const int per_node = nics / static_cast<int>(t.nodes.size());
    EXPECT_EQ(nccl.count, per_node) << name;
    EXPECT_FALSE(nccl.bidirectional) << name;
    // Every ring visits every rank once, each hop is a connection, and crosses nodes only at
    // NIC GPUs; over all rings every NIC port sends once and receives once.
    std::map<std::pair<int, int>, int> sends, receives;
    for (const auto& ring : nccl.rings) {
      ASSERT_EQ(ring.size(), static_cast<size_t>(t.num_ranks)) << name;
      EXPECT_EQ(std::set<int>(ring.begin(), ring.end()).size(), ring.size()) << name;
      for (size_t i = 0; i < ring.size(); ++i) {
        const int a = ring[i], b = ring[(i + 1) % ring.size()];
        ASSERT_TRUE(t.connection(a, b).has_value()) << name << " " << a << "->" << b;
        if (t.node_of(a) == t.node_of(b)) continue;
        for (size_t s = 0; s < t.switches.size(); ++s) {
          const Switch& sw = t.switches[s];
          if (sw.kind != "ib" || sw.port_of_rank(a) < 0 || sw.port_of_rank(b) < 0) continue;
          ++sends[{static_cast<int>(s), sw.port_of_rank(a)}];
          ++receives[{static_cast<int>(s), sw.port_of_rank(b)}];
        }
      }
    }
    EXPECT_EQ(static_cast<int>(sends.size()), nics) << name;
    EXPECT_EQ(static_cast<int>(receives.size()), nics) << name;
    for (const auto& [port, n] : sends) EXPECT_EQ(n, 1) << name;
    for (const auto& [port, n] : receives) EXPECT_EQ(n, 1) << name;
    // The compiled ring allgather sends over every IB port and verifies.
    const Algorithm a = nccl_ring(t, CollectiveKind::kAllGather);
    EXPECT_TRUE(verify::verify_algorithm(a, &t).ok()) << name;
    const Program p = compiler::compile(a);
    EXPECT_TRUE(verify::verify_program(p).ok()) << name;
    const NicUse used = nic_ports_used(p, t);
    EXPECT_EQ(static_cast<int>(used.egress.size()), nics) << name;
    EXPECT_EQ(static_cast<int>(used.ingress.size()), nics) << name;
  }
  // DGX-2: ring k enters a node at GPU 2k and leaves it at GPU 2k + 1 (NIC k's two GPUs).
  const NcclRings dgx2 = nccl_rings(topology("dgx2x2"));
  EXPECT_EQ(dgx2.rings[3].front(), 6);
  EXPECT_EQ(dgx2.rings[3][15], 7);
  EXPECT_EQ(dgx2.rings[3][16], 22);
}

// A single NVSwitch node runs kNvswitchRings channels over the ring the search finds; the
// point-to-point machines keep the edge-disjoint search (DGX-1: its 6 rings, unchanged).
TEST(Baselines, NcclRingsOnSingleNodes) {
  for (const std::string name : {"dgx2", "ndv4", "dgxh100"}) {
    const NcclRings nccl = nccl_rings(topology(name));
    EXPECT_EQ(nccl.count, kNvswitchRings) << name;
    ASSERT_EQ(nccl.rings.size(), static_cast<size_t>(kNvswitchRings)) << name;
    EXPECT_EQ(nccl.rings[0], find_rings(topology(name), 1)[0]) << name;
    const Algorithm a = nccl_ring(topology(name), CollectiveKind::kAllReduce);
    EXPECT_TRUE(verify::verify_algorithm(a, &topology(name)).ok()) << name;
  }
  EXPECT_EQ(nccl_rings(topology("dgx1")).rings, find_rings(topology("dgx1"), kMaxNcclRings, true));
  EXPECT_TRUE(nic_rings(topology("dgx1")).empty());
  EXPECT_EQ(nccl_rings(topology("ring:8")).count, 2);
}

// NCCL's rings time alike where they are identical rings on links of their own: a ring and its
// reverse on ring:N and meshes, two such pairs on a torus. Not on DGX-1 (its rings use
// NVLinks of one and two lanes), on an NVSwitch node (the rings share switch ports) or on a
// one-way ring. The first ring alone is the whole ring's chunk-0 part, verified as its own
// collective.
TEST(Baselines, RingsTimeAlikeOnlyOnIdenticalRingsOfTheirOwnLinks) {
  for (const std::string name : {"ring:8", "mesh2d:4x4", "mesh2d:3x4", "torus2d:4x4"}) {
    const NcclRings nccl = nccl_rings(topology(name));
    EXPECT_TRUE(rings_time_alike(topology(name), nccl)) << name;
    const Algorithm first = nccl_first_ring(topology(name), CollectiveKind::kAllGather, 0, nccl);
    EXPECT_TRUE(verify::verify_algorithm(first, &topology(name)).ok()) << name;
    const Algorithm whole = nccl_ring(topology(name), CollectiveKind::kAllGather);
    EXPECT_EQ(first.ops.size() * nccl.rings.size(), whole.ops.size()) << name;
    for (const ChunkOp& op : first.ops) EXPECT_EQ(op.channel, 0) << name;
  }
  for (const std::string name : {"dgx1", "dgx2", "uring:8"}) {
    EXPECT_FALSE(rings_time_alike(topology(name), nccl_rings(topology(name)))) << name;
  }
}

TEST(Baselines, MultipleRingsSplitChunks) {
  const Topology& t = topology("dgx1");
  const Collective c = make_collective(CollectiveKind::kAllReduce, 8, 6);
  const Algorithm a = make_baseline(BaselineKind::kRing, c, t);
  std::set<std::pair<int, int>> edges;
  for (const ChunkOp& op : a.ops) {
    EXPECT_EQ(op.count, 1);  // 6 chunks over 6 rings
    edges.insert({op.src, op.dst});
  }
  EXPECT_EQ(edges.size(), t.links.size());  // every directed NVLink pair of DGX-1 carries data
  EXPECT_EQ(edges.size(), 32u);
  EXPECT_EQ(a.num_steps(), 14);
  EXPECT_TRUE(verify::verify_algorithm(a, &t).ok());
  std::set<int> channels;  // one channel hint per ring
  for (const ChunkOp& op : a.ops) channels.insert(op.channel);
  EXPECT_EQ(channels, (std::set<int>{0, 1, 2, 3, 4, 5}));
  BaselineOptions two;
  two.rings = 2;
  const Algorithm b = make_baseline(BaselineKind::kRing, c, t, two);
  for (const ChunkOp& op : b.ops) EXPECT_EQ(op.count, 3);
  two.rings = 7;
  EXPECT_THROW(make_baseline(BaselineKind::kRing, c, t, two), UserError);
}

TEST(Baselines, ClearErrorsWhenNotApplicable) {
  const Topology& ring = topology("ring:8");
  auto message = [&](BaselineKind k, CollectiveKind ck, const Topology& t) {
    try {
      make_baseline(k, make_collective(ck, t.num_ranks), t);
    } catch (const UserError& e) {
      EXPECT_EQ(e.field(), "algo");
      return e.reason();
    }
    return std::string("no error");
  };
  EXPECT_NE(message(BaselineKind::kRecursiveDoubling, CollectiveKind::kAllGather, ring)
                .find("no placement"),
            std::string::npos);
  EXPECT_NE(
      message(BaselineKind::kRecursiveDoubling, CollectiveKind::kAllGather, topology("mesh2d:4x4"))
          .find("placement"),
      std::string::npos);
  const Topology fc6 = topologies::make_builtin("fc:6");
  EXPECT_NE(message(BaselineKind::kRhd, CollectiveKind::kAllReduce, fc6).find("power-of-two"),
            std::string::npos);
  EXPECT_NE(message(BaselineKind::kRing, CollectiveKind::kBroadcast, ring).find("does not build"),
            std::string::npos);
  EXPECT_NE(message(BaselineKind::kHier, CollectiveKind::kAllReduce, ring).find("multi-node"),
            std::string::npos);
  EXPECT_FALSE(baseline_applies(BaselineKind::kTwoStep,
                                make_collective(CollectiveKind::kAllToAll, 8), ring));
  EXPECT_THROW(
      make_baseline(BaselineKind::kRing, make_collective(CollectiveKind::kAllGather, 4), ring),
      UserError);
  EXPECT_THROW(parse_baseline_kind("bogus"), UserError);
}

TEST(Baselines, NamesRoundTrip) {
  for (BaselineKind k : all_baseline_kinds()) EXPECT_EQ(parse_baseline_kind(to_string(k)), k);
  EXPECT_EQ(parse_baseline_kind("RD"), BaselineKind::kRecursiveDoubling);
}

TEST(Baselines, MultiNodeBaselinesVerifyOnClusters) {
  for (const std::string name : {"dgx1x2", "dgx2x2", "ndv4x2"}) {
    const Topology& t = topology(name);
    for (CollectiveKind ck :
         {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter, CollectiveKind::kAllReduce}) {
      const Algorithm a = make_baseline(BaselineKind::kHier, make_collective(ck, t.num_ranks), t);
      EXPECT_TRUE(verify::verify_algorithm(a, &t).ok()) << a.name << " on " << name;
    }
    const Algorithm a2a = make_baseline(BaselineKind::kTwoStep,
                                        make_collective(CollectiveKind::kAllToAll, t.num_ranks), t);
    EXPECT_TRUE(verify::verify_algorithm(a2a, &t).ok()) << name;
    // Cross-node ops only in the aggregated step: each (source, destination) rank pair once.
    std::set<std::pair<int, int>> pairs;
    for (const ChunkOp& op : a2a.ops)
      if (t.node_of(op.src) != t.node_of(op.dst)) pairs.insert({op.src, op.dst});
    for (const auto& [src, dst] : pairs) {
      EXPECT_EQ(t.nodes[t.node_of(src)] == t.nodes[0] ? src : src - t.num_ranks / 2,
                t.nodes[t.node_of(dst)] == t.nodes[0] ? dst : dst - t.num_ranks / 2)
          << "cross-node traffic between different local indices on " << name;
    }
  }
}

TEST(Baselines, HierOnNdv2RelaysThroughTheNicGpus) {
  // NDv2 x2: only GPUs 0 and 1 of each node reach the IB switch, so hier uses them as leaders.
  const Topology& t = topology("ndv2x2");
  const Collective c = make_collective(CollectiveKind::kAllReduce, 16, 1);
  const Algorithm a = make_baseline(BaselineKind::kHier, c, t);
  std::set<int> cross;
  for (const ChunkOp& op : a.ops)
    if (t.node_of(op.src) != t.node_of(op.dst)) cross.insert(op.src);
  EXPECT_EQ(cross, (std::set<int>{0, 1, 8, 9}));
  EXPECT_TRUE(verify::verify_algorithm(a, &t).ok());
}

TEST(Baselines, RingsUseEachSharedNicPortOnce) {
  // The NIC ports of clusters are shared by two GPUs (Switch::port_group): over all rings, each
  // port's egress and ingress are used at most once.
  for (const std::string name : {"ndv2x2", "dgx2x2", "dgx1x2"}) {
    const Topology& t = topology(name);
    const auto rings = find_rings(t, 16);
    ASSERT_FALSE(rings.empty()) << name;
    std::map<std::pair<int, int>, int> egress, ingress;
    int crossings = 0;
    for (const auto& ring : rings) {
      for (size_t i = 0; i < ring.size(); ++i) {
        const int a = ring[i], b = ring[(i + 1) % ring.size()];
        const auto c = t.connection(a, b);
        ASSERT_TRUE(c.has_value()) << name << " " << a << "->" << b;
        if (c->switch_index < 0 || t.switches[c->switch_index].kind != "ib") continue;
        ++crossings;
        const Switch& sw = t.switches[c->switch_index];
        const std::pair<int, int> out{c->switch_index, sw.port_of_rank(a)};
        const std::pair<int, int> in{c->switch_index, sw.port_of_rank(b)};
        EXPECT_EQ(++egress[out], 1) << name << " " << a;
        EXPECT_EQ(++ingress[in], 1) << name << " " << b;
      }
    }
    EXPECT_GE(crossings, 2) << name;  // a ring over two nodes crosses both ways
  }
}

// Compiles `a` with one instance and checks the program against its collective.
Program compile_verified(const Algorithm& a) {
  const Program p = compiler::compile(a, compiler::CompileOptions{});
  verify::VerifyProgramOptions vo;
  vo.collective = &a.collective;
  const auto report = verify::verify_program(p, vo);
  EXPECT_TRUE(report.ok()) << a.name << "\n" << report.summary();
  return p;
}

TEST(Baselines, HierAllreduceFollowsMsccLangPhases) {
  // MSCCLang fig. 3: intra-node ring reduce-scatter of N-chunk groups on channel 0, rail ring
  // reduce-scatter + allgather on channel 1, intra-node ring allgather on channel 2;
  // parallelize(N) puts part q of the intra-node phases on channels 3q and 3q + 2.
  for (const std::string name : {"ndv4x2", "ndv4x3"}) {
    SCOPED_TRACE(name);
    const Topology& t = topology(name);
    const int N = static_cast<int>(t.nodes.size()), G = t.num_ranks / N;
    for (int parallel : {1, 0}) {
      BaselineOptions o;
      o.parallel = parallel;
      const Collective c = make_collective(CollectiveKind::kAllReduce, t.num_ranks, 1);
      const Algorithm a = make_baseline(BaselineKind::kHier, c, t, o);
      const auto report = verify::verify_algorithm(a, &t);
      EXPECT_TRUE(report.ok()) << report.summary();
      std::set<int> channels;
      for (const ChunkOp& op : a.ops) {
        channels.insert(op.channel);
        const bool cross = t.node_of(op.src) != t.node_of(op.dst);
        EXPECT_EQ(cross, op.channel == 1) << op;
        if (cross) {
          EXPECT_EQ(op.count, 1) << op;               // one piece of the group per node
          EXPECT_EQ(op.chunk / N, op.src % G) << op;  // group g stays on local index g
          EXPECT_GE(op.step, G - 1);
          EXPECT_LT(op.step, G - 1 + 2 * (N - 1));
        } else {
          EXPECT_EQ(op.kind, op.channel % 3 == 0 ? OpKind::kReduce : OpKind::kCopy) << op;
          EXPECT_EQ(op.count, parallel == 1 ? N : 1) << op;  // aggregated N-chunk groups
        }
      }
      if (parallel == 1) {
        EXPECT_EQ(channels, (std::set<int>{0, 1, 2}));
      } else {
        std::set<int> expected{1};
        for (int q = 0; q < N; ++q) expected.insert({3 * q, 3 * q + 2});
        EXPECT_EQ(channels, expected);
      }
      compile_verified(a);
    }
  }
}

TEST(Baselines, TwoStepSendsOneIbTransferPerRemoteNode) {
  // MSCCLang fig. 9's coalesced IB send: after compilation every rank sends exactly one transfer
  // of G chunks to each rank of its local index on the other nodes, and nothing to other
  // remote ranks. (The relays used to be stored rank-major in the hubs' scratch, so on three
  // or more nodes every chunk crossed the IB alone.)
  for (const std::string name : {"ndv4x2", "ndv4x3", "dgx2x2"}) {
    SCOPED_TRACE(name);
    const Topology& t = topology(name);
    const int N = static_cast<int>(t.nodes.size()), G = t.num_ranks / N;
    const Algorithm a = make_baseline(BaselineKind::kTwoStep,
                                      make_collective(CollectiveKind::kAllToAll, t.num_ranks), t);
    const auto report = verify::verify_algorithm(a, &t);
    EXPECT_TRUE(report.ok()) << report.summary();
    const Program p = compile_verified(a);
    std::map<std::pair<int, int>, std::vector<int>> ib;  // (rank, remote peer) -> counts
    for (const GpuProgram& gpu : p.gpus)
      for (const Threadblock& tb : gpu.threadblocks) {
        if (tb.send_peer < 0 || t.node_of(tb.send_peer) == t.node_of(gpu.rank)) continue;
        for (const Step& st : tb.steps)
          if (sends(st.type)) ib[{gpu.rank, tb.send_peer}].push_back(st.count);
      }
    EXPECT_EQ(static_cast<int>(ib.size()), t.num_ranks * (N - 1));
    for (const auto& [pair, counts] : ib) {
      EXPECT_EQ(pair.first % G, pair.second % G) << pair.first << " -> " << pair.second;
      EXPECT_EQ(counts, std::vector<int>{G}) << pair.first << " -> " << pair.second;
    }
  }
}

TEST(Baselines, CooperativeAllToNextUsesEveryNicOfTheNode) {
  // MSCCLang sec. 7.4, fig. 10: the last GPU of node n scatters its buffer over its node, every
  // GPU sends its part over its own NIC to the same GPU of node n + 1, which gathers it onto the
  // first GPU of node n + 1; inside a node r sends to r + 1 directly.
  const Topology& t = topology("ndv4x3");
  const int G = 8;
  const Collective c = make_alltonext(t.num_ranks, G);
  const Algorithm a = make_baseline(BaselineKind::kCooperative, c, t);
  const auto report = verify::verify_algorithm(a, &t);
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(a.num_steps(), 3);
  std::set<std::pair<int, int>> cross;
  for (const ChunkOp& op : a.ops) {
    if (t.node_of(op.src) == t.node_of(op.dst)) continue;
    EXPECT_EQ(op.step, 1) << op;
    EXPECT_EQ(op.count, 1) << op;  // 1/G of the buffer
    cross.insert({op.src, op.dst});
  }
  std::set<std::pair<int, int>> expected;
  for (int n = 0; n + 1 < 3; ++n)
    for (int g = 0; g < G; ++g) expected.insert({n * G + g, (n + 1) * G + g});
  EXPECT_EQ(cross, expected);
  compile_verified(a);
  // Direct sends (the paper's baseline): one cross-node transfer per node boundary.
  const Algorithm d = make_baseline(BaselineKind::kDirect, c, t);
  EXPECT_TRUE(verify::verify_algorithm(d, &t).ok());
  EXPECT_EQ(d.ops.size(), 23u);
  compile_verified(d);
  // On a single node, or for collectives that are not point-to-point, it does not apply.
  EXPECT_FALSE(
      baseline_applies(BaselineKind::kCooperative, make_alltonext(8, 8), topology("dgx2")));
  EXPECT_FALSE(baseline_applies(BaselineKind::kCooperative,
                                make_collective(CollectiveKind::kAllToAll, t.num_ranks), t));
  // Fewer chunks than GPUs per node: only as many parts as chunks.
  const Algorithm one =
      make_baseline(BaselineKind::kCooperative, make_alltonext(16, 2), topology("ndv4x2"));
  EXPECT_TRUE(verify::verify_algorithm(one, &topology("ndv4x2")).ok());
  compile_verified(one);
}

// End to end (ASTRA-sim's Direct and logical Ring, TACOS sec. V.A): every op goes straight from
// source to destination, the Algorithm says it is routed, and it verifies on topologies where
// most pairs have no link; without `routed` the verifier rejects those ops.
TEST(Baselines, EndToEndBaselinesAreRoutedAndVerify) {
  BaselineOptions o;
  o.end_to_end = true;
  for (const std::string name : {"ring:8", "mesh2d:3x3", "rfs:2x4x2"}) {
    const Topology& t = topology(name);
    const int R = t.num_ranks;
    for (CollectiveKind kind :
         {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter, CollectiveKind::kAllReduce,
          CollectiveKind::kAllToAll, CollectiveKind::kBroadcast, CollectiveKind::kGather}) {
      const Collective c = make_collective(kind, R, 1);
      Algorithm a = make_baseline(BaselineKind::kDirect, c, t, o);
      EXPECT_TRUE(a.routed);
      EXPECT_TRUE(verify::verify_algorithm(a, &t).ok()) << name << " " << c.name;
      const bool rooted = kind == CollectiveKind::kBroadcast || kind == CollectiveKind::kGather;
      const int per_phase = rooted ? R - 1 : R * (R - 1);
      EXPECT_EQ(static_cast<int>(a.ops.size()),
                kind == CollectiveKind::kAllReduce ? 2 * per_phase : per_phase)
          << name << " " << c.name;
      compile_verified(a);  // the compiled program (routed sends) verifies too
      a.routed = false;     // the same ops without routing use connections that do not exist
      EXPECT_FALSE(verify::verify_algorithm(a, &t).ok()) << name << " " << c.name;
    }
    o.rings = 2;
    o.bidirectional = true;
    const Collective ar = make_collective(CollectiveKind::kAllReduce, R, 2);
    const Algorithm ring = make_baseline(BaselineKind::kRing, ar, t, o);
    EXPECT_TRUE(verify::verify_algorithm(ring, &t).ok()) << name;
    compile_verified(ring);
    // The logical ring in rank order: rank q sends to q + 1 (forward) and q - 1 (backward).
    for (const ChunkOp& op : ring.ops)
      EXPECT_TRUE((op.src + 1) % R == op.dst || (op.dst + 1) % R == op.src) << op;
    o.rings = 0;
    o.bidirectional = false;
    // Trees over rank ids: no placement is needed, so dbt applies where it had none.
    const Algorithm dbt = make_baseline(BaselineKind::kDbt, ar, t, o);
    EXPECT_TRUE(dbt.routed);
    EXPECT_TRUE(verify::verify_algorithm(dbt, &t).ok()) << name;
    compile_verified(dbt);
  }
}

}  // namespace
}  // namespace ccsynth::synth
