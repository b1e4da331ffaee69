#pragma once
// Internal to sim: the topology as lanes that each carry one transfer at a time, and routes
// between ranks. Link i owns `lanes` lanes; every switch gives each of its ranks one egress and
// one ingress port (one lane each). A send between ranks without a direct connection follows a
// shortest path (in hops) and holds one lane of every hop for the whole transfer, so a direct
// algorithm on a ring shows its congestion (TACOS fig. 1-2).

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "ccsynth/core/topology.h"
#include "ccsynth/sim/simulate.h"

namespace ccsynth::sim {

/// A route: the lane groups it holds, summed alpha and the largest beta (the bottleneck of a
/// cut-through transfer).
struct Route {
  std::vector<int> groups;
  double alpha_us = 0.0;
  double beta_us_per_byte = 0.0;
};

/// Lanes, routes, who holds each lane and who waits for it. A transfer starts only when every
/// group on its route has a free lane; otherwise it queues (first come, first served) at the
/// first group that has none, and is retried when a lane of that group is released.
class Network {
 public:
  explicit Network(const Topology& topology);

  /// Index of the route src -> dst in routes(); computed once per pair. Throws UserError when
  /// dst is unreachable.
  int route(int src, int dst);
  const std::vector<Route>& routes() const { return routes_; }

  /// Takes a free lane of every group on `route` for a transfer of `cost` us by step instance
  /// `instance` and appends the lanes to `held`; returns false (taking nothing) when some group
  /// has no free lane, with that group in `blocked_group`.
  bool acquire(int route, double cost, int64_t instance, std::vector<int>* held,
               int* blocked_group);
  /// Frees the lanes in `held` and clears it; the groups that got a free lane are appended to
  /// `freed_groups`.
  void release(std::vector<int>* held, std::vector<int>* freed_groups);
  /// Queues threadblock `tb` at `group`.
  void enqueue(int group, int tb) { queues_[group].push_back(tb); }
  /// Next threadblock waiting at `group` while the group has a free lane, or -1.
  int pop_waiter(int group);

  /// Busy time and utilization over `time_us` of every link, then every switch port.
  std::vector<LinkUsage> usage(double time_us) const;

 private:
  int add_group(int lanes);
  std::vector<int> hops_of(const Connection& connection) const;
  /// The single-hop connection src -> dst with Topology::connection's choice (the cheaper per
  /// byte of the link and the switches), without scanning every link.
  std::optional<Connection> direct(int src, int dst) const;
  /// Shortest path in hops (BFS over links and switches); empty when unreachable.
  std::vector<Connection> shortest_path(int src, int dst) const;

  const Topology& topology_;
  std::vector<std::vector<int>> links_from_;   // link indices per src
  std::vector<std::vector<int>> switches_of_;  // switch indices per rank
  std::vector<int> group_first_lane_;
  std::vector<int> group_lanes_;
  std::vector<int> group_free_lanes_;
  std::vector<int> lane_group_;
  std::vector<int64_t> lane_holder_;  // step instance holding the lane, or -1
  std::vector<double> lane_busy_;
  // FIFO of waiting threadblocks per group: entries from queue_head_ on are live.
  std::vector<std::vector<int>> queues_;
  std::vector<size_t> queue_head_;
  std::vector<std::vector<int>> switch_egress_group_;  // [switch][rank] -> group, ingress = +1
  std::vector<Route> routes_;
  std::map<std::pair<int, int>, int> route_index_;  // setup only, never in the event loop
};

}  // namespace ccsynth::sim
