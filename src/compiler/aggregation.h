#pragma once
// Aggregation (MSCCLang sec. 5.1 "Aggregation", TACCL's contiguity stage): transfers of one step
// between the same pair of ranks, of the same kind and channel hint, whose source and
// destination ranges are contiguous are merged into one transfer with cnt > 1 (at most
// `max_count` chunks), amortizing the per-send latency. Local copies of one step are merged
// the same way.

#include "compiler/lowered.h"

namespace ccsynth::compiler {

/// Merges contiguous same-step transfers and copies in place; merged ones are marked removed.
void aggregate(Lowered& lowered, int max_count);

/// How many of the transfers that `rank` sends or receives would remain after aggregation
/// (`lowered` is left as it is).
int aggregated_transfers(const Lowered& lowered, int rank, int max_count);

}  // namespace ccsynth::compiler
