#include "ccsynth/plan/reference.h"

#include "ccsynth/core/error.h"
#include "ccsynth/synth/baselines.h"

namespace ccsynth::plan {

std::optional<Algorithm> reference_ring(const Collective& collective, const Topology& topology) {
  if (collective.kind == CollectiveKind::kCustom) return std::nullopt;
  try {
    return synth::nccl_ring(topology, collective.kind, collective.root);
  } catch (const UserError&) {
    return std::nullopt;  // rooted kinds, or no ring through every rank
  }
}

}  // namespace ccsynth::plan
