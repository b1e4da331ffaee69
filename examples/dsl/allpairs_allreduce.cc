// All-Pairs AllReduce (MSCCLang sec. 7.1.2): two communication steps. Every rank sends block r
// of its buffer to rank r's scratch, rank r reduces the blocks locally, then sends its reduced
// block to every other rank. Same volume as a ring, 2 steps instead of 2R-2.

#include "example.h"

namespace ccsynth::examples {

Example allpairs_allreduce_example() {
  Example example;
  example.name = "allpairs_allreduce";
  example.description = "All-Pairs AllReduce in 2 steps (MSCCLang sec. 7.1.2)";
  example.default_topology = "ndv4";
  example.default_sizes = {"64K", "1M"};
  example.build = [](const Topology& t, const ExampleArgs& args) {
    const int size = t.num_ranks;
    auto p =
        make_program("allpairs_allreduce", make_collective(CollectiveKind::kAllReduce, size, size),
                     t, args, /*inplace=*/true);
    // Step 1: rank r1 sends block r2 to rank r2's scratch, slot r1 (skipping r2 itself).
    for (int r1 = 0; r1 < size; ++r1) {
      for (int r2 = 0; r2 < size; ++r2) {
        if (r1 == r2) continue;
        const int slot = r1 < r2 ? r1 : r1 - 1;
        p->chunk(r1, Buffer::input(), r2 * size, size).copy(r2, Buffer::scratch(), slot * size);
      }
    }
    // Local reduction of the received blocks into rank r's own block.
    for (int r = 0; r < size; ++r) {
      for (int slot = 0; slot < size - 1; ++slot) {
        p->chunk(r, Buffer::input(), r * size, size)
            .reduce(p->chunk(r, Buffer::scratch(), slot * size, size));
      }
    }
    // Step 2: every rank sends its reduced block to all others.
    for (int r1 = 0; r1 < size; ++r1) {
      for (int r2 = 0; r2 < size; ++r2) {
        if (r1 != r2)
          p->chunk(r1, Buffer::input(), r1 * size, size).copy(r2, Buffer::input(), r1 * size);
      }
    }
    return p;
  };
  return example;
}

}  // namespace ccsynth::examples

CCSYNTH_EXAMPLE_MAIN(allpairs_allreduce_example)
