// Invariants of the built-in topology library (docs/topologies.md).

#include "ccsynth/topologies/library.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"

namespace ccsynth::topologies {
namespace {

// Total lanes leaving `rank` over links of `kind`.
int out_lanes(const Topology& t, int rank, const std::string& kind = "") {
  int lanes = 0;
  for (const Link& l : t.links) {
    if (l.src == rank && (kind.empty() || l.kind == kind)) lanes += l.lanes;
  }
  return lanes;
}

// Unordered pairs {a, b} joined by links with `lanes` lanes.
std::set<std::pair<int, int>> pairs_with_lanes(const Topology& t, int lanes) {
  std::set<std::pair<int, int>> out;
  for (const Link& l : t.links) {
    if (l.lanes == lanes) out.insert({std::min(l.src, l.dst), std::max(l.src, l.dst)});
  }
  return out;
}

TEST(Dgx1, StructureFollowsScclFigure1) {
  const Topology t = make_builtin("dgx1");
  EXPECT_EQ(t.name, "dgx1");
  EXPECT_EQ(t.num_ranks, 8);
  ASSERT_EQ(t.nodes.size(), 1u);
  EXPECT_TRUE(t.switches.empty());
  EXPECT_EQ(t.links.size(), 2u * (8 + 8));  // 16 undirected pairs, both directions
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(out_lanes(t, r, "nvlink"), 6) << "rank " << r;
    EXPECT_EQ(t.out_neighbors()[r].size(), 4u) << "rank " << r;
  }
  // The double-NVLink Hamiltonian cycle 0-1-4-5-6-7-2-3 (SCCL sec. 2).
  const std::set<std::pair<int, int>> doubles = {{0, 1}, {1, 4}, {4, 5}, {5, 6},
                                                 {6, 7}, {2, 7}, {2, 3}, {0, 3}};
  EXPECT_EQ(pairs_with_lanes(t, 2), doubles);
  const std::set<std::pair<int, int>> singles = {{0, 2}, {1, 2}, {1, 3}, {3, 6},
                                                 {4, 6}, {4, 7}, {5, 7}, {0, 5}};
  EXPECT_EQ(pairs_with_lanes(t, 1), singles);
  // Two 4-cliques.
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a != b && a / 4 == b / 4) {
        EXPECT_NE(t.find_link(a, b), nullptr) << a << "->" << b;
      }
    }
  }
  EXPECT_EQ(t.diameter(), 2);
  const Link* l = t.find_link(0, 1);
  ASSERT_NE(l, nullptr);
  EXPECT_DOUBLE_EQ(l->alpha_us, 0.7);
  EXPECT_DOUBLE_EQ(l->beta_us_per_mb, 46.0);
}

