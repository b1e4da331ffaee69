// Recursive-doubling AllGather: in round k every rank exchanges the 2^k chunks it has with the
// rank 2^k away (XOR), so log2(R) rounds; needs a power-of-two number of ranks.

#include "example.h"

#include "ccsynth/core/error.h"

namespace ccsynth::examples {

Example allgather_recursive_doubling_example() {
  Example example;
  example.name = "allgather_recursive_doubling";
  example.description = "Recursive-doubling AllGather in log2(R) rounds";
  example.default_topology = "ndv4";
  example.default_sizes = {"64K", "1M"};
  example.build = [](const Topology& t, const ExampleArgs& args) {
    const int size = t.num_ranks;
    if (size & (size - 1)) {
      throw UserError(
          "", "--topology",
          "recursive doubling needs a power-of-two number of ranks, not " + std::to_string(size));
    }
    auto p = make_program("allgather_recursive_doubling",
                          make_collective(CollectiveKind::kAllGather, size, 1), t, args,
                          /*inplace=*/false);
    for (int r = 0; r < size; ++r) p->chunk(r, Buffer::input(), 0).copy(r, Buffer::output(), r);
    for (int distance = 1; distance < size; distance *= 2) {
      for (int r = 0; r < size; ++r) {
        const int start = r / distance * distance;
        p->chunk(r, Buffer::output(), start, distance).copy(r ^ distance, Buffer::output(), start);
      }
    }
    return p;
  };
  return example;
}

}  // namespace ccsynth::examples

CCSYNTH_EXAMPLE_MAIN(allgather_recursive_doubling_example)
