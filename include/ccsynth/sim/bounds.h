#pragma once
// Lower bounds on the time of a collective on a topology (docs/bounds.md), valid for
// the simulator's cost model: a transfer of b bytes holds one lane of every link on its route
// for at least alpha + beta * b, a switch port direction moves at most 1 / beta bytes per us,
// no byte moves before its transfer's alpha, and every call pays Topology::launch_us once.

#include <cstdint>

#include "ccsynth/core/collective.h"
#include "ccsynth/core/program.h"
#include "ccsynth/core/topology.h"
#include "ccsynth/sim/simulate.h"

namespace ccsynth::sim {

/// Scales every alpha and beta of the topology (the protocol's factors, sim::protocol_cost), so
/// that the bound stays below the simulation of a program using that protocol.
struct BoundOptions {
  double alpha_factor = 1.0;
  double beta_factor = 1.0;
  /// Up to this many ranks every cut is enumerated (exact cut bound); above, candidate cuts
  /// come from max-flow min cuts, node groups, single ranks and contiguous halves.
  int exact_cut_max_ranks = 14;
  /// Also count Topology::host_switches as switches: only routed programs (sends between ranks
  /// with no link or switch, e.g. `--end-to-end` baselines) can use them, so the bound of any
  /// other program leaves them out and stays as tight as without them.
  bool host_switches = false;
  /// > 0: the runtime's FIFO slot, in data bytes (SimOptions' slice_bytes of the protocol). A
  /// step pays alpha once per runtime call, and a call carries at most a slot's bytes
  /// (sim::chunks_per_call), so a link lane moving b bytes is busy for at least
  /// b x (beta + alpha / slot): the bandwidth bounds are also taken with every lane at that
  /// rate (docs/bounds.md "Alpha per runtime call"). 0: a step is one call whatever its size
  /// (no pipelining, fixed slices), and only alpha + b x beta holds.
  double slot_bytes = 0.0;
};

/// The bound and its parts; lower_bound_us = launch_us + max(latency_us, bandwidth_us).
struct LowerBound {
  double launch_us = 0.0;     // Topology::launch_us, paid once per collective
  double latency_us = 0.0;    // max over needed (chunk, destination) of the alpha distance
  double bandwidth_us = 0.0;  // max of the per-rank, cut, total- and node-traffic bounds
  double lower_bound_us = 0.0;
  double ingress_egress_us = 0.0;  // parts of bandwidth_us, for reports
  double cut_us = 0.0;
  double total_traffic_us = 0.0;
  double node_traffic_us = 0.0;  // total traffic between nodes (0 without 2+ nodes)
};

/// The options that bound a program of `protocol` on `topology` simulated with `sim`: the
/// protocol's alpha and beta factors (protocol_cost), the host switches when its sends may be
/// routed, and the protocol's FIFO slot when the runtime's slicing applies.
BoundOptions bound_options_for(const Topology& topology, Protocol protocol, bool routed = false,
                               const SimOptions& sim = {});

/// Lower bound for `collective` on `topology` with `bytes` per rank (one chunk is
/// bytes / collective.input_chunks). Throws UserError when the rank counts differ.
LowerBound lower_bound(const Topology& topology, const Collective& collective, int64_t bytes,
                       const BoundOptions& options = {});

/// The smallest lower_bound_us over the three protocols (bound_options_for each): a bound for
/// a program in any of them, which a table of the fastest program per size (the tuner's) needs.
double lower_bound_any_protocol_us(const Topology& topology, const Collective& collective,
                                   int64_t bytes);

}  // namespace ccsynth::sim
