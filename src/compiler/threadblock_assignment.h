#pragma once
// Threadblock assignment (MSCCLang sec. 5.2, TACCL sec. 6.2): a threadblock has at most one
// send connection and one receive connection, both on its channel, and every connection
// (peer, channel, direction) lives in exactly one threadblock. A receive connection is paired
// with the send connection that forwards most of its chunks (so fusion can apply, as in a
// ring); local copies run on one local threadblock per rank. Connections hinted by the
// algorithm (ChunkOp::send_tb / recv_tb) go to the threadblock with the hinted id instead
// (docs/compiler.md, "Threadblock hints"). Every threadblock runs its instructions in the global
// order, which makes the program deadlock-free.

#include <set>

#include "compiler/fusion.h"
#include "compiler/lowered.h"

namespace ccsynth::compiler {

/// A receive connection (peer, channel) of a rank that must get its own threadblock.
struct Unpaired {
  int rank = 0;
  int recv_peer = 0;
  int channel = 0;
  auto operator<=>(const Unpaired&) const = default;
};

/// Plans the threadblocks (connections only) of `rank` from its transfers' channels, pairing
/// connections by its fusion `candidates`; when the rank would exceed `max_threadblocks`,
/// leftover same-channel send and receive connections are paired too. Throws UserError when
/// it still does not fit, or when hints conflict (naming the op).
std::vector<PlannedThreadblock> pair_connections(const Lowered& lowered, int rank,
                                                 const RankIndex& index,
                                                 const std::vector<FusionCandidate>& candidates,
                                                 int max_threadblocks,
                                                 const std::set<Unpaired>& unpaired = {});

/// Places the instructions of `rank` (`order`: those not removed, in key order) into the
/// `planned` threadblocks (Lowered::threadblocks[rank]).
void assign_threadblocks(Lowered& lowered, int rank, const std::vector<int>& order,
                         const std::vector<PlannedThreadblock>& planned);

}  // namespace ccsynth::compiler
