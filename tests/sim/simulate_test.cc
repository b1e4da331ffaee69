#include "ccsynth/sim/simulate.h"

#include <gtest/gtest.h>

#include <string>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "sim_test_util.h"

namespace ccsynth::sim {
namespace {

using testing::ring_allgather;
using testing::ring_topology;

SimOptions synchronous() {
  SimOptions o;
  o.pipelining = false;
  o.memory_bandwidth_gbps = 0.0;
  return o;
}

// `ranks` ranks of `chunks` input and output chunks each, without threadblocks yet.
Program custom_program(const std::string& name, int ranks, int chunks) {
  Program p;
  p.name = name;
  p.collective = CollectiveKind::kCustom;
  p.num_ranks = ranks;
  for (int r = 0; r < ranks; ++r) {
    GpuProgram g;
    g.rank = r;
    g.input_chunks = chunks;
    g.output_chunks = chunks;
    p.gpus.push_back(g);
  }
  return p;
}

TEST(Simulate, RingAllgatherMatchesClosedFormWithoutPipelining) {
  const double alpha = 0.7, beta = 46.0;  // us, us/MiB
  for (int n : {2, 4, 8, 16}) {
    const Topology topo = ring_topology(n, alpha, beta);
    for (int64_t bytes : {int64_t{1024}, int64_t{1} << 20, int64_t{64} << 20}) {
      const SimResult r = simulate(ring_allgather(n), topo, bytes, synchronous());
      const double expected = (n - 1) * (alpha + beta * bytes / kBytesPerMb);
      EXPECT_NEAR(r.time_us, expected, 1e-9 * expected) << "n=" << n << " bytes=" << bytes;
      EXPECT_EQ(r.slices, 1);
      EXPECT_EQ(r.events, n * (n + 1));
    }
  }
}

TEST(Simulate, RingAllgatherPipelinedFollowsInterpreterLoop) {
  // One threadblock runs all its steps for slice 0 before slice 1 (MSCCLang fig. 5), so with k
  // slices the ring takes k(n-1) alpha + (n-1) L beta.
  const int n = 8;
  const double alpha = 2.0, beta = 10.0;
  const Topology topo = ring_topology(n, alpha, beta);
  SimOptions o;
  o.memory_bandwidth_gbps = 0.0;
  const int64_t bytes = 4 << 20;  // 8 Simple slices of 512 KiB
  const SimResult r = simulate(ring_allgather(n), topo, bytes, o);
  EXPECT_EQ(r.slices, 8);
  const double expected = 8 * (n - 1) * alpha + (n - 1) * beta * 4.0;
  EXPECT_NEAR(r.time_us, expected, 1e-9 * expected);
}

// stop_after_us: a simulation stops once its time is sure to pass the limit and says so with
// a time above the limit; at or above its own time it runs to the end unchanged (a variant that
// ties the best time must still be compared, the first one winning the tie).
TEST(Simulate, StopsOnceItsTimeIsSureToPassTheLimit) {
  const Topology topo = ring_topology(8, 2.0, 10.0);
  SimOptions o;
  o.critical_path = false;
  const int64_t bytes = 4 << 20;
  const SimResult full = simulate(ring_allgather(8), topo, bytes, o);
  ASSERT_FALSE(full.stopped);
  o.stop_after_us = full.time_us;
  const SimResult tie = simulate(ring_allgather(8), topo, bytes, o);
  EXPECT_FALSE(tie.stopped);
  EXPECT_EQ(tie.time_us, full.time_us);
  EXPECT_EQ(tie.events, full.events);
  for (const double share : {0.2, 0.9, 0.999}) {
    o.stop_after_us = share * full.time_us;
    const SimResult cut = simulate(ring_allgather(8), topo, bytes, o);
    EXPECT_TRUE(cut.stopped) << share;
    EXPECT_GT(cut.time_us, o.stop_after_us) << share;
    EXPECT_LE(cut.time_us, full.time_us) << share;
    EXPECT_LT(cut.events, full.events) << share;
  }
}

TEST(Simulate, RingAllreduceMatchesClosedForm) {
  const double alpha = 1.5, beta = 20.0;
  for (int n : {3, 5, 8}) {
    const Topology topo = ring_topology(n, alpha, beta, /*bidirectional=*/false);
    const int64_t bytes = int64_t{n} << 20;
    const SimResult r = simulate(testing::ring_allreduce(n), topo, bytes, synchronous());
    const double expected = 2 * (n - 1) * (alpha + beta * 1.0);  // chunk = 1 MiB
    EXPECT_NEAR(r.time_us, expected, 1e-9 * expected) << n;
    EXPECT_DOUBLE_EQ(r.chunk_bytes, 1 << 20);
    // nccl-tests: algbw = bytes / time, busbw = algbw * 2(n-1)/n.
    EXPECT_NEAR(r.algbw_gbps, bytes / (r.time_us * 1e3), 1e-9);
    EXPECT_NEAR(r.busbw_gbps, r.algbw_gbps * 2.0 * (n - 1) / n, 1e-9);
  }
}

TEST(Simulate, SccLSixRingCostFormula) {
  // SCCL sec. 3.6: a synchronous algorithm with S steps, R rounds and C chunks costs
  // S alpha + (R/C) L beta; the DGX-1 6-ring allgather is 7 alpha + 7/6 L beta. Here six rings
  // over 8 ranks use six lanes per link (one per ring) and each carries L/6 per step.
  const double alpha = 0.7, beta = 46.0;
  const Topology topo = ring_topology(8, alpha, beta, /*bidirectional=*/false, /*lanes=*/6);
  const int64_t bytes = 6 << 20;
  const SimResult r = simulate(ring_allgather(8, 6), topo, bytes, synchronous());
  const double expected = 7 * alpha + 7.0 / 6.0 * beta * 6.0;
  EXPECT_NEAR(r.time_us, expected, 1e-9 * expected);
}

TEST(Simulate, DirectAllgatherOnRingIsCongested) {
  const int n = 16;
  const Topology topo = ring_topology(n, 0.7, 46.0);
  SimOptions o;
  const int64_t bytes = int64_t{256} << 20;
  const SimResult ring = simulate(ring_allgather(n), topo, bytes, o);
  const SimResult direct = simulate(testing::direct_allgather(n), topo, bytes, o);
  EXPECT_GT(direct.time_us, 3.0 * ring.time_us);
  // On a switch both move the same bytes through every port: within 10% of each other (the
  // direct sends queue for two ports each, which leaves some port time idle).
  const Topology sw = testing::switch_topology(n, 0.7, 46.0);
  const SimResult ring_sw = simulate(ring_allgather(n), sw, bytes, o);
  const SimResult direct_sw = simulate(testing::direct_allgather(n), sw, bytes, o);
  EXPECT_LE(direct_sw.time_us, ring_sw.time_us * 1.10);
}

TEST(Simulate, FifoSlotsLimitOutstandingSends) {
  // Rank 0 sends 4 chunks to rank 1, whose receiving threadblock waits for a slow local copy
  // first; with 1 slot the sender can run at most one send ahead of the receiver.
  Program p = custom_program("fifo", 2, 4);
  Threadblock sender;
  sender.send_peer = 1;
  for (int c = 0; c < 4; ++c) {
    sender.steps.push_back(
        testing::make_step(StepType::kSend, Buffer::kInput, c, Buffer::kOutput, c));
  }
  p.gpus[0].threadblocks.push_back(sender);
  Threadblock receiver;
  receiver.recv_peer = 0;
  receiver.steps.push_back(
      testing::make_step(StepType::kCopy, Buffer::kInput, 0, Buffer::kOutput, 0, 4));
  for (int c = 0; c < 4; ++c) {
    receiver.steps.push_back(
        testing::make_step(StepType::kRecv, Buffer::kInput, c, Buffer::kOutput, c));
  }
  p.gpus[1].threadblocks.push_back(receiver);
  const Topology topo = ring_topology(2, 1.0, 1.0);
  SimOptions o;
  o.pipelining = false;
  o.memory_bandwidth_gbps = 1.0;  // copy of 4 x 1 MiB at 1 GB/s: 2 * 4 MiB / 1e3 B/us
  o.simple.fifo_slots = 1;
  const int64_t bytes = 4 << 20;
  const SimResult r = simulate(p, topo, bytes, o);
  const double copy = 2.0 * (4 << 20) / 1e3;
  const double recv = 2.0 * (1 << 20) / 1e3;  // receive copies out of the FIFO
  // Send 0 lands at 2 us; sends 1..3 each start only when the previous receive freed the slot
  // and take 2 us (alpha 1 + 1 MiB at 1 us/MiB) before the next receive can start.
  EXPECT_NEAR(r.time_us, copy + 4 * recv + 3 * 2.0, 1e-6 * r.time_us);
  o.simple.fifo_slots = 8;
  const SimResult wide = simulate(p, topo, bytes, o);
  EXPECT_NEAR(wide.time_us, copy + 4 * recv, 1e-6 * wide.time_us);
}

TEST(Simulate, DependenciesArePerSlice) {
  // tb1 on rank 0 sends chunk 0 only after tb0's copy of the same slice finished.
  Program p = custom_program("dep", 2, 1);
  Threadblock copy;
  copy.steps.push_back(testing::make_step(StepType::kCopy, Buffer::kInput, 0, Buffer::kOutput, 0));
  copy.steps.back().has_dep = true;
  Threadblock send;
  send.id = 1;
  send.send_peer = 1;
  send.steps.push_back(testing::make_step(StepType::kSend, Buffer::kOutput, 0, Buffer::kOutput, 0));
  send.steps.back().dep_tb = 0;
  send.steps.back().dep_step = 0;
  p.gpus[0].threadblocks = {copy, send};
  Threadblock recv;
  recv.recv_peer = 0;
  recv.steps.push_back(testing::make_step(StepType::kRecv, Buffer::kInput, 0, Buffer::kOutput, 0));
  p.gpus[1].threadblocks = {recv};
  const Topology topo = ring_topology(2, 3.0, 100.0);
  SimOptions o;
  o.memory_bandwidth_gbps = 0.0;
  o.num_slices = 4;
  const SimResult r = simulate(p, topo, 1 << 20, o);
  // 4 slices of 256 KiB each: sends back to back once each copy (free) is done.
  EXPECT_NEAR(r.time_us, 4 * (3.0 + 25.0), 1e-9);
  EXPECT_EQ(r.events, 12);
  ASSERT_FALSE(r.critical_path.empty());
  EXPECT_NE(r.critical_path.back().find("rank 1 tb 0 step 0 (r) slice 3"), std::string::npos)
      << r.critical_path.back();
}

TEST(Simulate, ManyThreadblocksWaitForOneStep) {
  // Rank 0's tb 0 receives a chunk from rank 1; 20 threadblocks of rank 0 (more than one
  // WaiterChunk holds) each wait for that receive and then send the chunk to a rank of their
  // own, all through rank 0's one switch egress port. Two slices: the waiters of the first
  // slice's receive wait again for the second's.
  const int fanout = 20;
  const int n = fanout + 2;
  Program p = custom_program("fanout", n, 1);
  Threadblock recv;
  recv.recv_peer = 1;
  recv.steps.push_back(testing::make_step(StepType::kRecv, Buffer::kInput, 0, Buffer::kOutput, 0));
  recv.steps.back().has_dep = true;
  p.gpus[0].threadblocks.push_back(recv);
  for (int i = 0; i < fanout; ++i) {
    Threadblock send;
    send.id = i + 1;
    send.send_peer = i + 2;
    send.steps.push_back(
        testing::make_step(StepType::kSend, Buffer::kOutput, 0, Buffer::kOutput, 0));
    send.steps.back().dep_tb = 0;
    send.steps.back().dep_step = 0;
    p.gpus[0].threadblocks.push_back(send);
    Threadblock sink;
    sink.recv_peer = 0;
    sink.steps.push_back(
        testing::make_step(StepType::kRecv, Buffer::kInput, 0, Buffer::kOutput, 0));
    p.gpus[i + 2].threadblocks = {sink};
  }
  Threadblock source;
  source.send_peer = 0;
  source.steps.push_back(testing::make_step(StepType::kSend, Buffer::kInput, 0, Buffer::kInput, 0));
  p.gpus[1].threadblocks = {source};
  const Topology topo = testing::switch_topology(n, 2.0, 10.0);
  SimOptions o;
  o.memory_bandwidth_gbps = 0.0;
  o.num_slices = 1;
  const int64_t bytes = 1 << 20;  // one MiB, the "MB" of beta: 10 us through a port
  const SimResult one = simulate(p, topo, bytes, o);
  // 1 -> 0 alone (2 + 10 us), then the 20 sends at once through one egress port (2 + 20 x 10).
  EXPECT_NEAR(one.time_us, (2.0 + 10.0) + (2.0 + fanout * 10.0), 1e-9);
  EXPECT_EQ(one.events, 2 * (fanout + 1));
  o.num_slices = 2;
  const SimResult two = simulate(p, topo, bytes, o);
  // Half a MB a slice: 1 -> 0 (2 + 5), the 20 sends of slice 0 (2 + 20 x 5), then those of
  // slice 1, whose receive landed long before.
  EXPECT_NEAR(two.time_us, (2.0 + 5.0) + 2 * (2.0 + fanout * 5.0), 1e-9);
  EXPECT_EQ(two.events, 4 * (fanout + 1));
}

TEST(Simulate, LinkUsageAndUtilization) {
  const int n = 4;
  const Topology topo = ring_topology(n, 0.0, 10.0, /*bidirectional=*/false);
  const SimResult r = simulate(ring_allgather(n), topo, 1 << 20, synchronous());
  ASSERT_EQ(r.links.size(), 4u);
  for (const LinkUsage& u : r.links) {
    EXPECT_NEAR(u.busy_us, 30.0, 1e-9);  // 3 sends of 1 MiB at 10 us/MiB
    EXPECT_NEAR(u.utilization, 1.0, 1e-9);
  }
}

TEST(Simulate, SwitchIngressPortIsSharedBySenders) {
  // Three ranks send 1 MiB each to rank 0 through a switch (alpha 1 us, 10 us/MiB): they pay
  // alpha at once, then share rank 0's ingress port, so 1 + 3 x 10 us; with port_lanes = 1
  // (a port that carries one transfer at a time, the model before shared ports) 3 x 11 us.
  Program p;
  p.name = "gather";
  p.collective = CollectiveKind::kCustom;
  p.num_ranks = 4;
  for (int r = 0; r < 4; ++r) {
    GpuProgram g;
    g.rank = r;
    g.input_chunks = 1;
    g.output_chunks = 4;
    if (r > 0) {
      Threadblock tb;
      tb.send_peer = 0;
      tb.steps.push_back(
          testing::make_step(StepType::kSend, Buffer::kInput, 0, Buffer::kOutput, r));
      g.threadblocks.push_back(tb);
    } else {
      for (int q = 1; q < 4; ++q) {
        Threadblock tb;
        tb.id = q - 1;
        tb.recv_peer = q;
        tb.steps.push_back(
            testing::make_step(StepType::kRecv, Buffer::kInput, 0, Buffer::kOutput, q));
        g.threadblocks.push_back(tb);
      }
    }
    p.gpus.push_back(g);
  }
  Topology serial = testing::switch_topology(4, 1.0, 10.0);
  serial.switches[0].port_lanes = 1;
  EXPECT_NEAR(simulate(p, serial, 1 << 20, synchronous()).time_us, 3 * 11.0, 1e-9);
  const SimResult r = simulate(p, testing::switch_topology(4, 1.0, 10.0), 1 << 20, synchronous());
  EXPECT_NEAR(r.time_us, 1.0 + 3 * 10.0, 1e-9);
  // Rank 0's ingress port reported as {-1, 0} is busy the whole time.
  bool found = false;
  for (const LinkUsage& u : r.links) {
    if (u.src == -1 && u.dst == 0) {
      found = true;
      EXPECT_NEAR(u.utilization, 1.0, 1e-9);
    }
  }
  EXPECT_TRUE(found);
}

// Rank src sends its input to rank dst's output slot src, for every (src, dst) pair at once.
Program point_to_point(int n, const std::vector<std::pair<int, int>>& pairs) {
  Program p;
  p.name = "pairs";
  p.collective = CollectiveKind::kCustom;
  p.num_ranks = n;
  for (int r = 0; r < n; ++r) {
    GpuProgram g;
    g.rank = r;
    g.input_chunks = 1;
    g.output_chunks = n;
    for (auto [src, dst] : pairs) {
      Threadblock tb;
      tb.id = static_cast<int>(g.threadblocks.size());
      if (src == r) {
        tb.send_peer = dst;
        tb.steps.push_back(
            testing::make_step(StepType::kSend, Buffer::kInput, 0, Buffer::kOutput, src));
      } else if (dst == r) {
        tb.recv_peer = src;
        tb.steps.push_back(
            testing::make_step(StepType::kRecv, Buffer::kInput, 0, Buffer::kOutput, src));
      } else {
        continue;
      }
      g.threadblocks.push_back(tb);
    }
    p.gpus.push_back(g);
  }
  return p;
}

TEST(Simulate, SharedSwitchPortSharesOneBandwidthPerDirection) {
  // Ports {0, 1} and {2, 3} (a NIC per pair): 1 MiB at 1 + 10 us per transfer alone; two
  // transfers through one port direction pay alpha at once and share the bandwidth: 1 + 20 us.
  const Topology shared = testing::shared_switch_topology(4, 2, 1.0, 10.0);
  const Topology own = testing::switch_topology(4, 1.0, 10.0);
  const int64_t mib = 1 << 20;
  // One rank alone gets the whole port.
  EXPECT_NEAR(simulate(point_to_point(4, {{0, 2}}), shared, mib, synchronous()).time_us, 11.0,
              1e-9);
  // Two ranks sharing the egress (and here also the ingress) move their bytes at half speed ...
  EXPECT_NEAR(simulate(point_to_point(4, {{0, 2}, {1, 3}}), shared, mib, synchronous()).time_us,
              21.0, 1e-9);
  // ... while with a port each they run concurrently.
  EXPECT_NEAR(simulate(point_to_point(4, {{0, 2}, {1, 3}}), own, mib, synchronous()).time_us, 11.0,
              1e-9);
  // Only the ingress shared: 0 and 2 have their own egress ports but 4 and 5 share one.
  const Topology ingress = testing::shared_switch_topology(6, 2, 1.0, 10.0);
  EXPECT_NEAR(simulate(point_to_point(6, {{0, 4}, {2, 5}}), ingress, mib, synchronous()).time_us,
              21.0, 1e-9);
  EXPECT_NEAR(simulate(point_to_point(6, {{0, 4}, {2, 3}}), ingress, mib, synchronous()).time_us,
              11.0, 1e-9);
  // Egress and ingress of one port are independent: 0 -> 2 and 3 -> 1 at once.
  EXPECT_NEAR(simulate(point_to_point(4, {{0, 2}, {3, 1}}), shared, mib, synchronous()).time_us,
              11.0, 1e-9);
}

TEST(Simulate, SharedPortUsageIsReportedOnce) {
  const Topology shared = testing::shared_switch_topology(4, 2, 1.0, 10.0);
  const SimResult r = simulate(point_to_point(4, {{0, 2}, {1, 3}}), shared, 1 << 20, synchronous());
  std::vector<std::pair<int, int>> ports;
  for (const LinkUsage& u : r.links) {
    ports.push_back({u.src, u.dst});
    if (u.src == 0 && u.dst == -1) {
      EXPECT_NEAR(u.busy_us, 21.0, 1e-9);  // both sends, sharing the port
    }
    if (u.src == -1 && u.dst == 2) {
      EXPECT_NEAR(u.utilization, 1.0, 1e-9);
    }
  }
  EXPECT_EQ(ports, (std::vector<std::pair<int, int>>{{0, -1}, {-1, 0}, {2, -1}, {-1, 2}}));
}

TEST(Simulate, ConcurrentTransfersThroughOnePortShareItsBandwidth) {
  // Rank 0 sends b = 1 MiB to ranks 1 and 2 at once over a switch (alpha 1 us, 10 us/MiB):
  // alpha + 2 beta b = 21 us, not 2 (alpha + beta b) = 22 us.
  const Topology sw = testing::switch_topology(4, 1.0, 10.0);
  const int64_t mib = 1 << 20;
  EXPECT_NEAR(simulate(point_to_point(4, {{0, 1}, {0, 2}}), sw, mib, synchronous()).time_us, 21.0,
              1e-9);
  // A lone transfer gets the whole port: alpha + beta b.
  EXPECT_NEAR(simulate(point_to_point(4, {{0, 1}}), sw, mib, synchronous()).time_us, 11.0, 1e-9);
  // Three at once: 1 + 30 us; with port_lanes = 2 the third waits for a slot (the first two end
  // at 21 us) and then runs alone: 21 + 11 us.
  const Program three = point_to_point(4, {{0, 1}, {0, 2}, {0, 3}});
  EXPECT_NEAR(simulate(three, sw, mib, synchronous()).time_us, 31.0, 1e-9);
  Topology two_lanes = sw;
  two_lanes.switches[0].port_lanes = 2;
  EXPECT_NEAR(simulate(three, two_lanes, mib, synchronous()).time_us, 32.0, 1e-9);
}

TEST(Simulate, PortShareIsRecomputedWhenATransferEnds) {
  // 0 -> 1 moves 1 MiB, 0 -> 2 moves 2 MiB (cnt 2), both through rank 0's egress port at
  // 10 us/MiB after alpha = 1 us: they share until the first ends at 1 + 2 x 10 = 21 us (1 MiB
  // each), then the second moves its last MiB alone: 31 us = alpha + beta x 3 MiB.
  Program p = point_to_point(4, {{0, 1}, {0, 2}});
  for (Threadblock& tb : p.gpus[0].threadblocks) {
    if (tb.send_peer == 2) tb.steps[0].count = 2;
  }
  for (Threadblock& tb : p.gpus[2].threadblocks) tb.steps[0].count = 2;
  p.gpus[0].input_chunks = 2;  // the cnt-2 send reads i[0..2) (validate_structure checks it)
  p.gpus[2].output_chunks = 6;
  SimOptions options = synchronous();
  options.input_chunks = 1;  // a chunk stays 1 MiB
  const SimResult r = simulate(p, testing::switch_topology(4, 1.0, 10.0), 1 << 20, options);
  EXPECT_NEAR(r.time_us, 31.0, 1e-9);
}

TEST(Simulate, AFlowBottleneckedElsewhereKeepsItsRateUntilItsBottleneckEases) {
  // After alpha = 1 us, 0 -> 2 starts alone (10 us/MiB); 0 -> 3 (2 MiB, cnt 2) halves both at
  // rank 0's egress (20 us/MiB); then 1 -> 2 joins rank 2's ingress: 0 -> 2 is halved there too,
  // but its rate stays 20 us/MiB and is kept as it was. 0 -> 2 and 1 -> 2 end at 1 + 20 = 21 us;
  // 0 -> 3 has moved 1 MiB by then and moves the other alone: 31 us.
  Program p = point_to_point(4, {{0, 2}, {1, 2}, {0, 3}});
  for (Threadblock& tb : p.gpus[0].threadblocks) {
    if (tb.send_peer == 3) tb.steps[0].count = 2;
  }
  for (Threadblock& tb : p.gpus[3].threadblocks) tb.steps[0].count = 2;
  p.gpus[0].input_chunks = 2;
  SimOptions options = synchronous();
  options.input_chunks = 1;  // a chunk stays 1 MiB
  const SimResult r = simulate(p, testing::switch_topology(4, 1.0, 10.0), 1 << 20, options);
  EXPECT_NEAR(r.time_us, 31.0, 1e-9);
}

TEST(Simulate, ThreadblockLimitCapsEveryTransfer) {
  // Switch ports of 10 us/MiB; one threadblock reaches only 20 us/MiB (Topology::
  // threadblock_gbps). A lone 1 MiB send: alpha + 20 = 21 us instead of 11 us. Two sends from
  // rank 0 at once each get half the port (20 us/MiB), which the limit allows: still 21 us, where
  // one threadblock alone could not fill the port. Three share it at 30 us/MiB each: 31 us.
  Topology sw = testing::switch_topology(4, 1.0, 10.0);
  sw.threadblock_gbps = gbps_from_beta(20.0);
  const int64_t mib = 1 << 20;
  EXPECT_NEAR(simulate(point_to_point(4, {{0, 1}}), sw, mib, synchronous()).time_us, 21.0, 1e-9);
  EXPECT_NEAR(simulate(point_to_point(4, {{0, 1}, {0, 2}}), sw, mib, synchronous()).time_us, 21.0,
              1e-9);
  EXPECT_NEAR(simulate(point_to_point(4, {{0, 1}, {0, 2}, {0, 3}}), sw, mib, synchronous()).time_us,
              31.0, 1e-9);
  // On links (the closed form) too: alpha + max(beta, threadblock beta) b.
  Topology ring = ring_topology(4, 1.0, 10.0);
  ring.threadblock_gbps = gbps_from_beta(20.0);
  EXPECT_NEAR(simulate(point_to_point(4, {{0, 1}}), ring, mib, synchronous()).time_us, 21.0, 1e-9);
  // A limit above the link's bandwidth changes nothing.
  ring.threadblock_gbps = gbps_from_beta(5.0);
  EXPECT_NEAR(simulate(point_to_point(4, {{0, 1}}), ring, mib, synchronous()).time_us, 11.0, 1e-9);
}

TEST(Simulate, HostSwitchCarriesOnlySendsWithoutAnotherConnection) {
  // A line 0 - 1 - 2 of links (1 us, 10 us/MiB) and a host switch over all three (3 us,
  // 50 us/MiB). 0 -> 2 has no link: it takes the host switch (3 + 50 us) instead of relaying
  // over rank 1 (2 + 10 us without it); 0 -> 1 keeps its link (11 us).
  Topology t;
  t.name = "line-with-host";
  t.num_ranks = 3;
  for (auto [a, b] : {std::pair{0, 1}, std::pair{1, 2}}) {
    t.links.push_back(Link{a, b, 1, 1.0, 10.0, "nvlink"});
    t.links.push_back(Link{b, a, 1, 1.0, 10.0, "nvlink"});
  }
  const int64_t mib = 1 << 20;
  EXPECT_NEAR(simulate(point_to_point(3, {{0, 2}}), t, mib, synchronous()).time_us, 12.0, 1e-9);
  t.host_switches.push_back(Switch{"host", {0, 1, 2}, 3.0, 50.0, "pcie"});
  validate(t);
  EXPECT_NEAR(simulate(point_to_point(3, {{0, 2}}), t, mib, synchronous()).time_us, 53.0, 1e-9);
  EXPECT_NEAR(simulate(point_to_point(3, {{0, 1}}), t, mib, synchronous()).time_us, 11.0, 1e-9);
  // Synthesizers and the verifier see no connection 0 -> 2.
  EXPECT_FALSE(t.connection(0, 2).has_value());
  EXPECT_EQ(t.connections().size(), 4u);
}

TEST(Simulate, TransfersBetweenSocketsShareTheSocketLink) {
  // A line 0 - 1 - 2 - 3 of links and a host switch over the 4 ranks, one port each (1 us,
  // 10 us/MiB), ranks 0-1 on socket 0 and 2-3 on socket 1, joined by a socket link of 40 us/MiB
  // per direction. 0 -> 2 alone: 1 + 40 us. 0 -> 2 and 1 -> 3 together share socket 0's egress:
  // 1 + 80 us. 0 -> 2 and 3 -> 1 cross in opposite directions, each alone: 1 + 40 us.
  Topology t;
  t.name = "two-sockets";
  t.num_ranks = 4;
  for (auto [a, b] : {std::pair{0, 1}, std::pair{1, 2}, std::pair{2, 3}}) {
    t.links.push_back(Link{a, b, 1, 1.0, 10.0, "nvlink"});
    t.links.push_back(Link{b, a, 1, 1.0, 10.0, "nvlink"});
  }
  t.host_switches.push_back(Switch{"host", {0, 1, 2, 3}, 1.0, 10.0, "pcie"});
  t.host_switches[0].port_socket = {0, 0, 1, 1};
  t.host_switches[0].socket_beta_us_per_mb = 40.0;
  validate(t);
  const int64_t mib = 1 << 20;
  auto time_of = [&](const std::vector<std::pair<int, int>>& sends) {
    return simulate(point_to_point(4, sends), t, mib, synchronous()).time_us;
  };
  EXPECT_NEAR(time_of({{0, 2}}), 41.0, 1e-9);
  EXPECT_NEAR(time_of({{0, 2}, {1, 3}}), 81.0, 1e-9);
  EXPECT_NEAR(time_of({{0, 2}, {3, 1}}), 41.0, 1e-9);
  // One socket (no port_socket): the ports alone, 1 + 10 us each.
  t.host_switches[0].port_socket.clear();
  EXPECT_NEAR(time_of({{0, 2}, {1, 3}}), 11.0, 1e-9);
}

TEST(Simulate, LaunchOverheadIsAddedOnce) {
  const int n = 4;
  Topology topo = ring_topology(n, 1.0, 10.0, /*bidirectional=*/false);
  const double without = simulate(ring_allgather(n), topo, 1 << 20, synchronous()).time_us;
  EXPECT_NEAR(without, (n - 1) * (1.0 + 10.0), 1e-9);
  topo.launch_us = 5.0;
  EXPECT_NEAR(simulate(ring_allgather(n), topo, 1 << 20, synchronous()).time_us, without + 5.0,
              1e-9);
  Topology sw = testing::switch_topology(n, 1.0, 10.0);
  sw.launch_us = 5.0;
  EXPECT_NEAR(simulate(point_to_point(n, {{0, 1}}), sw, 1 << 20, synchronous()).time_us, 5.0 + 11.0,
              1e-9);
}

TEST(Simulate, MultiHopRouteIsCutThrough) {
  // 0 -> 1 -> 2 (no link 0 -> 2): the send holds both links for sum(alpha) + max(beta) * b.
  Topology t;
  t.name = "line";
  t.num_ranks = 3;
  t.links = {Link{0, 1, 1, 1.0, 10.0, "generic"}, Link{1, 2, 1, 2.0, 20.0, "generic"},
             Link{1, 0, 1, 1.0, 10.0, "generic"}, Link{2, 1, 1, 2.0, 20.0, "generic"}};
  Program p = custom_program("far", 3, 1);
  Threadblock send;
  send.send_peer = 2;
  send.steps.push_back(testing::make_step(StepType::kSend, Buffer::kInput, 0, Buffer::kOutput, 0));
  p.gpus[0].threadblocks.push_back(send);
  Threadblock recv;
  recv.recv_peer = 0;
  recv.steps.push_back(testing::make_step(StepType::kRecv, Buffer::kInput, 0, Buffer::kOutput, 0));
  p.gpus[2].threadblocks.push_back(recv);
  const SimResult r = simulate(p, t, 1 << 20, synchronous());
  EXPECT_NEAR(r.time_us, 3.0 + 20.0, 1e-9);
  EXPECT_NEAR(r.links[0].busy_us, 23.0, 1e-9);
  EXPECT_NEAR(r.links[1].busy_us, 23.0, 1e-9);
  EXPECT_NEAR(r.links[2].busy_us, 0.0, 1e-12);
}

TEST(Simulate, ProtocolFactorsAndSlices) {
  const Topology topo = ring_topology(4, 1.0, 10.0);
  Program p = ring_allgather(4);
  p.protocol = Protocol::kLL;
  SimOptions o;
  o.memory_bandwidth_gbps = 0.0;
  o.pipelining = false;
  const SimResult ll = simulate(p, topo, 1 << 20, o);
  EXPECT_NEAR(ll.time_us, 3 * (0.5 + 20.0), 1e-9);
  // The factors are the topology's (Topology::ll), e.g. a machine model's measured ones.
  Topology measured = topo;
  measured.ll = ProtocolCost{0.25, 3.0};
  EXPECT_NEAR(simulate(p, measured, 1 << 20, o).time_us, 3 * (0.25 + 30.0), 1e-9);
  o.pipelining = true;
  EXPECT_EQ(simulate(p, topo, 1 << 20, o).slices, 32);  // 32 KiB LL slots
  p.protocol = Protocol::kLL128;
  EXPECT_EQ(simulate(p, topo, 1 << 20, o).slices, 2);
}

// Rank 0 sends its `chunks` input chunks to rank 1 in one step of that count.
Program one_step_of(int chunks) {
  Program p = custom_program("one_step", 2, chunks);
  Threadblock sender, receiver;
  sender.send_peer = 1;
  sender.steps.push_back(
      testing::make_step(StepType::kSend, Buffer::kInput, 0, Buffer::kOutput, 0, chunks));
  receiver.recv_peer = 0;
  receiver.steps.push_back(
      testing::make_step(StepType::kRecv, Buffer::kInput, 0, Buffer::kOutput, 0, chunks));
  p.gpus[0].threadblocks.push_back(sender);
  p.gpus[1].threadblocks.push_back(receiver);
  return p;
}

// MSCCL's interpreter runs a step of `cnt` chunks as calls of at most max(1, slot / chunk)
// chunks, each paying alpha (sim::chunks_per_call); the Simple slot is 512 KiB.
TEST(Simulate, AStepPaysAlphaOncePerRuntimeCall) {
  const double alpha = 1.0, beta = 10.0;  // us, us/MiB
  const Topology topo = ring_topology(2, alpha, beta);
  SimOptions o;
  o.memory_bandwidth_gbps = 0.0;
  o.critical_path = false;
  // 4 chunks of 1 MiB: 2 slices each; a slice of the step moves 4 x 512 KiB in 4 calls.
  EXPECT_NEAR(simulate(one_step_of(4), topo, 4 << 20, o).time_us, 2 * (4 * alpha + 2 * beta), 1e-9);
  // 4 chunks of 64 KiB: 8 fit a slot, one call.
  EXPECT_NEAR(simulate(one_step_of(4), topo, 256 << 10, o).time_us, alpha + 0.25 * beta, 1e-9);
  // 5 chunks of 128 KiB: 4 fit a slot, two calls.
  EXPECT_NEAR(simulate(one_step_of(5), topo, 640 << 10, o).time_us, 2 * alpha + 0.625 * beta, 1e-9);
  EXPECT_EQ(chunks_per_call(o, o.simple, 128 << 10), 4);
  EXPECT_EQ(chunks_per_call(o, o.simple, 3 << 20), 1);
  // SCCL's synchronous model and fixed slices: one call per step.
  o.pipelining = false;
  EXPECT_NEAR(simulate(one_step_of(4), topo, 4 << 20, o).time_us, alpha + 4 * beta, 1e-9);
  o.pipelining = true;
  o.num_slices = 1;
  EXPECT_NEAR(simulate(one_step_of(4), topo, 4 << 20, o).time_us, alpha + 4 * beta, 1e-9);
  // Through a switch the calls' alphas come before the bytes as well.
  o.num_slices = 0;
  const Topology sw = testing::switch_topology(2, alpha, beta);
  EXPECT_NEAR(simulate(one_step_of(4), sw, 4 << 20, o).time_us, 2 * (4 * alpha + 2 * beta), 1e-9);
}

TEST(Simulate, DeadlockIsReported) {
  Program p = ring_allgather(4);
  // Rank 2 never sends: everyone downstream waits forever.
  p.gpus[2].threadblocks[0].steps.pop_back();
  p.gpus[2].threadblocks[0].steps.erase(p.gpus[2].threadblocks[0].steps.begin());
  try {
    simulate(p, ring_topology(4, 1.0, 1.0), 1024);
    FAIL() << "expected a deadlock";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("deadlock"), std::string::npos) << e.what();
  }
}

TEST(Simulate, RejectsMismatchedTopologyAndUnmatchedPeers) {
  EXPECT_THROW(simulate(ring_allgather(4), ring_topology(5, 1.0, 1.0), 1024), UserError);
  Program p = ring_allgather(4);
  p.gpus[1].threadblocks[0].recv_peer = -1;
  EXPECT_THROW(simulate(p, ring_topology(4, 1.0, 1.0), 1024), UserError);
}

TEST(Simulate, BusFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kAllReduce, 8), 14.0 / 8.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kAllGather, 8), 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kAllToAll, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(nccl_size_bytes(CollectiveKind::kAllGather, 8, 100), 800.0);
  EXPECT_DOUBLE_EQ(nccl_size_bytes(CollectiveKind::kReduceScatter, 8, 800), 800.0);
}

}  // namespace
}  // namespace ccsynth::sim
