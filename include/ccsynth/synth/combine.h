#pragma once
// Combining collectives from non-combining ones (SCCL sec. 3.5): inversion turns a broadcast
// into a reduce and an allgather into a reducescatter (and back, and gather <-> scatter);
// an allreduce is a reducescatter followed by an allgather.

#include "ccsynth/core/algorithm.h"

namespace ccsynth::synth {

/// The inverse of `algorithm` (SCCL sec. 3.5): steps reversed (step s becomes S-1-s), every op
/// runs dst -> src, and copies become reduces (or reduces copies). Supported pairs:
/// allgather <-> reducescatter, broadcast <-> reduce, gather <-> scatter (copies stay copies).
/// Ops of a non-combining input that deliver a chunk to a rank already holding it are dropped
/// first (their inverse would count a contribution twice). The result uses the reversed links,
/// so it is valid on a topology where every used link also exists backwards. Start times are
/// cleared (-1): only the step order carries over. Throws UserError for other collectives or
/// when a combining input contains copies (their inverse is not defined).
Algorithm invert(const Algorithm& algorithm);

/// Allreduce = `reducescatter` then `allgather` (SCCL sec. 3.5): the reducescatter's ops keep
/// their steps, the allgather's are shifted by reducescatter.num_steps(). Chunk j of the
/// allreduce is reducescatter chunk j (owned by rank j / C) and allgather chunk j. Start times
/// are cleared. Throws UserError unless the inputs are a reducescatter and an allgather over the
/// same ranks and chunks per rank.
Algorithm allreduce_from(const Algorithm& reducescatter, const Algorithm& allgather);

}  // namespace ccsynth::synth