TEST(Ndv2, SameNvlinkGraphAsDgx1) {
  Topology ndv2 = make_builtin("NDv2");
  EXPECT_EQ(ndv2.name, "ndv2");
  Topology dgx1 = make_builtin("dgx1");
  ndv2.name = dgx1.name;
  // Only the host path differs: DGX-1's sockets are joined by QPI (NCCL's QPI_BW); NDv2's VM
  // hides its sockets (TACCL sec. 4.2).
  ASSERT_EQ(dgx1.host_switches.size(), 1u);
  EXPECT_EQ(dgx1.host_switches[0].port_socket, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_NEAR(kBytesPerMb / (1e3 * dgx1.host_switches[0].socket_beta_us_per_mb), 6.0, 1e-9);
  ASSERT_EQ(ndv2.host_switches.size(), 1u);
  EXPECT_TRUE(ndv2.host_switches[0].port_socket.empty());
  dgx1.host_switches[0].port_socket.clear();
  dgx1.host_switches[0].socket_beta_us_per_mb = 0.0;
  EXPECT_EQ(ndv2, dgx1);
}

TEST(Dgx2, SixteenGpusOnNvswitch) {
  const Topology t = make_builtin("dgx2");
  EXPECT_EQ(t.num_ranks, 16);
  ASSERT_EQ(t.switches.size(), 1u);
  EXPECT_EQ(t.switches[0].ranks.size(), 16u);
  EXPECT_DOUBLE_EQ(t.switches[0].port_beta_us_per_mb, 8.0);
  EXPECT_DOUBLE_EQ(t.switches[0].alpha_us, 0.7);
  EXPECT_EQ(t.diameter(), 1);
}

struct MachineCase {
  std::string name;
  int ranks;
  int nodes;
  int diameter;
};

// gtest prints a case by its topology name.
void PrintTo(const MachineCase& c, std::ostream* os) { *os << c.name; }

class Machines : public ::testing::TestWithParam<MachineCase> {};

TEST_P(Machines, RanksNodesDiameter) {
  const MachineCase& c = GetParam();
  const Topology t = make_builtin(c.name);
  EXPECT_EQ(t.name, c.name);
  EXPECT_EQ(t.num_ranks, c.ranks);
  EXPECT_EQ(static_cast<int>(t.nodes.size()), c.nodes);
  EXPECT_EQ(t.diameter(), c.diameter);
  EXPECT_NO_THROW(validate(t));
}

INSTANTIATE_TEST_SUITE_P(
    All, Machines,
    ::testing::Values(MachineCase{"dgx1", 8, 1, 2}, MachineCase{"ndv2", 8, 1, 2},
                      MachineCase{"dgx2", 16, 1, 1}, MachineCase{"ndv4", 8, 1, 1},
                      MachineCase{"dgxh100", 8, 1, 1}, MachineCase{"amdz52", 8, 1, 3},
                      MachineCase{"dgx2x2", 32, 2, 1}, MachineCase{"ndv2x4", 32, 4, 5},
                      MachineCase{"dgx1x2", 16, 2, 3}, MachineCase{"ndv4x2", 16, 2, 1},
                      MachineCase{"dgxh100x3", 24, 3, 1}),
    [](const auto& info) { return info.param.name; });

TEST(MultiNode, IntraNodeTrafficStaysOffIb) {
  for (const std::string name : {"dgx1x2", "ndv2x2", "dgx2x2", "ndv4x2", "dgxh100x2"}) {
    const Topology t = make_builtin(name);
    for (const Connection& c : t.connections()) {
      const bool same_node = t.node_of(c.src) == t.node_of(c.dst);
      const std::string kind =
          c.link_index >= 0 ? t.links[c.link_index].kind : t.switches[c.switch_index].kind;
      EXPECT_EQ(kind == "ib", !same_node) << name << " " << c.src << "->" << c.dst;
    }
  }
}

TEST(MultiNode, Dgx2NicSharedByTwoGpus) {
  const Topology t = make_builtin("dgx2x2");
  const auto ib = std::find_if(t.switches.begin(), t.switches.end(),
                               [](const Switch& s) { return s.kind == "ib"; });
  ASSERT_NE(ib, t.switches.end());
  EXPECT_EQ(ib->ranks.size(), 32u);
  // One port per physical NIC at the NIC's beta, shared by GPUs 2k and 2k+1 of each node.
  EXPECT_DOUBLE_EQ(ib->port_beta_us_per_mb, 106.0);
  EXPECT_DOUBLE_EQ(ib->alpha_us, 1.7);
  EXPECT_EQ(ib->num_ports(), 16);
  for (int r = 0; r < 32; ++r) EXPECT_EQ(ib->port_of_rank(r), r / 2) << r;
  const auto c = t.connection(0, 16);
  ASSERT_TRUE(c.has_value());
  EXPECT_DOUBLE_EQ(c->beta_us_per_mb, 106.0);
  EXPECT_DOUBLE_EQ(t.connection(0, 15)->beta_us_per_mb, 8.0);
}

TEST(MultiNode, Ndv2NicOnGpus0And1) {
  const Topology t = make_builtin("ndv2x2");
  const Switch* ib = nullptr;
  for (const Switch& s : t.switches) {
    if (s.kind == "ib") ib = &s;
  }
  ASSERT_NE(ib, nullptr);
  EXPECT_EQ(ib->ranks, (std::vector<int>{0, 1, 8, 9}));
  EXPECT_EQ(ib->port_group, (std::vector<int>{0, 0, 1, 1}));  // one NIC per node
  EXPECT_DOUBLE_EQ(ib->port_beta_us_per_mb, 106.0);
  EXPECT_FALSE(t.connection(2, 10).has_value());
}

TEST(MultiNode, OneNicPerGpuHasNoSharedPorts) {
  for (const std::string name : {"ndv4x2", "dgxh100x2"}) {
    const Topology t = make_builtin(name);
    ASSERT_EQ(t.switches.back().kind, "ib") << name;
    EXPECT_TRUE(t.switches.back().port_group.empty()) << name;
    EXPECT_EQ(t.switches.back().num_ports(), 16) << name;
  }
}

TEST(MultiNode, OneNodeIsTheMachine) { EXPECT_EQ(make_builtin("dgx2x1"), make_builtin("dgx2")); }

struct ShapeCase {
  std::string name;
  int ranks;
  int directed_links;
  int diameter;
};

void PrintTo(const ShapeCase& c, std::ostream* os) { *os << c.name; }

class Shapes : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(Shapes, RanksLinksDiameter) {
  const ShapeCase& c = GetParam();
  const Topology t = make_builtin(c.name);
  EXPECT_EQ(t.name, c.name);
  EXPECT_EQ(t.num_ranks, c.ranks);
  EXPECT_EQ(static_cast<int>(t.links.size()), c.directed_links);
  EXPECT_EQ(t.diameter(), c.diameter);
}

INSTANTIATE_TEST_SUITE_P(
    All, Shapes,
    ::testing::Values(ShapeCase{"ring:8", 8, 16, 4}, ShapeCase{"ring:2", 2, 2, 1},
                      ShapeCase{"ring:7", 7, 14, 3}, ShapeCase{"uring:8", 8, 8, 7},
                      ShapeCase{"line:5", 5, 8, 4}, ShapeCase{"fc:6", 6, 30, 1},
                      ShapeCase{"switch:5", 5, 0, 1}, ShapeCase{"mesh2d:4x4", 16, 48, 6},
                      ShapeCase{"mesh2d:3x5", 15, 44, 6}, ShapeCase{"torus2d:4x4", 16, 64, 4},
                      ShapeCase{"torus2d:2x3", 6, 18, 2}, ShapeCase{"mesh3d:2x3x4", 24, 92, 6},
                      ShapeCase{"torus3d:4x4x4", 64, 384, 6}, ShapeCase{"hypercube:3", 8, 24, 3},
                      ShapeCase{"hypercube:6", 64, 384, 6},
                      ShapeCase{"dragonfly:4x5", 20, 4 * 10 * 2 + 12, 3},
                      ShapeCase{"dragonfly:3x2", 6, 3 * 2 + 6, 3},
                      ShapeCase{"rfs:2x4x8", 64, 8 * (4 + 2 * 6) * 2, 3}),
    [](const auto& info) {
      std::string s = info.param.name;
      std::replace(s.begin(), s.end(), ':', '_');
      return s;
    });

TEST(Shapes, DefaultCostsAreTacosGeneric) {
  const Topology t = make_builtin("ring:4");
  for (const Link& l : t.links) {
    EXPECT_DOUBLE_EQ(l.alpha_us, 0.5);
    EXPECT_DOUBLE_EQ(l.beta_us_per_mb, beta_from_gbps(50));
    EXPECT_EQ(l.lanes, 1);
  }
}

TEST(Shapes, ParametersSetAlphaAndBandwidthPerDimension) {
  const Topology t = make_builtin("Mesh2D:4x2@gbps=100/25,alpha=1,lanes=2");
  EXPECT_EQ(t.name, "mesh2d:4x2@alpha=1,gbps=100/25,lanes=2");
  // Dimension 0 (first number) joins r and r+1, dimension 1 joins r and r+4.
  ASSERT_NE(t.find_link(0, 1), nullptr);
  EXPECT_DOUBLE_EQ(t.find_link(0, 1)->beta_us_per_mb, beta_from_gbps(100));
  ASSERT_NE(t.find_link(0, 4), nullptr);
  EXPECT_DOUBLE_EQ(t.find_link(0, 4)->beta_us_per_mb, beta_from_gbps(25));
  EXPECT_DOUBLE_EQ(t.find_link(0, 4)->alpha_us, 1.0);
  EXPECT_EQ(t.find_link(0, 4)->lanes, 2);
  const Topology b = make_builtin("ring:4@beta=10");
  EXPECT_DOUBLE_EQ(b.links[0].beta_us_per_mb, 10.0);
}

TEST(Shapes, RfsDefaultsAndSwitches) {
  const Topology t = make_builtin("rfs:2x4x8");
  EXPECT_EQ(t.nodes.size(), 8u);
  EXPECT_EQ(t.switches.size(), 8u);  // one per (i, j) position across the 8 nodes
  EXPECT_DOUBLE_EQ(t.find_link(0, 1)->beta_us_per_mb, beta_from_gbps(200));  // ring
  EXPECT_DOUBLE_EQ(t.find_link(0, 2)->beta_us_per_mb, beta_from_gbps(100));  // fc
  EXPECT_DOUBLE_EQ(t.switches[0].port_beta_us_per_mb, beta_from_gbps(50));
  EXPECT_EQ(t.switches[0].ranks, (std::vector<int>{0, 8, 16, 24, 32, 40, 48, 56}));
}

TEST(Shapes, LargeShapesBuild) {
  const Topology mesh = make_builtin("mesh2d:100x100");
  EXPECT_EQ(mesh.num_ranks, 10000);
  EXPECT_EQ(mesh.links.size(), 4u * 100 * 99);
  const Topology rfs = make_builtin("rfs:8x8x8");
  EXPECT_EQ(rfs.num_ranks, 512);
}

TEST(Shapes, DragonflyHasOneGlobalLinkPerGroupPair) {
  const Topology t = make_builtin("dragonfly:5x3");
  std::map<std::pair<int, int>, int> global;  // (group, group) -> undirected links
  for (const Link& l : t.links) {
    const int g = l.src / 3, h = l.dst / 3;
    if (g < h) ++global[{g, h}];
  }
  EXPECT_EQ(global.size(), 10u);  // C(5, 2)
  for (const auto& [pair, count] : global) EXPECT_EQ(count, 1) << pair.first << "," << pair.second;
  EXPECT_EQ(t.nodes.size(), 5u);
  const Topology costed = make_builtin("dragonfly:3x2@gbps=10/40");
  for (const Link& l : costed.links) {
    const bool local = l.src / 2 == l.dst / 2;
    EXPECT_DOUBLE_EQ(l.beta_us_per_mb, beta_from_gbps(local ? 40 : 10));
  }
}

TEST(Shapes, HypercubeCostsPerBit) {
  const Topology t = make_builtin("hypercube:3@gbps=10/20/30");
  EXPECT_DOUBLE_EQ(t.find_link(0, 1)->beta_us_per_mb, beta_from_gbps(10));
  EXPECT_DOUBLE_EQ(t.find_link(0, 2)->beta_us_per_mb, beta_from_gbps(20));
  EXPECT_DOUBLE_EQ(t.find_link(4, 0)->beta_us_per_mb, beta_from_gbps(30));
  EXPECT_EQ(t.find_link(0, 3), nullptr);
}

TEST(Shapes, Rfs512) {
  const Topology t = make_builtin("rfs:8x8x8");
  EXPECT_EQ(t.nodes.size(), 8u);
  EXPECT_EQ(t.switches.size(), 64u);
  EXPECT_EQ(t.diameter(), 4 + 1 + 1);  // ring of 8, full mesh, switch
  const Topology custom = make_builtin("rfs:8x8x8@gbps=400/200/100,alpha=0.25");
  EXPECT_DOUBLE_EQ(custom.switches[0].port_beta_us_per_mb, beta_from_gbps(100));
  EXPECT_DOUBLE_EQ(custom.switches[0].alpha_us, 0.25);
}

TEST(MultiNode, Dgx1ClusterKeepsNvlinkLanesAndUsesRails) {
  const Topology t = make_builtin("dgx1x2");
  for (int r = 0; r < 16; ++r) EXPECT_EQ(out_lanes(t, r, "nvlink"), 6) << r;
  ASSERT_EQ(t.switches.size(), 4u);
  EXPECT_EQ(t.switches[1].name, "ib_rail1");
  EXPECT_EQ(t.switches[1].ranks, (std::vector<int>{2, 3, 10, 11}));
  EXPECT_EQ(t.switches[1].port_group, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_DOUBLE_EQ(t.switches[1].port_beta_us_per_mb, 106.0);
  EXPECT_EQ(t.nodes, (std::vector<std::vector<int>>{{0, 1, 2, 3, 4, 5, 6, 7},
                                                    {8, 9, 10, 11, 12, 13, 14, 15}}));
}

TEST(Machines, Amdz52IslandsAndPcie) {
  const Topology t = make_builtin("amdz52");
  EXPECT_EQ(t.find_link(2, 3), nullptr);  // routed through GPU 0 (SCCL sec. 5.2.2)
  ASSERT_NE(t.find_link(0, 2), nullptr);
  EXPECT_EQ(t.find_link(0, 2)->kind, "xgmi");
  for (int peer : {0, 2, 3}) EXPECT_EQ(t.find_link(1, peer)->kind, "pcie");
  for (int peer : {4, 6, 7}) EXPECT_EQ(t.find_link(5, peer)->kind, "pcie");
  int xgmi = 0;
  for (const Link& l : t.links) xgmi += l.kind == "xgmi";
  EXPECT_EQ(xgmi, 16);  // two 4-cycles, both directions
}

TEST(Names, CanonicalNameRebuildsTheSameTopology) {
  for (const std::string name : {"DGX1", "Dgx2X2", "ring:8", "MESH2D:4x2@gbps=100/25,alpha=1",
                                 "rfs:2x2x2@lanes=2,beta=3/4/5", "torus3d:2x3x4@alpha=0.1"}) {
    const Topology t = make_builtin(name);
    EXPECT_EQ(make_builtin(t.name), t) << name << " -> " << t.name;
  }
}

TEST(Names, BadNamesThrowUserErrors) {
  for (const std::string bad : {"dgx3",
                                "ring",
                                "ring:",
                                "ring:1",
                                "ring:x",
                                "mesh2d:4",
                                "mesh2d:4x4x4",
                                "ring:4@gbps=0",
                                "ring:4@alpha=-1",
                                "ring:4@gbps=1/2",
                                "ring:4@foo=1",
                                "ring:4@gbps=1,beta=2",
                                "dgx1@alpha=1",
                                "amdz52x2",
                                "dgx2x0",
                                "hypercube:40",
                                "ring:4@lanes=1.5",
                                "fc:0",
                                "fc:100000",
                                "mesh2d:4096x4096"}) {
    EXPECT_THROW(make_builtin(bad), UserError) << bad;
  }
  try {
    make_builtin("nosuch");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.field(), "topology");
    EXPECT_NE(e.reason().find("dgx1"), std::string::npos);
    EXPECT_NE(e.reason().find("ring:N"), std::string::npos);
  }
}

TEST(Names, EveryConcreteCatalogEntryBuilds) {
  for (const std::string& pattern : builtin_names()) {
    std::string name = pattern;
    for (const auto& [from, to] :
         std::vector<std::pair<std::string, std::string>>{{"AxBxC", "2x3x4"},
                                                          {"AxB", "3x4"},
                                                          {"GxP", "3x4"},
                                                          {"xN", "x2"},
                                                          {":N", ":6"},
                                                          {":D", ":3"}}) {
      const auto pos = name.find(from);
      if (pos != std::string::npos) name.replace(pos, from.size(), to);
    }
    EXPECT_NO_THROW(make_builtin(name)) << name;
  }
}

}  // namespace
}  // namespace ccsynth::topologies
