#pragma once
// Instruction generation (MSCCLang sec. 4.2, TACCL sec. 6.2): walks the ops in the global order
// (step, sends before receives, op index), allocates buffers (buffer_allocation.h) and expands
// each op into instructions: a remote copy into `s` at the source and `r` at the destination,
// a remote reduce into `s` and `rrc` (dst = received + local value). An op whose chunks are not
// contiguous in some buffer is split into contiguous pieces. Final local `cpy`s put values into
// output slots they did not arrive in.

#include <set>
#include <utility>
#include <vector>

#include "ccsynth/core/algorithm.h"
#include "compiler/lowered.h"

namespace ccsynth::compiler {

/// Receives that must write a fresh scratch slot: (destination rank, op index).
using Relocations = std::set<std::pair<int, int>>;

/// The op indices of `algorithm` in step order, in index order within a step (the ops usually
/// come so already: then no sort).
std::vector<int> ops_by_step(const Algorithm& algorithm);

/// Lowers `algorithm` to instructions. Throws UserError for ops outside the collective
/// (ranks, chunks, counts, steps) and for reads of chunks a rank does not hold.
Lowered generate_instructions(const Algorithm& algorithm, bool inplace,
                              const Relocations& relocations = {});

}  // namespace ccsynth::compiler
