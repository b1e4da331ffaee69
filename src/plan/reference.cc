#include "ccsynth/plan/reference.h"

#include "ccsynth/core/error.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/synth/registry.h"

namespace ccsynth::plan {

std::optional<Algorithm> reference_ring(const Collective& collective, const Topology& topology) {
  if (collective.kind == CollectiveKind::kCustom) return std::nullopt;
  const synth::Synthesizer& ring = synth::find_synthesizer("ring");
  const Collective rings =
      synth::collective_for(ring, topology, collective.kind, 0, collective.root);
  if (!synth::baseline_applies(synth::BaselineKind::kRing, rings, topology)) return std::nullopt;
  try {
    return synth::synthesize(ring, topology, rings).algorithm;
  } catch (const UserError&) {
    return std::nullopt;  // e.g. no ring uses every rank in both directions
  }
}

}  // namespace ccsynth::plan
