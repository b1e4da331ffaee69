// The simulator on programs from the rest of the pipeline: built-in topologies (topologies),
// baselines (synth) and the compiler. Its times must match the closed forms of the ring and of
// SCCL's six-ring DGX-1 allgather, show a direct algorithm's congestion on a ring (TACOS fig.
// 1-2), and never beat the lower bound.

#include <gtest/gtest.h>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/sim/bounds.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/topologies/library.h"
#include "sim_test_util.h"

namespace ccsynth::sim {
namespace {

SimOptions synchronous() {
  SimOptions o;
  o.pipelining = false;
  o.memory_bandwidth_gbps = 0.0;
  return o;
}

compiler::CompileOptions relaxed() {
  compiler::CompileOptions o;
  o.max_steps_per_threadblock = 1 << 14;
  o.max_threadblocks_per_rank = 1 << 14;
  return o;
}

Program baseline_program(synth::BaselineKind kind, const Collective& c, const Topology& t,
                         const synth::BaselineOptions& options = {}) {
  return compiler::compile(synth::make_baseline(kind, c, t, options), relaxed());
}

TEST(SimIntegration, RingAllgatherOnBuiltinRingMatchesClosedForm) {
  for (int n : {4, 8, 16}) {
    const Topology t = topologies::make_builtin("ring:" + std::to_string(n));
    const Link& link = t.links.front();
    synth::BaselineOptions one_ring;
    one_ring.rings = 1;
    const Program p = baseline_program(synth::BaselineKind::kRing,
                                       make_collective(CollectiveKind::kAllGather, n), t, one_ring);
    for (int64_t bytes : {int64_t{1024}, int64_t{1} << 20, int64_t{256} << 20}) {
      const SimResult r = simulate(p, t, bytes, synchronous());
      // (n-1) alpha + (n-1) L beta: SCCL sec. 3.6 with S = R = n-1, C = 1.
      const double expected = (n - 1) * (link.alpha_us + transfer_us(link.beta_us_per_mb, bytes));
      EXPECT_NEAR(r.time_us, expected, 1e-9 * expected) << "n=" << n << " bytes=" << bytes;
    }
  }
}

TEST(SimIntegration, SccLDgx1SixRingAllgather) {
  // SCCL sec. 3.6 / 1: the 6-ring allgather on DGX-1 costs 7 alpha + 7/6 L beta (one chunk per
  // ring per rank, C = 6).
  const Topology t = topologies::make_builtin("dgx1");
  const auto rings = synth::find_rings(t, 6);
  ASSERT_EQ(rings.size(), 6u);
  synth::BaselineOptions six;
  six.rings = 6;
  const Program p = baseline_program(synth::BaselineKind::kRing,
                                     make_collective(CollectiveKind::kAllGather, 8, 6), t, six);
  const double alpha = t.links.front().alpha_us;
  const double beta = t.links.front().beta_us_per_mb;
  for (const Link& l : t.links) {
    ASSERT_EQ(l.alpha_us, alpha);
    ASSERT_EQ(l.beta_us_per_mb, beta);
  }
  for (int64_t bytes : {int64_t{6} << 10, int64_t{6} << 20, int64_t{384} << 20}) {
    const SimResult r = simulate(p, t, bytes, synchronous());
    // Plus the machine's launch overhead (Topology::launch_us), paid once per call.
    const double expected = t.launch_us + 7 * alpha + 7.0 / 6.0 * transfer_us(beta, bytes);
    EXPECT_NEAR(r.time_us, expected, 1e-9 * expected) << bytes;
  }
}

TEST(SimIntegration, DirectAllgatherOnRing16IsSeveralTimesSlower) {
  // TACOS fig. 1-2: a direct algorithm (every rank sends straight to every other; the simulator
  // routes each send over the shortest path) congests a ring. The `direct` baseline of synth
  // relays hop by hop instead and is not congested, so the program is built by hand here.
  // The ring's links are shared by the flows on them (Topology::shared_links), so the direct
  // program takes the busiest link's load: shortest paths of 1..7 hops both ways and the 8-hop
  // one on one side put 1 + ... + 7 + 8 = 36 blocks on each link of that direction.
  const Topology t = topologies::make_builtin("ring:16");
  ASSERT_TRUE(t.shared_links);
  const Collective c = make_collective(CollectiveKind::kAllGather, 16);
  const Program ring = baseline_program(synth::BaselineKind::kRing, c, t);
  const Program direct = testing::direct_allgather(16);
  const double beta_us_per_mb = t.links[0].beta_us_per_mb;
  for (int64_t bytes : {int64_t{64} << 20, int64_t{256} << 20}) {
    const double ring_us = simulate(ring, t, bytes).time_us;
    const double direct_us = simulate(direct, t, bytes).time_us;
    EXPECT_GT(direct_us, 2.0 * ring_us) << bytes;  // 36 blocks per link against the ring's 15
    const double busiest_link_us = 36.0 * static_cast<double>(bytes) / kBytesPerMb * beta_us_per_mb;
    EXPECT_NEAR(direct_us / busiest_link_us, 1.0, 0.02) << bytes;
    // The relaying baseline is close to the bound.
    const Program relayed = baseline_program(synth::BaselineKind::kDirect, c, t);
    EXPECT_LT(simulate(relayed, t, bytes).time_us, 1.5 * lower_bound(t, c, bytes).lower_bound_us);
  }
}

TEST(SimIntegration, Dgx1PointToPointAlltoallCrossesPcieAndQpi) {
  // NCCL's p2p alltoall on a DGX-1 (direct end to end): every GPU has 3 peers without NVLink,
  // all on the other CPU socket, reached over its PCIe switch's uplink (two GPUs share one;
  // Topology::host_switches) and the QPI between the sockets (Switch::port_socket). Each QPI
  // direction carries 4 GPUs x 3 blocks, so the alltoall takes at least 12 blocks at QPI's
  // bandwidth; without the socket link the uplinks (2 x 3 blocks each way) bound it, and without
  // the host path the same sends go over NVLink paths and take less than half of that (SCCL sec.
  // 5.5 fig. 6: SCCL's NVLink alltoall is over 6.8x faster).
  const Topology t = topologies::make_builtin("dgx1");
  ASSERT_EQ(t.host_switches.size(), 1u);
  const Switch& host = t.host_switches[0];
  ASSERT_EQ(host.num_sockets(), 2);
  EXPECT_FALSE(t.connection(0, 4).has_value());  // synthesizers do not see the host path
  const Collective c = make_collective(CollectiveKind::kAllToAll, 8);
  synth::BaselineOptions e2e;
  e2e.end_to_end = true;
  const Program p = baseline_program(synth::BaselineKind::kDirect, c, t, e2e);
  const int64_t bytes = int64_t{64} << 20;
  const double block_mb = static_cast<double>(bytes) / 8 / kBytesPerMb;
  const double qpi_us = 12 * block_mb * host.socket_beta_us_per_mb;
  const double with_host = simulate(p, t, bytes).time_us;
  EXPECT_GE(with_host, qpi_us);
  EXPECT_LT(with_host, 1.2 * qpi_us);
  Topology one_socket = t;
  one_socket.host_switches[0].port_socket.clear();
  const double uplink_us = 6 * block_mb * host.port_beta_us_per_mb;
  const double pcie_only = simulate(p, one_socket, bytes).time_us;
  EXPECT_GE(pcie_only, uplink_us);
  EXPECT_LT(pcie_only, 1.2 * uplink_us);
  Topology nvlink_only = t;
  nvlink_only.host_switches.clear();
  EXPECT_GT(pcie_only, 2 * simulate(p, nvlink_only, bytes).time_us);
}

TEST(SimIntegration, NodeTrafficBoundOnNdv2x4) {
  // 4 NDv2 nodes, one 106 us/MiB NIC port each (shared by GPUs 0 and 1). Allreduce of 1 GiB:
  // 2(4-1) inter-node transfers per byte over 4 NIC ingress ports, 1.5x the node cut's
  // 1024 x 106 us; plus the IB alpha and the launch overhead.
  const Topology t = topologies::make_builtin("ndv2x4");
  const Collective ar = make_collective(CollectiveKind::kAllReduce, 32);
  const int64_t bytes = int64_t{1} << 30;
  const LowerBound b = lower_bound(t, ar, bytes);
  EXPECT_NEAR(b.node_traffic_us, 1.7 + 1.5 * 1024 * 106, 1e-6);
  EXPECT_NEAR(b.cut_us, 1.7 + 1024 * 106, 1e-6);
  EXPECT_NEAR(b.lower_bound_us, 6.6 + 1.7 + 1.5 * 1024 * 106, 1e-6);
  // The ring allreduce crosses every node boundary 2(R-1)/R x L on one NIC each way.
  const Program ring = baseline_program(synth::BaselineKind::kRing, ar, t);
  const double ring_us = simulate(ring, t, bytes).time_us;
  EXPECT_GE(ring_us, b.lower_bound_us);
  EXPECT_LT(ring_us, 2.0 * b.lower_bound_us);
  // Two nodes: the factor 2(N-1)/N is 1, the node cut bound again.
  const Topology two = topologies::make_builtin("ndv2x2");
  const LowerBound b2 = lower_bound(two, make_collective(CollectiveKind::kAllReduce, 16), bytes);
  EXPECT_NEAR(b2.node_traffic_us, b2.cut_us, 1e-6);
}

// Property: every applicable baseline on several machines, compiled, never beats the bound.
TEST(SimIntegration, BaselinesNeverBeatTheBound) {
  int checked = 0;
  for (const char* name :
       {"ring:6", "dgx1", "mesh2d:3x3", "dgx2", "ndv2x2", "ndv4", "dgx2x2", "ndv2x4", "ndv4x4"}) {
    const Topology t = topologies::make_builtin(name);
    for (CollectiveKind kind :
         {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter, CollectiveKind::kAllReduce,
          CollectiveKind::kAllToAll, CollectiveKind::kBroadcast, CollectiveKind::kReduce}) {
      const Collective c = make_collective(kind, t.num_ranks);
      for (synth::BaselineKind b : synth::all_baseline_kinds()) {
        if (!synth::baseline_applies(b, c, t)) continue;
        // Also end to end (routed sends: on dgx1 and ndv2x2 over the host switches, with every
        // machine's threadblock limit).
        for (const bool end_to_end : {false, true}) {
          synth::BaselineOptions options;
          options.end_to_end = end_to_end;
          Program p;
          try {
            p = baseline_program(b, c, t, options);
          } catch (const UserError&) {
            continue;  // does not fit the runtime limits, or has no end-to-end form
          }
          for (int64_t bytes : {int64_t{4096}, int64_t{1} << 20, int64_t{64} << 20}) {
            const SimResult r = simulate(p, t, bytes);
            // The protocol's factors and FIFO slot (alpha per runtime call on lanes).
            const BoundOptions bo = bound_options_for(t, p.protocol, end_to_end);
            ASSERT_GT(bo.slot_bytes, 0.0);
            const LowerBound bound = lower_bound(t, c, bytes, bo);
            EXPECT_GE(r.time_us, bound.lower_bound_us * (1 - 1e-12))
                << name << " " << to_string(kind) << " " << synth::to_string(b)
                << (end_to_end ? " end to end " : " ") << bytes;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace ccsynth::sim
