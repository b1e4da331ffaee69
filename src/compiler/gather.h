#pragma once
// Gathering (before aggregation; MSCCLang sec. 7.3's local `cpy` into the scratch block of a
// coalesced send): the transfers of one step from rank a to rank b that aggregation would merge
// (same kind, channel hint and compatible threadblock hints) but whose sources are not
// contiguous at a, while their destinations at b are. When most of their chunks form one run in
// a's scratch (in destination order; e.g. the chunks a relays) and the others ("strays", e.g.
// a's own chunk in its input) are fewer than the run's (a pair is left alone: one copy pass
// for one send's latency, and the pair's forward often fuses), the run's scratch is renumbered to
// leave room where the strays belong and a local `cpy` on a, before the step's sends, puts each
// stray there: the group then aggregates into one send. Kept only where it lowers the number of
// transfers that a sends or receives after aggregation.

#include "compiler/lowered.h"

namespace ccsynth::compiler {

/// Copies stray chunks next to the scratch runs of same-step transfers (see above), in place.
void gather_strays(Lowered& lowered, int max_count);

}  // namespace ccsynth::compiler
