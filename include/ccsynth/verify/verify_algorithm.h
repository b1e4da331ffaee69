#pragma once
// Verification of an abstract Algorithm by symbolic execution of its steps (semantics in
// core/algorithm.h): reads of chunks a rank does not hold, conflicting writes within a step,
// ops outside the collective's ranks/chunks, ops over missing topology connections, and the
// postcondition.

#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/topology.h"
#include "ccsynth/verify/report.h"

namespace ccsynth::verify {

/// Symbolically executes `algorithm`. When `topology` is given, every op must also use a
/// single-hop connection of it (a link or a shared switch).
VerifyReport verify_algorithm(const Algorithm& algorithm, const Topology* topology = nullptr);

}  // namespace ccsynth::verify
