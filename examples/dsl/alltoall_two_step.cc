// Two-Step AllToAll (MSCCLang sec. 7.3, fig. 9) for N nodes of G GPUs: a chunk for another
// node first goes over NVLink to the local GPU with the destination's index, into a scratch
// block per destination node; then every GPU sends each block in one coalesced IB transfer.

#include "example.h"

namespace ccsynth::examples {

Example alltoall_two_step_example() {
  Example example;
  example.name = "alltoall_two_step";
  example.description = "Two-Step AllToAll with coalesced IB sends (MSCCLang fig. 9)";
  example.default_topology = "ndv4x2";
  example.build = [](const Topology& t, const ExampleArgs& args) {
    const auto [nodes, gpus] = node_shape(t, args);
    auto rank = [gpus](int n, int g) { return n * gpus + g; };
    auto p = make_program("alltoall_two_step",
                          make_collective(CollectiveKind::kAllToAll, nodes * gpus, 1), t, args,
                          /*inplace=*/false);
    for (int n = 0; n < nodes; ++n) {
      for (int g = 0; g < gpus; ++g) {
        for (int m = 0; m < nodes; ++m) {
          for (int i = 0; i < gpus; ++i) {
            // The chunk rank (m, i) sends to rank (n, g).
            ChunkRef c = p->chunk(rank(m, i), Buffer::input(), rank(n, g));
            if (n == m) {
              c.copy(rank(n, g), Buffer::output(), rank(m, i));
            } else {
              c.copy(rank(m, g), Buffer::scratch(), rank(n, i));
            }
          }
        }
      }
    }
    // Coalesced IB sends: G chunks from (m, g) to (n, g).
    for (int m = 0; m < nodes; ++m) {
      for (int g = 0; g < gpus; ++g) {
        for (int n = 0; n < nodes; ++n) {
          if (n == m) continue;
          p->chunk(rank(m, g), Buffer::scratch(), n * gpus, gpus)
              .copy(rank(n, g), Buffer::output(), m * gpus);
        }
      }
    }
    return p;
  };
  return example;
}

}  // namespace ccsynth::examples

CCSYNTH_EXAMPLE_MAIN(alltoall_two_step_example)
