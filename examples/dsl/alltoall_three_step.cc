// Three-Step AllToAll for N nodes of G GPUs: every chunk for node n first gathers over NVLink on
// the proxy GPU n mod G of its node (ordered by destination GPU, then source GPU), one IB
// message per pair of nodes carries the G*G chunks to the proxy of node n, which scatters them
// to the outputs, G contiguous chunks per destination GPU.

#include "example.h"

namespace ccsynth::examples {

Example alltoall_three_step_example() {
  Example example;
  example.name = "alltoall_three_step";
  example.description = "Three-Step AllToAll: gather, one IB message per node pair, scatter";
  example.default_topology = "ndv4x2";
  example.build = [](const Topology& t, const ExampleArgs& args) {
    const auto [nodes, gpus] = node_shape(t, args);
    auto rank = [gpus](int n, int g) { return n * gpus + g; };
    const Buffer gather = Buffer::scratch("gather");
    const Buffer recv = Buffer::scratch("recv");
    auto p = make_program("alltoall_three_step",
                          make_collective(CollectiveKind::kAllToAll, nodes * gpus, 1), t, args,
                          /*inplace=*/false);
    for (int m = 0; m < nodes; ++m) {
      for (int i = 0; i < gpus; ++i) {
        for (int n = 0; n < nodes; ++n) {
          for (int g = 0; g < gpus; ++g) {
            ChunkRef c = p->chunk(rank(m, i), Buffer::input(), rank(n, g));
            if (n == m) {
              c.copy(rank(n, g), Buffer::output(), rank(m, i));
            } else {  // step 1: to the proxy, block n ordered by (g, i)
              c.copy(rank(m, n % gpus), gather, (n * gpus + g) * gpus + i);
            }
          }
        }
      }
    }
    const int block = gpus * gpus;
    for (int m = 0; m < nodes; ++m) {
      for (int n = 0; n < nodes; ++n) {
        if (n == m) continue;  // step 2: one IB message per pair of nodes
        const int proxy = n % gpus;
        p->chunk(rank(m, proxy), gather, n * block, block).copy(rank(n, proxy), recv, m * block);
      }
    }
    for (int n = 0; n < nodes; ++n) {
      for (int m = 0; m < nodes; ++m) {
        if (n == m) continue;  // step 3: scatter to the outputs, G chunks per destination
        const int proxy = n % gpus;
        for (int g = 0; g < gpus; ++g) {
          p->chunk(rank(n, proxy), recv, (m * gpus + g) * gpus, gpus)
              .copy(rank(n, g), Buffer::output(), m * gpus);
        }
      }
    }
    return p;
  };
  return example;
}

}  // namespace ccsynth::examples

CCSYNTH_EXAMPLE_MAIN(alltoall_three_step_example)
