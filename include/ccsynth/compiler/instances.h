#pragma once
// Instances (TACCL sec. 6.2, MSCCLang sec. 5.1 chunk parallelization): N copies of the program
// run in parallel, instance i moving subchunk i of every chunk. Buffer sizes are multiplied by
// N, chunk index c becomes c*N + i, every threadblock is replicated per instance on its own
// channels (channel c of instance i becomes c + i * channels), so instances never share a FIFO.
// Steps with cnt > 1 are expanded to cnt steps because an instance's subchunks are strided.

#include "ccsynth/core/program.h"

namespace ccsynth::compiler {

/// Returns the program replicated `instances` times (the program itself for 1).
Program replicate_instances(Program program, int instances);

/// The collective a program compiled with `instances` implements: every chunk split into
/// subchunks c*N + i, slots likewise, buffers N times larger (what verify_program needs for a
/// custom collective; built-ins equal make_collective(kind, ranks, N * chunks_per_rank, root)).
Collective replicate_collective(const Collective& collective, int instances);

}  // namespace ccsynth::compiler
