#pragma once
// Schedule order: lowering a timed schedule (TACCL sec. 6.2; TACOS) so that the program runs in
// the order the synthesizer timed, not only in dependency order.
//
// The interpreter runs each threadblock slice-major (MSCCLang sec. 6.2: for every slice, every
// step in order), so two sends on one threadblock advance in lockstep: a send whose data is
// there from the start is held back, slice by slice, by a send that forwards data still
// arriving. order_by_start_times therefore
//   * renumbers the steps by start time (every distinct start time a step), so that the
//     compiler's global order, and each threadblock's step order, is the schedule's;
//   * gives the ops of a connection a channel hint per distinct time their data became
//     available at the sender (input data first), so that only sends that can run together
//     share a threadblock.
// Dependency order is kept: the schedule starts an op after the ops that deliver its data.

#include <string>

#include "ccsynth/core/algorithm.h"

namespace ccsynth::compiler {

/// Whether every op carries a start time and starts after each op delivering its data
/// (a chunk's earlier arrival or reduction at the sender) started.
bool has_schedule_order(const Algorithm& algorithm);

/// The algorithm with steps renumbered by start time and channel hints by data arrival, at most
/// `max_channels` per connection (hints already set are kept). Returns the algorithm unchanged
/// when !has_schedule_order(algorithm).
Algorithm order_by_start_times(const Algorithm& algorithm, int max_channels);

/// order_by_start_times(algorithm, max_channels) when it can fit threadblocks of `max_steps`
/// steps; otherwise an empty algorithm, with start_time_order_overflow's reason in `overflow`
/// (else ""), found from the ops' new steps and channels before the ordered algorithm is built
/// (a copy and a sort of every op: about 10 s of the 4096-rank mesh allgather, whose start-time
/// order does not fit).
Algorithm order_by_start_times(const Algorithm& algorithm, int max_channels, int max_steps,
                               std::string* overflow);

/// Why `ordered` (order_by_start_times' result with `max_channels`) cannot fit threadblocks of
/// `max_steps` steps, or "" when it may. Data arrivals past the first max_channels - 1 share a
/// connection's last channel; the compiler only spills transfers to higher channels and merges
/// only ops of one step, so a connection with more distinct steps than `max_steps` on its last
/// channel fails channel assignment at every capacity. Known before lowering (seconds at
/// thousands of ranks): the planner skips the start-time order there (docs/compiler.md).
std::string start_time_order_overflow(const Algorithm& ordered, int max_channels, int max_steps);

}  // namespace ccsynth::compiler
