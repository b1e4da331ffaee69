#pragma once
// Internal to sim: the topology as lanes that each carry one transfer at a time, and routes
// between ranks. Link i owns `lanes` lanes; every switch gives each of its ranks one egress and
// one ingress port (one lane each). A send between ranks without a direct connection follows a
// shortest path (in hops) and holds one lane of every hop for the whole transfer, so a direct
// algorithm on a ring shows its congestion (TACOS fig. 1-2).

#include <cstdint>
#include <map>
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

/// Lanes, routes and their reservations.
class Network {
 public:
  explicit Network(const Topology& topology);

  /// Index of the route src -> dst in routes(); computed once per pair. Throws UserError when
  /// dst is unreachable.
  int route(int src, int dst);
  const std::vector<Route>& routes() const { return routes_; }

  /// Reserves the earliest-free lane of every group on `route` from max(ready, lanes free) for
  /// `cost` us on behalf of step instance `instance`; returns the start time. `blocker` gets the
  /// instance that held the lane which delayed the start, or -1.
  double reserve(int route, double ready, double cost, int64_t instance, int64_t* blocker);

  /// Busy time and utilization over `time_us` of every link, then every switch port.
  std::vector<LinkUsage> usage(double time_us) const;

 private:
  int add_group(int lanes);
  std::vector<int> hops_of(const Connection& connection) const;

  const Topology& topology_;
  std::vector<std::vector<Connection>> adjacency_;  // per src, sorted by dst
  std::vector<int> group_first_lane_;
  std::vector<int> group_lanes_;
  std::vector<double> lane_free_;
  std::vector<double> lane_busy_;
  std::vector<int64_t> lane_last_;
  std::vector<std::vector<int>> switch_egress_group_;  // [switch][rank] -> group, ingress = +1
  std::vector<Route> routes_;
  std::map<std::pair<int, int>, int> route_index_;  // setup only, never in the event loop
  std::vector<int> chosen_;
};

}  // namespace ccsynth::sim
