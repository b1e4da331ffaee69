#pragma once
// Dependency insertion (MSCCLang sec. 5.2 "Cross Thread block Synchronization Insertion",
// TACCL sec. 6.2): walking each rank's instructions in the global order, every access to a
// buffer slot depends on the last write of it (read-after-write, write-after-write) and every
// write also on the reads since then (write-after-read: a send must read the value before a
// later receive overwrites it). Dependencies inside one threadblock are implicit; for every
// other threadblock only the latest step is kept. A step carries one dependency; extra ones go
// into `nop` steps placed just before it, and the targets get hasdep. A timed algorithm's
// connection spilled over several channels to fit the step limit also sends in order: each
// channel's first send waits for the previous channel's last, where its threadblock has room
// (Lowered::spill_after).

#include "compiler/lowered.h"

namespace ccsynth::compiler {

/// The program of one rank of an assigned Lowered (`order`: the rank's instructions not
/// removed, in key order): buffers, threadblocks, steps with depid/deps and hasdep. `origins`
/// receives, per threadblock, the instruction index of every step (-1 for nops), for passes
/// that map program steps back to instructions. `local` is scratch indexed by instruction
/// (lowered.instructions.size() entries), reused across calls. `max_steps`: the runtime's step
/// limit per threadblock, which the spill order's waits never exceed.
GpuProgram insert_dependencies(const Lowered& lowered, int rank, const std::vector<int>& order,
                               std::vector<std::vector<int>>& origins, std::vector<int>& local,
                               int max_steps);

/// A Program of the collective of `lowered` with no GPUs yet; set_totals completes it once its
/// GPUs are in. Program-level fields (name, protocol, sizes) are left to the caller.
Program empty_program(const Lowered& lowered);

/// Sets the fields that summarize the GPUs: channels and chunks per loop.
void set_totals(Program& program);

/// Per rank and threadblock, the instruction index of every step (-1 for nops).
using StepOrigins = std::vector<std::vector<std::vector<int>>>;

}  // namespace ccsynth::compiler
