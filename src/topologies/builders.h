#pragma once
// Internal to the topologies module: helpers that build topologies link by link, the named
// machines (machines.cc) and the parameterized shapes (shapes.cc). library.cc parses names and
// dispatches here.

#include <string>
#include <vector>

#include "ccsynth/core/topology.h"

namespace ccsynth::topologies::detail {

/// The cost of one dimension's links: alpha, beta (per lane) and lanes.
struct DimCost {
  double alpha_us = 0.0;
  double beta_us_per_mb = 0.0;
  int lanes = 1;
};

/// TACOS sec. V defaults for generic shapes: alpha 0.5 us, 50 GB/s links.
inline constexpr double kGenericAlphaUs = 0.5;
inline constexpr double kGenericGbps = 50.0;

/// TACCL table 1 (profiled on Azure NDv2 and Nvidia DGX-2).
inline constexpr double kNvlinkAlphaUs = 0.7;
inline constexpr double kNdv2NvlinkBetaUsPerMb = 46.0;   // per NVLink lane, NDv2 / DGX-1
inline constexpr double kDgx2NvswitchBetaUsPerMb = 8.0;  // per NVSwitch port, DGX-2
inline constexpr double kIbAlphaUs = 1.7;
inline constexpr double kIbBetaUsPerMb = 106.0;  // per NIC

/// Fixed cost of one NCCL collective call on the named machines (Topology::launch_us): NCCL's
/// own cost model (src/graph/tuning.cc, baseLat, NCCL 2.12-2.19) charges every ring call
/// 6.6 us (LL), 8.4 us (Simple) or 14 us (LL128) before any per-hop latency; we take the
/// smallest so that no protocol is charged more than NCCL charges it.
inline constexpr double kNcclLaunchUs = 6.6;

/// Adds the directed link a -> b.
void add_link(Topology& t, int a, int b, const DimCost& cost, const std::string& kind);
/// Adds a -> b and b -> a.
void add_pair(Topology& t, int a, int b, const DimCost& cost, const std::string& kind);
/// Adds a switch over `ranks`.
void add_switch(Topology& t, std::string name, std::vector<int> ranks, double alpha_us,
                double port_beta_us_per_mb, const std::string& kind);
/// One node holding ranks [first, first + count).
std::vector<int> rank_range(int first, int count);
/// Sorts links by (src, dst) so that output is canonical.
void sort_links(Topology& t);

// Named single-node machines (machines.cc); `name` is the canonical machine name.
Topology make_dgx1_like(const std::string& name);      // dgx1 and ndv2 share the NVLink graph
Topology make_nvswitch_node(const std::string& name);  // dgx2, ndv4, dgxh100
Topology make_amdz52();
/// Names of the machines make_machine accepts, in catalog order.
const std::vector<std::string>& machine_names();
/// A single-node machine by canonical name, or throws UserError.
Topology make_machine(const std::string& name);
/// `nodes` copies of machine `name` joined by the IB fabric (docs/topologies.md, "Multi-node").
Topology make_multi_node(const std::string& name, int nodes);

// Parameterized shapes (shapes.cc). `dims` are the numbers of the name in order; `costs` has
// one entry per dimension (already expanded from the @ parameters).
Topology make_shape(const std::string& shape, const std::vector<int>& dims,
                    const std::vector<DimCost>& costs);
/// Number of cost dimensions of a shape given its dims (ring: 1, mesh2d: 2, hypercube: D, ...).
int cost_dimensions(const std::string& shape, const std::vector<int>& dims);
/// Default per-dimension bandwidth in GB/s (rfs: 200/100/50 as in TACOS sec. VI, else 50).
double default_gbps(const std::string& shape, int dim);
/// Expected number of numbers in the name (ring: 1, mesh2d: 2, ...), or -1 for unknown shapes.
int shape_arity(const std::string& shape);

}  // namespace ccsynth::topologies::detail
