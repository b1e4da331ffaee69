#pragma once
// Dependency insertion (MSCCLang sec. 5.2 "Cross Thread block Synchronization Insertion",
// TACCL sec. 6.2): walking each rank's instructions in the global order, every access to a
// buffer slot depends on the last write of it (read-after-write, write-after-write) and every
// write also on the reads since then (write-after-read: a send must read the value before a
// later receive overwrites it). Dependencies inside one threadblock are implicit; for every
// other threadblock only the latest step is kept. A step carries one dependency; extra ones go
// into `nop` steps placed just before it, and the targets get hasdep.

#include "compiler/lowered.h"

namespace ccsynth::compiler {

/// Turns an assigned Lowered into a Program (buffers, threadblocks, steps with depid/deps and
/// hasdep). Program-level fields (name, protocol, sizes) are left to the caller.
/// When `origins` is given it receives, per rank and threadblock, the instruction index of
/// every step (-1 for nops), for passes that map program steps back to instructions.
using StepOrigins = std::vector<std::vector<std::vector<int>>>;
Program insert_dependencies(const Lowered& lowered, StepOrigins* origins = nullptr);

}  // namespace ccsynth::compiler
