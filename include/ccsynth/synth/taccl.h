#pragma once
// TACCL's three-stage synthesizer (TACCL sec. 5, appendix B) on COIN-OR CBC:
//   1. routing: a bandwidth-relaxed MILP picks every chunk's multicast tree (eq. 1-15), restricted
//      to shortest paths of the sketch's logical topology plus one-hop intra-node switch relays
//      in receiving nodes, and folded by its symmetry;
//   2. ordering: a greedy list scheduler orders the transfers on every link and switch port
//      (B.2 heuristics), and a local search picks which consecutive inter-node sends travel
//      together, which yields a feasible schedule;
//   3. contiguity and exact scheduling: a MILP fixes send times under strict bandwidth, merging
//      consecutive inter-node sends where that saves alpha (eq. 16-21), seeded with stage 2,
//      with time windows, symmetric merge binaries and a per-lane lower bound (docs/taccl.md).
// Reducescatter inverts the allgather trees and re-orders/re-schedules them (sec. 5.3);
// allreduce schedules the reducescatter and allgather transfers as one problem. docs/taccl.md.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/collective.h"
#include "ccsynth/core/synth_status.h"
#include "ccsynth/core/topology.h"
#include "ccsynth/synth/sketch.h"

namespace ccsynth::synth {

/// The largest chunkup (chunks per rank) TACCL synthesizes: the shipped sketches use 1..6, and
/// the routing model and the ordering heuristic, which the time limit does not stop, grow faster
/// than linearly beyond (chunkup 100 on ndv2x2 ran for minutes).
inline constexpr int kMaxTacclChunkup = 16;

/// Synthesizer settings. Fields at 0 / empty take the sketch's value.
struct TacclOptions {
  double time_limit_s = 60.0;  // per MILP stage
  double stall_s = 2.0;        // a MILP stage stops after this long without a better schedule
  int64_t bytes = 0;           // per-rank input bytes for the cost model (0: sketch, else 1M)
  int chunkup = 0;             // chunks per rank (0: sketch's input_chunkup)
  double relative_gap = 0.02;  // MILP stopping gap (routing is itself a relaxation)
  double merge_min_alpha_share = 0.02;  // merge binaries only where alpha >= this x beta-time
  bool contiguity = true;         // stage 3 may merge inter-node sends (false: no merge binaries)
  bool exact_schedule = true;     // false: skip stage 3 and keep the stage 2 schedule
  bool intra_node_relays = true;  // routing may relay a chunk once more inside a switch of a
                                  // receiving node (non-shortest paths; docs/taccl.md)
  int solver_log_level = 0;       // CBC's log level (> 0 prints CBC's log on stdout; debugging)
};

/// What one stage did.
struct StageReport {
  std::string name;  // "routing", "ordering", "scheduling"
  double seconds = 0.0;
  std::string status;           // MILP status name, or "heuristic"
  double objective_us = 0.0;    // the stage's makespan estimate
  double lower_bound_us = 0.0;  // scheduling: the makespan no schedule under the stage 2
                                // orders beats, as proved by the MILP (0: not reported)
  double gap = 0.0;
  int variables = 0;
  int rows = 0;
  int integers = 0;
};

/// One chunk transfer over a logical link (a multicast tree edge).
struct Transfer {
  int chunk = 0;
  int src = 0;
  int dst = 0;
  int link = 0;  // index into LogicalTopology::links
  OpKind kind = OpKind::kCopy;
  std::vector<int> preds;  // transfers that must have arrived before this one is sent
};

/// Stage 1 output: every chunk's tree edges as transfers of the base (non-combining) collective.
struct Routing {
  std::vector<Transfer> transfers;
  double objective_us = 0.0;  // relaxed makespan (eq. 1)
};

/// A timed schedule: per transfer its send time, lane and merge group.
struct Schedule {
  std::vector<double> send_us;
  std::vector<double> arrive_us;
  std::vector<int> lane;   // lane of the link used
  std::vector<int> group;  // transfers with the same group id travel together
  double makespan_us = 0.0;
};

/// Stage 2 output: per link lane and per switch port the order of transfers, and the greedy
/// schedule that realizes it.
struct Ordering {
  std::vector<std::vector<int>> lane_order;       // per (link, lane) slot
  std::vector<int> lane_slot_link;                // slot -> link
  std::vector<std::vector<int>> port_send_order;  // per switch port with sends (shared: once)
  std::vector<std::vector<int>> port_recv_order;
  Schedule greedy;
  /// Transfer permutations of the sketch's symmetry (symmetry_offsets) that map every lane
  /// order onto a lane order: merge decisions are made alike on each orbit, in stage 2's
  /// search and in stage 3 (one binary per orbit in effect).
  std::vector<std::vector<int>> symmetries;
};

/// Stage 1 (TACCL B.1) for a non-combining collective (allgather, alltoall, or any collective
/// whose chunks have one source). Throws UserError when the sketch leaves a destination
/// unreachable.
Routing route(const LogicalTopology& logical, const Sketch& sketch, const Collective& collective,
              double chunk_bytes, const TacclOptions& options, StageReport* report);

/// Turns allgather trees into reducescatter in-trees (TACCL sec. 5.3): every edge reversed,
/// copies become reduces, and a rank sends its partial sum only after all its children arrived.
std::vector<Transfer> invert_transfers(const std::vector<Transfer>& transfers,
                                       const LogicalTopology& logical);

/// Stage 2 (TACCL B.2): greedy list scheduling in earliest-start order; ties go to the transfer
/// with the longest path still ahead, then the shortest path behind (then lowest chunk id when
/// the sketch enforces inter-node ordering). With options.contiguity, which consecutive sends of
/// an inter-node lane travel together is then chosen by local search (one and two flips, alike
/// on the orbits of the `symmetries` that the orders respect; see transfer_symmetries).
Ordering order_transfers(const std::vector<Transfer>& transfers, const LogicalTopology& lt,
                         const Sketch& sketch, double chunk_bytes, const TacclOptions& options = {},
                         const std::vector<std::vector<int>>& symmetries = {});

/// The permutations of `transfers` induced by the logical topology's rank symmetry group
/// (identity excluded) for transfers numbered by the `base` collective (allgather or alltoall
/// chunk ids); empty when the transfers are not closed under the group.
std::vector<std::vector<int>> transfer_symmetries(const std::vector<Transfer>& transfers,
                                                  const LogicalTopology& lt,
                                                  const Collective& base);

/// Stage 3 (TACCL B.3, eq. 16-21): exact send times under the stage 2 orders, with optional
/// merging of consecutive sends on inter-node links. Seeded with ordering.greedy.
Schedule schedule_transfers(const std::vector<Transfer>& transfers, const Ordering& ordering,
                            const LogicalTopology& lt, double chunk_bytes,
                            const TacclOptions& options, StageReport* report);

/// Builds the Algorithm (steps from the schedule's dependency order, start_us = send time,
/// merged consecutive chunk ids as one op with count > 1).
Algorithm to_algorithm(const std::vector<Transfer>& transfers, const Schedule& schedule,
                       const Collective& collective, const std::string& name,
                       const std::string& topology_name);

/// The result of synthesize_taccl.
struct TacclResult {
  SynthStatus status = SynthStatus::kFeasible;
  std::optional<Algorithm> algorithm;
  double makespan_us = 0.0;  // the schedule's own estimate (alpha-beta, strict bandwidth)
  double chunk_bytes = 0.0;
  int chunkup = 1;
  std::vector<StageReport> stages;
};

/// Runs the three stages for allgather, alltoall, reducescatter or allreduce. Throws UserError
/// for other collectives or sketches that do not fit the topology.
TacclResult synthesize_taccl(const Topology& topology, const Sketch& sketch, CollectiveKind kind,
                             const TacclOptions& options = {});

}  // namespace ccsynth::synth
