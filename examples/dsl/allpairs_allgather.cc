// All-Pairs AllGather: every rank copies its chunk straight into every other rank's output in
// one step (the best latency on fully connected machines such as NVSwitch nodes).

#include "example.h"

namespace ccsynth::examples {

Example allpairs_allgather_example() {
  Example example;
  example.name = "allpairs_allgather";
  example.description = "All-Pairs AllGather in one step";
  example.default_topology = "ndv4";
  example.default_sizes = {"64K", "1M"};
  example.build = [](const Topology& t, const ExampleArgs& args) {
    const int size = t.num_ranks;
    auto p =
        make_program("allpairs_allgather", make_collective(CollectiveKind::kAllGather, size, 1), t,
                     args, /*inplace=*/false);
    for (int r = 0; r < size; ++r) {
      const ChunkRef c = p->chunk(r, Buffer::input(), 0);
      for (int dst = 0; dst < size; ++dst) c.copy(dst, Buffer::output(), r);
    }
    return p;
  };
  return example;
}

}  // namespace ccsynth::examples

CCSYNTH_EXAMPLE_MAIN(allpairs_allgather_example)
