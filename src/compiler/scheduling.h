#pragma once
// Scheduling at one channel capacity (MSCCLang sec. 5.2): channel assignment, connection
// pairing, fusion, threadblock assignment and dependency insertion, repeated with fixes until
// the program runs with the runtime's FIFO depth (deadlock_check.h) and no threadblock pairing
// two connections is over the step limit (such a one is split while the rank has threadblocks
// to spare, before the caller tries a smaller capacity). A fix changes the
// decisions of one rank (a receive not to fuse, a connection not to pair), and a rank's program
// depends only on its own instructions and transfers, so each repeat schedules again only the
// ranks the last fixes changed: the same program as scheduling every rank again, in time
// proportional to what changed (plus one FIFO run of the whole program per repeat).

#include <optional>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/program.h"
#include "compiler/fusion.h"
#include "compiler/instruction_generation.h"
#include "compiler/lowered.h"

namespace ccsynth::compiler {

/// What scheduling needs of a lowering at every channel capacity, found once (neither
/// depends on the channels): the rank index and, with fusion, every rank's fusion candidates.
struct SchedulingIndex {
  RankIndex ranks;
  std::vector<std::vector<FusionCandidate>> candidates;  // per rank; empty without fusion
};

/// Indexes `lowered` for schedule().
SchedulingIndex index_for_scheduling(const Lowered& lowered, bool fuse);

/// Adds the fusion candidates to an index made without them.
void add_fusion_candidates(SchedulingIndex& index, const Lowered& lowered);

/// Which ranks a deadlock-fix round schedules again: those the fixes changed (the compiler's
/// way), or every rank (the reference the tests compare it with; same program, slower).
enum class Rescheduling { kChangedRanks, kEveryRank };

/// Schedules `lowered` (indexed in `index`) with at most `capacity` transfers of a connection
/// per channel, then replicates the instances. `lowered` is changed while it is scheduled and
/// is as it came when schedule() returns or throws (no copy: it is the largest thing a
/// compilation holds at thousands of ranks), so nothing else may read it meanwhile. Returns nullopt after adding receives to
/// `relocations` (the caller lowers again); throws UserError when a deadlock cannot be fixed
/// or a limit that more channels cannot help is exceeded.
std::optional<Program> schedule(Lowered& lowered, const SchedulingIndex& index, int capacity,
                                const CompileOptions& options, Relocations& relocations,
                                Rescheduling rescheduling = Rescheduling::kChangedRanks);

}  // namespace ccsynth::compiler
