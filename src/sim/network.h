#pragma once
// Internal to sim: the topology as lane groups and routes between ranks. Link i is a group of
// `lanes` lanes that each carry one transfer at a time at the link's bandwidth, or, on a
// topology with shared_links, one group that every transfer on it holds at once, splitting
// the bandwidth of all its lanes equally (like a switch port with port_lanes 0). Every switch
// port has an egress and an ingress group whose bandwidth is shared: up to Switch::port_lanes
// transfers (any number for 0) hold it at once, and those moving bytes split its bandwidth
// equally (docs/simulator.md). A send between ranks without a direct connection follows a
// shortest path (in hops) and holds every hop for the whole transfer, so a direct algorithm on a
// ring shows its congestion (TACOS fig. 1-2). Topology::host_switches are switches like the
// others, used only when no link or fabric switch connects the pair; a transfer between ports
// on different CPU sockets (Switch::port_socket) also holds the socket interconnect's egress
// group of its source socket and ingress group of its destination socket, shared like ports.
// Topology::threadblock_gbps caps the rate of every transfer.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "ccsynth/core/topology.h"
#include "ccsynth/sim/simulate.h"

namespace ccsynth::sim {

/// A route: the lane groups it holds, summed alpha and the largest beta (the bottleneck of a
/// cut-through transfer when it has every hop to itself). The groups on it whose bandwidth is
/// shared (switch ports) are Network::shared_groups.
struct Route {
  std::vector<int> groups;
  double alpha_us = 0.0;
  double beta_us_per_byte = 0.0;
};

/// Groups, routes, how many transfers hold each group and who waits for one. A transfer starts
/// only when every group on its route has room (a free lane of a link, a free slot of a port
/// with port_lanes > 0); otherwise it queues (first come, first served) at the first group that
/// has none, and is retried when that group is released.
class Network {
 public:
  explicit Network(const Topology& topology);

  /// Index of the route src -> dst in routes(); computed once per pair. Throws UserError when
  /// dst is unreachable.
  int route(int src, int dst);
  const std::vector<Route>& routes() const { return routes_; }

  /// Takes room in every group on `route` at time `now`; returns false (taking nothing) when
  /// some group is full, with that group in `blocked_group`.
  bool acquire(int route, double now, int* blocked_group);
  /// Frees the groups of `route`, which a transfer that took `transfer_us` held, at time `now`
  /// and appends them to `freed_groups`.
  void release(int route, double transfer_us, double now, std::vector<int>* freed_groups);
  /// Queues threadblock `tb` at `group`.
  void enqueue(int group, int tb) { queues_[group].push_back(tb); }
  /// Next threadblock waiting at `group` while the group has room, or -1.
  int pop_waiter(int group);

  /// The groups of `route` whose bandwidth is shared, in route order, from flat arrays: read at
  /// every start and end of a flow, when the route's own vector is long out of cache (thousands
  /// of ranks).
  std::span<const int> shared_groups(int route) const {
    return {route_shared_.data() + route_shared_begin_[route],
            static_cast<size_t>(route_shared_begin_[route + 1] - route_shared_begin_[route])};
  }
  /// Transfers moving bytes through shared group `group` (the simulator's flow ids).
  const std::vector<int>& flows(int group) const { return flows_[group]; }
  /// Flow `flow` (a transfer on `route`) starts / stops moving bytes through the route's shared
  /// groups.
  void join(int route, int flow);
  void leave(int route, int flow);
  /// Microseconds per byte of a transfer on `route` given the flows now in its shared groups:
  /// the largest over its hops of beta x (flows sharing the hop, at least 1), and at least the
  /// threadblock's own limit (Topology::threadblock_gbps). Read for every flow a join or leave
  /// re-times, so it reads two flat arrays: the route's fixed part (its links and the limit)
  /// and each shared group's current beta x flows.
  double us_per_byte(int route) const {
    double out = route_fixed_us_per_byte_[route];
    for (int i = route_shared_begin_[route]; i < route_shared_begin_[route + 1]; ++i) {
      out = std::max(out, shared_us_per_byte_[route_shared_[i]]);
    }
    return out;
  }

  /// Busy time and utilization over `time_us` of every link, then every switch port.
  std::vector<LinkUsage> usage(double time_us) const;
  /// Per group, its index in usage() (every link and port group is reported once; socket
  /// interconnect groups are not reported: -1).
  std::vector<int> usage_index() const;

 private:
  int add_group(int capacity, int lanes, double beta_us_per_byte, bool shared);
  /// The socket interconnect groups of switch `s` (Switch::port_socket), none for one socket.
  void add_socket_groups(size_t s);
  /// Calls visit(src, dst, group) for every group in usage() order.
  template <typename Visit>
  void for_each_reported_group(Visit&& visit) const;
  std::vector<int> hops_of(const Connection& connection) const;
  /// The single-hop connection src -> dst with Topology::connection's choice (the cheaper per
  /// byte of the link and the switches), without scanning every link.
  std::optional<Connection> direct(int src, int dst) const;
  /// Shortest path in hops (BFS over links and switches); empty when unreachable.
  std::vector<Connection> shortest_path(int src, int dst) const;

  const Topology& topology_;
  // topology.switches, then topology.host_switches (indices from num_fabric_switches_ on).
  std::vector<Switch> switches_;
  size_t num_fabric_switches_ = 0;
  double threadblock_us_per_byte_ = 0.0;       // 0: no per-transfer limit
  std::vector<std::vector<int>> links_from_;   // link indices per src
  std::vector<std::vector<int>> switches_of_;  // switch indices per rank
  std::vector<int> group_capacity_;            // transfers that may hold the group at once
  std::vector<int> group_active_;              // transfers holding it
  std::vector<int> group_lanes_;               // for utilization: link lanes, 1 for a port
  std::vector<double> group_beta_;             // us per byte of one lane / the whole port
  std::vector<char> group_shared_;
  std::vector<double> group_busy_;   // links: summed transfer time; ports: time held
  std::vector<double> group_since_;  // ports: when the group became held
  std::vector<std::vector<int>> flows_;
  std::vector<double> shared_us_per_byte_;  // per group: beta x max(1, flows), shared ones only
  // Per route: max(threadblock limit, beta of its unshared groups), and its shared groups
  // (route_shared_[route_shared_begin_[r] .. route_shared_begin_[r + 1]]).
  std::vector<double> route_fixed_us_per_byte_;
  std::vector<int> route_shared_begin_{0};
  std::vector<int> route_shared_;
  // FIFO of waiting threadblocks per group: entries from queue_head_ on are live.
  std::vector<std::vector<int>> queues_;
  std::vector<size_t> queue_head_;
  std::vector<std::vector<int>> switch_egress_group_;   // [switch][rank] -> group, ingress = +1
  std::vector<std::vector<int>> switch_socket_egress_;  // [switch][socket] -> group, ingress +1
  std::vector<std::vector<int>> switch_rank_socket_;    // [switch][rank] -> socket
  std::vector<Route> routes_;
  std::map<std::pair<int, int>, int> route_index_;  // setup only, never in the event loop
};

}  // namespace ccsynth::sim
