#pragma once
// Hand-built topologies and programs for the simulator tests and benchmarks: they do not depend
// on the topology library or the compiler, so the simulator is tested on its own.

#include <string>

#include "../verify/test_programs.h"
#include "ccsynth/core/program.h"
#include "ccsynth/core/topology.h"

namespace ccsynth::sim::testing {

/// n ranks in a ring; bidirectional adds the reverse links.
inline Topology ring_topology(int n, double alpha_us, double beta_us_per_mb,
                              bool bidirectional = true, int lanes = 1) {
  Topology t;
  t.name = "test-ring:" + std::to_string(n);
  t.num_ranks = n;
  for (int r = 0; r < n; ++r) {
    t.links.push_back(Link{r, (r + 1) % n, lanes, alpha_us, beta_us_per_mb, "generic"});
    if (bidirectional && n > 2) {
      t.links.push_back(Link{(r + 1) % n, r, lanes, alpha_us, beta_us_per_mb, "generic"});
    }
  }
  return t;
}

/// n ranks on one switch.
inline Topology switch_topology(int n, double alpha_us, double port_beta_us_per_mb) {
  Topology t;
  t.name = "test-switch:" + std::to_string(n);
  t.num_ranks = n;
  Switch sw;
  sw.name = "sw";
  for (int r = 0; r < n; ++r) sw.ranks.push_back(r);
  sw.alpha_us = alpha_us;
  sw.port_beta_us_per_mb = port_beta_us_per_mb;
  t.switches.push_back(sw);
  return t;
}

/// n ranks on one switch whose ports are shared by `per_port` consecutive ranks
/// (Switch::port_group = r / per_port), like GPUs sharing a NIC.
inline Topology shared_switch_topology(int n, int per_port, double alpha_us,
                                       double port_beta_us_per_mb) {
  Topology t = switch_topology(n, alpha_us, port_beta_us_per_mb);
  t.name = "test-shared-switch:" + std::to_string(n);
  for (int r = 0; r < n; ++r) t.switches[0].port_group.push_back(r / per_port);
  return t;
}

/// Nodes of two ranks joined by a bidirectional link, every node's pair sharing one port of a
/// switch over all ranks (a NIC shared by two GPUs with an NVLink between them).
inline Topology two_per_nic_topology(int nodes, double alpha_us, double link_beta_us_per_mb,
                                     double nic_beta_us_per_mb) {
  Topology t = shared_switch_topology(2 * nodes, 2, alpha_us, nic_beta_us_per_mb);
  t.name = "test-two-per-nic:" + std::to_string(nodes);
  for (int n = 0; n < nodes; ++n) {
    t.nodes.push_back({2 * n, 2 * n + 1});
    t.links.push_back(Link{2 * n, 2 * n + 1, 1, alpha_us, link_beta_us_per_mb, "nvlink"});
    t.links.push_back(Link{2 * n + 1, 2 * n, 1, alpha_us, link_beta_us_per_mb, "nvlink"});
  }
  return t;
}

using ccsynth::testing::make_step;
using ccsynth::testing::mod;

/// Ring allgather (out of place, one input chunk per rank split into `instances` chunks that
/// go round the ring on `instances` channels in parallel). Rank r sends to r+1.
inline Program ring_allgather(int n, int instances = 1) {
  Program p;
  p.name = "ring_allgather";
  p.collective = CollectiveKind::kAllGather;
  p.num_ranks = n;
  p.num_channels = instances;
  p.chunks_per_loop = n * instances;
  for (int r = 0; r < n; ++r) {
    GpuProgram gpu;
    gpu.rank = r;
    gpu.input_chunks = instances;
    gpu.output_chunks = n * instances;
    for (int i = 0; i < instances; ++i) {
      Threadblock tb;
      tb.id = i;
      tb.send_peer = mod(r + 1, n);
      tb.recv_peer = mod(r - 1, n);
      tb.channel = i;
      tb.steps.push_back(
          make_step(StepType::kSend, Buffer::kInput, i, Buffer::kOutput, r * instances + i));
      for (int k = 1; k < n; ++k) {
        const int from = mod(r - k, n);
        tb.steps.push_back(make_step(k + 1 < n ? StepType::kRecvCopySend : StepType::kRecv,
                                     Buffer::kOutput, from * instances + i, Buffer::kOutput,
                                     from * instances + i));
      }
      gpu.threadblocks.push_back(tb);
    }
    // The local copy of the own input, on a separate threadblock.
    Threadblock local;
    local.id = instances;
    local.steps.push_back(
        make_step(StepType::kCopy, Buffer::kInput, 0, Buffer::kOutput, r * instances, instances));
    gpu.threadblocks.push_back(local);
    p.gpus.push_back(gpu);
  }
  return p;
}

/// Direct allgather: rank r has one threadblock per peer p, sending its input to p and
/// receiving p's input (all at once; on a ring the sends are routed over several hops).
inline Program direct_allgather(int n) {
  Program p;
  p.name = "direct_allgather";
  p.collective = CollectiveKind::kAllGather;
  p.num_ranks = n;
  p.chunks_per_loop = n;
  for (int r = 0; r < n; ++r) {
    GpuProgram gpu;
    gpu.rank = r;
    gpu.input_chunks = 1;
    gpu.output_chunks = n;
    for (int k = 1; k < n; ++k) {
      const int peer = mod(r + k, n);
      Threadblock tb;
      tb.id = k - 1;
      tb.send_peer = peer;
      tb.recv_peer = mod(r - k, n);
      tb.steps.push_back(make_step(StepType::kSend, Buffer::kInput, 0, Buffer::kOutput, r));
      tb.steps.push_back(
          make_step(StepType::kRecv, Buffer::kOutput, tb.recv_peer, Buffer::kOutput, tb.recv_peer));
      gpu.threadblocks.push_back(tb);
    }
    p.gpus.push_back(gpu);
  }
  return p;
}

/// Ring allreduce (in place, n chunks per rank): reduce-scatter then allgather round the ring,
/// 2(n-1) sends per rank in 2n-1 steps of one threadblock.
inline Program ring_allreduce(int n) {
  Program p;
  p.name = "ring_allreduce";
  p.collective = CollectiveKind::kAllReduce;
  p.num_ranks = n;
  p.inplace = true;
  p.outofplace = false;
  p.chunks_per_loop = n;
  for (int r = 0; r < n; ++r) {
    GpuProgram gpu;
    gpu.rank = r;
    gpu.input_chunks = n;
    Threadblock tb;
    tb.send_peer = mod(r + 1, n);
    tb.recv_peer = mod(r - 1, n);
    const Buffer in = Buffer::kInput;
    tb.steps.push_back(make_step(StepType::kSend, in, mod(r - 1, n), in, mod(r - 1, n)));
    for (int k = 1; k + 1 < n; ++k) {
      const int c = mod(r - 1 - k, n);
      tb.steps.push_back(make_step(StepType::kRecvReduceSend, in, c, in, c));
    }
    tb.steps.push_back(make_step(StepType::kRecvReduceCopySend, in, r, in, r));
    for (int k = 1; k + 1 < n; ++k) {
      const int c = mod(r - k, n);
      tb.steps.push_back(make_step(StepType::kRecvCopySend, in, c, in, c));
    }
    tb.steps.push_back(make_step(StepType::kRecv, in, mod(r + 1, n), in, mod(r + 1, n)));
    gpu.threadblocks.push_back(tb);
    p.gpus.push_back(gpu);
  }
  return p;
}

}  // namespace ccsynth::sim::testing
