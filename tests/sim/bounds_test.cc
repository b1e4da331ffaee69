#include "ccsynth/sim/bounds.h"

#include <gtest/gtest.h>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/sim/simulate.h"
#include "sim_test_util.h"

namespace ccsynth::sim {
namespace {

using testing::ring_topology;

TEST(Bounds, RingAllgatherGoldenValues) {
  // Bidirectional ring: each rank must receive (n-1) chunks through 2 links.
  const double alpha = 0.7, beta = 46.0;
  const int n = 8;
  const int64_t bytes = 1 << 20;
  const LowerBound b = lower_bound(ring_topology(n, alpha, beta),
                                   make_collective(CollectiveKind::kAllGather, n), bytes);
  EXPECT_DOUBLE_EQ(b.latency_us, 4 * alpha);  // the opposite rank is 4 hops away
  EXPECT_NEAR(b.ingress_egress_us, alpha + (n - 1) * beta / 2.0, 1e-9);
  // The exact cut bound includes the single-rank cuts; half the ring (4 chunks through 2
  // links, alpha + 2 beta) is weaker.
  EXPECT_NEAR(b.cut_us, alpha + 3.5 * beta, 1e-9);
  EXPECT_NEAR(b.lower_bound_us, alpha + 3.5 * beta, 1e-9);
}

TEST(Bounds, LatencyOfEqualAlphasIsTheirSumAlongTheFewestHops) {
  // Every link has one alpha: distances are found breadth first, each the previous hop's plus
  // alpha, the same doubles Dijkstra sums (0.7 added six times is not 6 x 0.7 in binary).
  const double alpha = 0.7;
  const int n = 12;
  const LowerBound b = lower_bound(ring_topology(n, alpha, 46.0),
                                   make_collective(CollectiveKind::kAllGather, n), 1 << 20);
  double six_hops = 0.0;
  for (int hop = 0; hop < 6; ++hop) six_hops += alpha;
  EXPECT_EQ(b.latency_us, six_hops);
  EXPECT_NE(six_hops, 6 * alpha);
}

TEST(Bounds, LatencyTakesTheCheapestPathWhenAlphasDiffer) {
  // A ring of 6 whose link 0 <-> 1 costs 4 us: rank 1 is cheaper to reach from rank 0 the long
  // way round (5 hops of 0.5 us), which a count of hops would miss.
  Topology t = ring_topology(6, 0.5, 46.0);
  for (Link& link : t.links) {
    if ((link.src == 0 && link.dst == 1) || (link.src == 1 && link.dst == 0)) link.alpha_us = 4.0;
  }
  const LowerBound b = lower_bound(t, make_collective(CollectiveKind::kAllGather, 6), 1 << 20);
  EXPECT_DOUBLE_EQ(b.latency_us, 2.5);
}

TEST(Bounds, UnidirectionalRingAllreduceIsTight) {
  // Total traffic 2(n-1) transfers per chunk over n links: 2(n-1)/n L beta, which ring
  // allreduce attains up to latency.
  const double alpha = 0.0, beta = 10.0;
  const int n = 6;
  const int64_t bytes = int64_t{n} << 20;
  const Topology topo = ring_topology(n, alpha, beta, /*bidirectional=*/false);
  const LowerBound b = lower_bound(topo, make_collective(CollectiveKind::kAllReduce, n), bytes);
  EXPECT_NEAR(b.total_traffic_us, 2.0 * (n - 1) * beta, 1e-9);
  SimOptions o;
  o.pipelining = false;
  o.memory_bandwidth_gbps = 0.0;
  const SimResult r = simulate(testing::ring_allreduce(n), topo, bytes, o);
  EXPECT_NEAR(r.time_us, b.lower_bound_us, 1e-9);
}

TEST(Bounds, AlltoallCutAcrossBisection) {
  // 8 ranks, two 4-rank switches joined by one link each way: 16 chunks must cross each way.
  Topology t;
  t.name = "two-switches";
  t.num_ranks = 8;
  t.nodes = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  t.switches = {Switch{"a", {0, 1, 2, 3}, 1.0, 1.0, "switch"},
                Switch{"b", {4, 5, 6, 7}, 1.0, 1.0, "switch"}};
  t.links = {Link{0, 4, 1, 5.0, 100.0, "ib"}, Link{4, 0, 1, 5.0, 100.0, "ib"}};
  const int64_t bytes = 8 << 20;  // 8 chunks of 1 MiB per rank
  const LowerBound b = lower_bound(t, make_collective(CollectiveKind::kAllToAll, 8), bytes);
  EXPECT_NEAR(b.cut_us, 5.0 + 16 * 100.0, 1e-9);
  EXPECT_NEAR(b.lower_bound_us, 5.0 + 16 * 100.0, 1e-9);
  // The candidate cuts of large topologies find the same cut here (node groups).
  BoundOptions o;
  o.exact_cut_max_ranks = 0;
  EXPECT_NEAR(lower_bound(t, make_collective(CollectiveKind::kAllToAll, 8), bytes, o).cut_us,
              b.cut_us, 1e-9);
}

TEST(Bounds, CandidateCutsMatchExactOnRings) {
  for (int n : {6, 10, 12}) {
    const Topology topo = ring_topology(n, 1.0, 10.0);
    for (CollectiveKind kind :
         {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll}) {
      const Collective c = make_collective(kind, n);
      const LowerBound exact = lower_bound(topo, c, 1 << 20);
      BoundOptions o;
      o.exact_cut_max_ranks = 0;
      const LowerBound approx = lower_bound(topo, c, 1 << 20, o);
      EXPECT_LE(approx.cut_us, exact.cut_us + 1e-9);
      EXPECT_NEAR(approx.cut_us, exact.cut_us, 1e-9) << n << " " << to_string(kind);
    }
  }
}

TEST(Bounds, ProtocolFactorsScale) {
  const Topology topo = ring_topology(4, 2.0, 10.0);
  const Collective c = make_collective(CollectiveKind::kAllGather, 4);
  BoundOptions o;
  o.alpha_factor = 0.5;
  o.beta_factor = 2.0;
  const LowerBound plain = lower_bound(topo, c, 1 << 20);
  const LowerBound scaled = lower_bound(topo, c, 1 << 20, o);
  EXPECT_NEAR(scaled.latency_us, plain.latency_us * 0.5, 1e-12);
  EXPECT_NEAR(scaled.ingress_egress_us, 1.0 + 3 * 20.0 / 2.0, 1e-9);
}

// A lane held by one transfer at a time pays alpha once per runtime call of at most a FIFO slot
// (sim::chunks_per_call), so it sustains at most 1 / (beta + alpha / slot) bytes per us.
TEST(Bounds, ExclusiveLanesPayAlphaPerRuntimeCall) {
  const Topology topo = ring_topology(4, 2.0, 10.0);
  const Collective c = make_collective(CollectiveKind::kAllGather, 4);
  const int64_t bytes = int64_t{64} << 20;
  BoundOptions o;
  o.slot_bytes = 512 * 1024;
  // 3 x 64 MiB into a rank over 2 lanes: 96 MiB x (10 + 2 / 0.5) us/MiB, not 2 + 96 x 10.
  EXPECT_NEAR(lower_bound(topo, c, bytes).ingress_egress_us, 2.0 + 96 * 10.0, 1e-9);
  EXPECT_NEAR(lower_bound(topo, c, bytes, o).ingress_egress_us, 96 * 14.0, 1e-9);
  EXPECT_NEAR(lower_bound(topo, c, bytes, o).bandwidth_us, 96 * 14.0, 1e-9);
  // Small sizes keep the one alpha: 3 x 64 KiB over 2 lanes.
  EXPECT_NEAR(lower_bound(topo, c, 64 << 10, o).ingress_egress_us, 2.0 + 0.09375 * 10.0, 1e-9);
  // Shared links and switch ports run a transfer's alpha beside the others' bytes.
  Topology shared = topo;
  shared.shared_links = true;
  EXPECT_NEAR(lower_bound(shared, c, bytes, o).ingress_egress_us, 2.0 + 96 * 10.0, 1e-9);
  const Topology sw = testing::switch_topology(4, 2.0, 10.0);
  EXPECT_NEAR(lower_bound(sw, c, bytes, o).bandwidth_us, lower_bound(sw, c, bytes).bandwidth_us,
              1e-9);
  // The planner's options carry the protocol's slot where the runtime slices.
  EXPECT_EQ(bound_options_for(topo, Protocol::kLL).slot_bytes, 32 * 1024);
  SimOptions synchronous;
  synchronous.pipelining = false;
  EXPECT_EQ(bound_options_for(topo, Protocol::kSimple, false, synchronous).slot_bytes, 0.0);
}

TEST(Bounds, SharedPortCountsOnce) {
  // 4 ranks, ports {0, 1} and {2, 3}, 10 us/MiB, no alpha. Allgather of 1 MiB: ranks 0 and 1
  // each receive 3 chunks, all through their shared ingress: 6 x 10 us. With a port each,
  // every rank's ingress needs 3 x 10.
  const Collective ag = make_collective(CollectiveKind::kAllGather, 4);
  const Topology shared = testing::shared_switch_topology(4, 2, 0.0, 10.0);
  const LowerBound b = lower_bound(shared, ag, 1 << 20);
  EXPECT_NEAR(b.ingress_egress_us, 60.0, 1e-9);
  EXPECT_NEAR(b.lower_bound_us, 60.0, 1e-9);
  EXPECT_NEAR(lower_bound(testing::switch_topology(4, 0.0, 10.0), ag, 1 << 20).lower_bound_us, 30.0,
              1e-9);
  // Cuts see at most 3 chunks entering through one port ({0}: 3 x 10; {0, 1}: 2 x 10, the
  // shared port counted once); total traffic: 12 transfers over 2 ingress ports.
  EXPECT_NEAR(b.cut_us, 30.0, 1e-9);
  EXPECT_NEAR(b.total_traffic_us, 60.0, 1e-9);
  // The direct allgather reaches it.
  SimOptions o;
  o.pipelining = false;
  o.memory_bandwidth_gbps = 0.0;
  EXPECT_NEAR(simulate(testing::direct_allgather(4), shared, 1 << 20, o).time_us, 60.0, 1e-9);
}

TEST(Bounds, SharedNicCutOverNodes) {
  // 3 nodes of 2 ranks with a 5 us/MiB link inside; each node's pair shares a 20 us/MiB port.
  // Node {0, 1} must receive 4 chunks through one port: 4 x 20 = 80 (each rank alone: 5 chunks
  // through link + port, 5 / (1/5 + 1/20) = 20). The candidate cuts (exact up to 14 ranks)
  // find it either way.
  const Topology t = testing::two_per_nic_topology(3, 0.0, 5.0, 20.0);
  const Collective ag = make_collective(CollectiveKind::kAllGather, 6);
  EXPECT_NEAR(lower_bound(t, ag, 1 << 20).cut_us, 80.0, 1e-9);
  BoundOptions candidates;
  candidates.exact_cut_max_ranks = 0;
  EXPECT_NEAR(lower_bound(t, ag, 1 << 20, candidates).cut_us, 80.0, 1e-9);
}

TEST(Bounds, NodeTrafficCountsTransfersBetweenNodes) {
  // 3 nodes of 2 ranks (5 us/MiB link inside), each node's pair sharing one 20 us/MiB port.
  // Allreduce of L = 1 MiB: every byte crosses between the nodes 2(3-1) = 4 times (one-way
  // gossip on the nodes), over 3 ingress ports: 4 x 20 / 3. The node cut carries L once
  // (20), the total traffic 2(6-1) L over 6 lanes and 3 ports (10 / (6/5 + 3/20)).
  const Topology t = testing::two_per_nic_topology(3, 0.0, 5.0, 20.0);
  const LowerBound b = lower_bound(t, make_collective(CollectiveKind::kAllReduce, 6), 1 << 20);
  EXPECT_NEAR(b.node_traffic_us, 4 * 20.0 / 3, 1e-9);
  EXPECT_NEAR(b.cut_us, 20.0, 1e-9);
  EXPECT_NEAR(b.total_traffic_us, 10.0 / (6 / 5.0 + 3 / 20.0), 1e-9);
  EXPECT_NEAR(b.lower_bound_us, 4 * 20.0 / 3, 1e-9);
  // Allgather: every node lacks the other 4 ranks' chunks, one transfer into it each: 12
  // transfers over 3 ports (as the node cut, 4 chunks through one port).
  const LowerBound ag = lower_bound(t, make_collective(CollectiveKind::kAllGather, 6), 1 << 20);
  EXPECT_NEAR(ag.node_traffic_us, 12 * 20.0 / 3, 1e-9);
  // Reducescatter: each chunk's contributions from 3 nodes reach 1 node: 2 transfers.
  const LowerBound rs = lower_bound(t, make_collective(CollectiveKind::kReduceScatter, 6), 6 << 20);
  EXPECT_NEAR(rs.node_traffic_us, 6 * 2 * 20.0 / 3, 1e-9);
}

TEST(Bounds, NodeTrafficNeedsTwoNodes) {
  const Collective ar = make_collective(CollectiveKind::kAllReduce, 4);
  Topology t = testing::two_per_nic_topology(2, 1.0, 5.0, 20.0);
  // Two nodes: 2(2-1) transfers over 2 ports is the node cut, L through one port.
  const LowerBound two = lower_bound(t, ar, 1 << 20);
  EXPECT_NEAR(two.node_traffic_us, 1.0 + 20.0, 1e-9);
  EXPECT_NEAR(two.node_traffic_us, two.cut_us, 1e-9);
  // One node, or none: nothing new.
  t.nodes = {{0, 1, 2, 3}};
  EXPECT_EQ(lower_bound(t, ar, 1 << 20).node_traffic_us, 0.0);
  t.nodes.clear();
  EXPECT_EQ(lower_bound(t, ar, 1 << 20).node_traffic_us, 0.0);
  EXPECT_EQ(lower_bound(ring_topology(4, 1.0, 5.0), ar, 1 << 20).node_traffic_us, 0.0);
}

TEST(Bounds, NodeTrafficCountsLinksBetweenNodesOnce) {
  // Nodes {0, 1}, {2, 3}, {4, 5}, {6, 7} with a fast link pair inside, joined in a
  // unidirectional ring by 2-lane 20 us/MiB links (1 -> 2, 3 -> 4, 5 -> 6, 7 -> 0). Allreduce:
  // 2(4-1) crossings per byte over 4 links of 2 lanes each; the node cuts see L over one link.
  Topology t;
  t.name = "node-ring";
  t.num_ranks = 8;
  for (int n = 0; n < 4; ++n) {
    t.nodes.push_back({2 * n, 2 * n + 1});
    t.links.push_back(Link{2 * n, 2 * n + 1, 1, 0.5, 1.0, "nvlink"});
    t.links.push_back(Link{2 * n + 1, 2 * n, 1, 0.5, 1.0, "nvlink"});
    t.links.push_back(Link{2 * n + 1, (2 * n + 2) % 8, 2, 3.0, 20.0, "ib"});
  }
  const LowerBound b = lower_bound(t, make_collective(CollectiveKind::kAllReduce, 8), 1 << 20);
  EXPECT_NEAR(b.node_traffic_us, 3.0 + 6 * 20.0 / (4 * 2), 1e-9);
  EXPECT_NEAR(b.cut_us, 3.0 + 20.0 / 2, 1e-9);
  EXPECT_NEAR(b.lower_bound_us, b.node_traffic_us, 1e-9);
}

TEST(Bounds, IncludeTheLaunchOverhead) {
  Topology t = testing::switch_topology(4, 1.0, 10.0);
  const Collective ag = make_collective(CollectiveKind::kAllGather, 4);
  const LowerBound without = lower_bound(t, ag, 1 << 20);
  t.launch_us = 7.0;
  const LowerBound with = lower_bound(t, ag, 1 << 20);
  EXPECT_DOUBLE_EQ(with.launch_us, 7.0);
  EXPECT_NEAR(with.lower_bound_us, without.lower_bound_us + 7.0, 1e-9);
  EXPECT_DOUBLE_EQ(with.bandwidth_us, without.bandwidth_us);
}

TEST(Bounds, RejectsRankMismatch) {
  EXPECT_THROW(
      lower_bound(ring_topology(4, 1.0, 1.0), make_collective(CollectiveKind::kAllGather, 5), 1024),
      UserError);
}

// Property: no simulated time is below the bound, over programs x topologies x sizes x options.
struct Case {
  std::string name;
  Program program;
  Topology topology;
  Collective collective;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int n : {2, 3, 4, 7, 8, 16}) {
    const Collective ag = make_collective(CollectiveKind::kAllGather, n);
    const Collective ar = make_collective(CollectiveKind::kAllReduce, n);
    out.push_back({"ring-ag-bi", testing::ring_allgather(n), ring_topology(n, 0.7, 46.0), ag});
    out.push_back(
        {"ring-ag-uni", testing::ring_allgather(n, 3), ring_topology(n, 1.3, 20.0, false), ag});
    out.push_back({"ring-ag-lanes", testing::ring_allgather(n, 4),
                   ring_topology(n, 0.5, 30.0, false, 4), ag});
    out.push_back(
        {"direct-ag-ring", testing::direct_allgather(n), ring_topology(n, 0.7, 46.0), ag});
    out.push_back({"direct-ag-switch", testing::direct_allgather(n),
                   testing::switch_topology(n, 2.0, 8.0), ag});
    out.push_back({"ring-ag-switch", testing::ring_allgather(n, 2),
                   testing::switch_topology(n, 2.0, 8.0), ag});
    out.push_back(
        {"ring-ar-uni", testing::ring_allreduce(n), ring_topology(n, 0.4, 12.0, false), ar});
    out.push_back({"ring-ar-bi", testing::ring_allreduce(n), ring_topology(n, 0.4, 12.0), ar});
    out.push_back(
        {"ring-ar-switch", testing::ring_allreduce(n), testing::switch_topology(n, 1.0, 5.0), ar});
    out.push_back({"direct-ag-shared", testing::direct_allgather(n),
                   testing::shared_switch_topology(n, 2, 2.0, 8.0), ag});
    out.push_back({"ring-ag-shared", testing::ring_allgather(n, 2),
                   testing::shared_switch_topology(n, 2, 2.0, 8.0), ag});
    out.push_back({"ring-ar-shared", testing::ring_allreduce(n),
                   testing::shared_switch_topology(n, 3, 1.0, 5.0), ar});
    if (n % 2 == 0) {
      out.push_back({"ring-ar-two-per-nic", testing::ring_allreduce(n),
                     testing::two_per_nic_topology(n / 2, 1.0, 5.0, 20.0), ar});
      out.push_back({"direct-ag-two-per-nic", testing::direct_allgather(n),
                     testing::two_per_nic_topology(n / 2, 1.0, 5.0, 20.0), ag});
      out.push_back({"ring-ag-two-per-nic", testing::ring_allgather(n, 2),
                     testing::two_per_nic_topology(n / 2, 1.0, 5.0, 20.0), ag});
    }
  }
  return out;
}

TEST(Bounds, SimulationNeverBeatsTheBound) {
  int checked = 0;
  for (const Case& c : cases()) {
    for (int64_t bytes :
         {int64_t{0}, int64_t{1024}, int64_t{100000}, int64_t{1} << 20, int64_t{48} << 20}) {
      for (Protocol protocol : {Protocol::kSimple, Protocol::kLL, Protocol::kLL128}) {
        for (bool pipelining : {false, true}) {
          // As built, and with a launch overhead and one-transfer-at-a-time switch ports.
          for (bool variant : {false, true}) {
            Topology topology = c.topology;
            if (variant) {
              topology.launch_us = 2.5;
              for (Switch& sw : topology.switches) sw.port_lanes = 1;
            }
            Program program = c.program;
            program.protocol = protocol;
            SimOptions o;
            o.pipelining = pipelining;
            const ProtocolCost& cost = protocol_cost(topology, protocol);
            BoundOptions bo;
            bo.alpha_factor = cost.alpha_factor;
            bo.beta_factor = cost.beta_factor;
            const SimResult r = simulate(program, topology, bytes, o);
            const LowerBound b = lower_bound(topology, c.collective, bytes, bo);
            EXPECT_GE(r.time_us, b.lower_bound_us * (1 - 1e-12))
                << c.name << " n=" << topology.num_ranks << " bytes=" << bytes << " "
                << to_string(protocol) << " pipelining=" << pipelining << " variant=" << variant;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, (6 * 12 + 4 * 3) * 5 * 3 * 2 * 2);
}

}  // namespace
}  // namespace ccsynth::sim
