// Recursive halving-doubling AllReduce: a ReduceScatter by recursive halving (each round a rank
// reduces the half of its range its partner keeps into the partner) and an AllGather by
// recursive doubling; 2 log2(R) rounds, a power-of-two number of ranks.

#include "example.h"

#include "ccsynth/core/error.h"

namespace ccsynth::examples {

Example allreduce_recursive_halving_doubling_example() {
  Example example;
  example.name = "allreduce_recursive_halving_doubling";
  example.description = "Recursive halving-doubling AllReduce in 2 log2(R) rounds";
  example.default_topology = "ndv4";
  example.default_sizes = {"64K", "1M"};
  example.build = [](const Topology& t, const ExampleArgs& args) {
    const int size = t.num_ranks;
    if (size & (size - 1)) {
      throw UserError("", "--topology",
                      "recursive halving-doubling needs a power-of-two number of ranks, not " +
                          std::to_string(size));
    }
    auto p = make_program("allreduce_recursive_halving_doubling",
                          make_collective(CollectiveKind::kAllReduce, size, 1), t, args, true);
    for (int distance = size / 2; distance >= 1; distance /= 2) {
      for (int r = 0; r < size; ++r) {
        const int partner = r ^ distance;
        const int start = partner / distance * distance;  // the partner's half
        p->chunk(partner, Buffer::input(), start, distance)
            .reduce(p->chunk(r, Buffer::input(), start, distance));
      }
    }
    for (int distance = 1; distance < size; distance *= 2) {
      for (int r = 0; r < size; ++r) {
        const int start = r / distance * distance;
        p->chunk(r, Buffer::input(), start, distance).copy(r ^ distance, Buffer::input(), start);
      }
    }
    return p;
  };
  return example;
}

}  // namespace ccsynth::examples

CCSYNTH_EXAMPLE_MAIN(allreduce_recursive_halving_doubling_example)
