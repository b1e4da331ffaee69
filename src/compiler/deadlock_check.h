#pragma once
// Bounded-FIFO deadlock check. The global order makes a program deadlock-free when connections
// buffer without limit, but the runtimes hold only a few messages per connection (NCCL's FIFO
// slots, MSCCLang sec. 6.1): a fused rcs/rrs/rrcs must find a free slot downstream before its
// receive completes, and a threadblock that sends many chunks before it receives can fill its
// peer's FIFO. This pass executes the program's threadblocks against FIFOs of `fifo_slots`
// messages and reports the steps stuck in a deadlock; compile() then un-fuses or un-pairs them
// and schedules again (MSCCLang: "prevents a schedule with more than s outstanding sends").

#include <vector>

#include "ccsynth/core/program.h"

namespace ccsynth::compiler {

/// A step that cannot proceed when the program deadlocks.
struct BlockedStep {
  int rank = 0;
  int threadblock = 0;
  int step = 0;
  bool on_send = false;  // waiting for a free FIFO slot of its send connection
};

/// Runs one instance of `program`; a step with cnt c moves `pieces_per_chunk ? c : 1`
/// messages (instances > 1 expand cnt into separate steps). Returns the blocked steps, empty
/// when every threadblock finishes.
std::vector<BlockedStep> find_fifo_deadlock(const Program& program, int fifo_slots,
                                            bool pieces_per_chunk);

}  // namespace ccsynth::compiler
