#pragma once
// The reference every result is compared with: the ring algorithm NCCL runs, built by the
// `ring` baseline with its defaults (every edge-disjoint ring the lanes allow, at most
// synth::kMaxNcclRings, both directions where the links allow, the data split evenly over the
// rings). `ccsynth baseline --algo ring` without flags builds the same algorithm.

#include <optional>

#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/collective.h"
#include "ccsynth/core/topology.h"

namespace ccsynth::plan {

/// The NCCL-like ring for `collective`'s kind and root on `topology`; nullopt where the ring
/// baseline does not apply (rooted kinds, custom collectives, no ring through all ranks).
std::optional<Algorithm> reference_ring(const Collective& collective, const Topology& topology);

}  // namespace ccsynth::plan
