#pragma once
// The physical machine: ranks (GPUs/NPUs) grouped into nodes, directed point-to-point links with
// an alpha-beta cost and a number of parallel lanes, switches as hyperedges whose per-rank ports
// share their bandwidth among the transfers using them (NVSwitch, an IB fabric), a per-call launch
// overhead and per-protocol cost factors. See docs/formats.md for the serialized form,
// docs/topologies.md for built-ins and docs/simulator.md for the cost model.

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "ccsynth/core/graph.h"  // bfs_hop_distances, which SCCL's bandwidth model uses too

namespace ccsynth {

/// A directed link src -> dst. `lanes` parallel physical links each carry one transfer at a
/// time; alpha and beta are per transfer on one lane.
struct Link {
  int src = 0;
  int dst = 0;
  int lanes = 1;
  double alpha_us = 0.0;
  double beta_us_per_mb = 0.0;
  std::string kind = "generic";  // nvlink, pcie, ib, generic, ...

  bool operator==(const Link&) const = default;
};

/// A switch connecting every rank in `ranks` to every other. Each port has one ingress and one
/// egress direction of bandwidth 1 / `port_beta_us_per_mb`, shared by the transfers using it:
/// up to `port_lanes` transfers (0: any number) run through a direction at once, each paying its
/// alpha concurrently and then moving its bytes at an equal share of the bandwidth
/// (docs/simulator.md); port_lanes = 1 is a port that carries one transfer at a time. By default
/// every member rank has its own port. `port_group` models a port shared by several ranks (a
/// NIC on the PCIe switch of g GPUs): when non-empty, port_group[i] is the port id of ranks[i];
/// ids are 0..P-1, each used at least once, and members with the same id share ONE ingress and
/// ONE egress direction of `port_beta_us_per_mb` (its bandwidth shared by all of them together,
/// so one member alone gets the whole port bandwidth). A lone transfer through a switch costs
/// alpha_us + port_beta_us_per_mb * size.
struct Switch {
  std::string name;
  std::vector<int> ranks;
  double alpha_us = 0.0;
  double port_beta_us_per_mb = 0.0;
  std::string kind = "switch";       // nvswitch, ib, ...
  std::vector<int> port_group = {};  // empty: one port per member; else port id per member
  int port_lanes = 0;                // concurrent transfers per port direction; 0 = unlimited
  // CPU sockets behind the ports (host switches): empty = one socket; else the socket of each
  // port id (0..S-1). A transfer between ports of different sockets also crosses the socket
  // interconnect, whose egress and ingress direction per socket have this cost (QPI / UPI).
  std::vector<int> port_socket = {};
  double socket_beta_us_per_mb = 0.0;

  bool operator==(const Switch&) const = default;

  /// Number of ports: ranks.size() without port_group, else the number of distinct ids.
  int num_ports() const;
  /// Port id of ranks[member] (member itself without port_group).
  int port_of_member(size_t member) const;
  /// Port id of `rank`, or -1 when the rank is not on this switch.
  int port_of_rank(int rank) const;
  /// The member ranks of every port, port_members()[p] ascending in member order.
  std::vector<std::vector<int>> port_members() const;
  /// Whether some port is shared by two or more ranks.
  bool has_shared_ports() const;
  /// Number of sockets: 1 without port_socket, else the number of distinct ids.
  int num_sockets() const;
  /// Socket of `port` (0 without port_socket).
  int socket_of_port(int port) const;
};

/// One way to move data from src to dst in a single hop: a direct link or a switch.
/// When both exist, Topology::connections() keeps the cheaper per-MiB one.
struct Connection {
  int src = 0;
  int dst = 0;
  double alpha_us = 0.0;
  double beta_us_per_mb = 0.0;
  int lanes = 1;
  int link_index = -1;    // index into Topology::links, or -1
  int switch_index = -1;  // index into Topology::switches, or -1

  /// alpha + beta * bytes on one lane (TACCL's alpha-beta cost, sec. 4).
  double cost_us(double bytes) const;
};

/// How one NCCL protocol scales every alpha and beta of the topology (docs/simulator.md,
/// "Protocols"): LL's 16-byte lines carry 8 data bytes (beta x 2) but need no fence (alpha x 0.5).
struct ProtocolCost {
  double alpha_factor = 1.0;
  double beta_factor = 1.0;

