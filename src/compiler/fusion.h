#pragma once
// Instruction fusion (MSCCLang sec. 4.3): a receive (`r` / `rrc`) whose written chunks are next
// read by a send of exactly those chunks becomes one `rcs` / `rrcs`; when nothing else ever
// reads the received value (and it is not an output), `rrc` + `s` becomes `rrs`, which writes
// nothing locally. The fused instruction runs at the receive's place in the global order; a
// fusion is skipped when it would reorder the sends of the send connection (FIFO matching).

#include <set>
#include <vector>

#include "compiler/lowered.h"

namespace ccsynth::compiler {

/// A receive and the send that forwards exactly what it wrote, on the same rank.
struct FusionCandidate {
  int receive = -1;            // instruction index of the r / rrc
  int send = -1;               // instruction index of the s
  bool result_unused = false;  // no other reader and not an output: rrs allowed
};

/// Finds every rank's candidates (at most one send per receive: the earliest), in the order
/// of their receives. They depend only on the instructions, not on channels or threadblocks.
/// `rank_orders`: Lowered::rank_orders() of `lowered`.
std::vector<std::vector<FusionCandidate>> find_fusion_candidates(
    const Lowered& lowered, const std::vector<std::vector<int>>& rank_orders);

/// Fuses the candidates of `rank` (`candidates`, in receive order) whose receive and send
/// connections share one of its `planned` threadblocks, except receives listed in `no_fuse`
/// (un-fused by the deadlock check); `transfers`: the rank's (RankIndex::transfers). Changes
/// only the rank's instructions and the transfers it sends. Returns the number of fused pairs.
int fuse_instructions(Lowered& lowered, int rank, const std::vector<FusionCandidate>& candidates,
                      const std::vector<int>& transfers,
                      const std::vector<PlannedThreadblock>& planned,
                      const std::set<int>& no_fuse = {});

}  // namespace ccsynth::compiler