  bool operator==(const ProtocolCost&) const = default;
};

/// A topology. Plain value type: build it field by field, then call validate().
struct Topology {
  std::string name;
  int num_ranks = 0;
  std::vector<std::vector<int>> nodes;  // partition of 0..num_ranks-1
  std::vector<Link> links;
  std::vector<Switch> switches;
  /// Fixed cost of one collective call (kernel launch and setup), added once to every simulated
  /// collective and to its lower bound. 0 for the abstract shapes (ring:N, mesh2d, ...).
  double launch_us = 0.0;
  /// Bandwidth of a GPU's local copies and reductions in GB/s (HBM-class by default: V100
  /// 900, A100 1555-2039 GB/s); 0 makes them free, as on the abstract shapes, which model
  /// TACOS's ASTRA-sim network where local reductions cost nothing (docs/simulator.md).
  double memory_gbps = 1000.0;
  /// How a link carries concurrent transfers. false: each of its lanes carries one transfer at
  /// a time and others queue (NCCL channels on NVLink lanes). true: every transfer on the link
  /// moves at once and they split its bandwidth (all lanes together) equally, like a switch
  /// port; the abstract shapes use it, as TACOS's congestion-aware ASTRA-sim network does, so
  /// routed multi-hop sends share every hop with the traffic already there (docs/simulator.md).
  bool shared_links = false;
  /// Most bandwidth one transfer (one threadblock's send: an NCCL channel, an MSCCL
  /// threadblock) reaches in GB/s, whatever its links give; 0 = no limit. One threadblock
  /// cannot saturate an NVLink or a NIC (TACCL sec. 6.2 "Instances", MSCCLang sec. 7.1.1), so
  /// the runtimes spread work over channels and instances (docs/simulator.md).
  double threadblock_gbps = 0.0;
  /// Switches that only the simulator's routes use, for sends between ranks with no link or
  /// switch between them (NCCL's point-to-point over PCIe and the CPU interconnect between GPUs
  /// with no NVLink). connection(), connections() and every synthesizer ignore them, so they
  /// never change what is synthesized; the lower bound counts them (docs/simulator.md).
  std::vector<Switch> host_switches;
  /// Per-protocol factors on every alpha and beta (Simple, LL128, LL).
  ProtocolCost simple{1.0, 1.0};
  ProtocolCost ll128{1.0, 128.0 / 120.0};
  ProtocolCost ll{0.5, 2.0};

  bool operator==(const Topology&) const = default;

  /// Index of the node holding `rank` (0 when nodes is empty).
  int node_of(int rank) const;
  /// The direct link src -> dst, or nullptr.
  const Link* find_link(int src, int dst) const;
  /// The cheapest single-hop connection src -> dst (link or switch), if any.
  std::optional<Connection> connection(int src, int dst) const;
  /// Every directed single-hop connection, one per (src, dst) pair, sorted by (src, dst).
  std::vector<Connection> connections() const;
  /// out_neighbors()[r]: ranks reachable from r in one hop, ascending.
  std::vector<std::vector<int>> out_neighbors() const;
  /// Hop counts from `src` to every rank (BFS over connections); -1 where unreachable.
  std::vector<int> hop_distances_from(int src) const;
  /// Largest hop distance between any two ranks; -1 if some rank is unreachable.
  int diameter() const;
};

/// The most ranks a topology may have, built-in or from a file: keeps a typo from allocating
/// gigabytes.
inline constexpr int kMaxTopologyRanks = 1 << 22;

/// Checks a topology and throws UserError naming `file` (may be empty), the field and the
/// reason: rank count, node partition, unknown ranks, self links, non-positive lanes or
/// bandwidth, negative latency, duplicate links, switches with fewer than two or repeated ranks,
/// switch port groups of the wrong size or with ids that are not 0..P-1, negative port_lanes,
/// negative launch_us, memory_gbps or threadblock_gbps, host switches as for switches,
/// non-positive protocol factors, unreachable ranks.
void validate(const Topology& topology, const std::string& file = "");

/// Human-readable multi-line summary (for debugging and test failure messages).
std::ostream& operator<<(std::ostream& os, const Topology& topology);

}  // namespace ccsynth
