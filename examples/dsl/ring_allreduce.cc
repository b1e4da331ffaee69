// Ring AllReduce (MSCCLang sec. 7.1.1): a reduce ring then a copy ring over all ranks, one chunk
// per rank; --channels spreads the chunks of the one logical ring over several channels, and
// --instances parallelizes the whole program (NCCL's ring is one channel x many instances).

#include "example.h"

namespace ccsynth::examples {

Example ring_allreduce_example() {
  static int channels = 1;
  Example example;
  example.name = "ring_allreduce";
  example.description = "Ring AllReduce with channels and instances (MSCCLang sec. 7.1.1)";
  example.default_topology = "ndv4";
  example.add_flags = [](CLI::App& app) {
    app.add_option("--channels", channels, "channels the chunks use")->capture_default_str();
  };
  example.build = [](const Topology& t, const ExampleArgs& args) {
    const int size = t.num_ranks;
    auto p = make_program("ring_allreduce", make_collective(CollectiveKind::kAllReduce, size, 1), t,
                          args, /*inplace=*/true);
    // Reduce ring: after size-1 steps chunk `index` is fully reduced on rank index-1.
    for (int step = 0; step < size - 1; ++step) {
      for (int index = 0; index < size; ++index) {
        const int rank = (index + step) % size;
        const int next = (index + step + 1) % size;
        p->chunk(next, Buffer::input(), index)
            .reduce(p->chunk(rank, Buffer::input(), index), {index % channels});
      }
    }
    // Copy ring: the reduced chunk travels to every other rank.
    for (int step = -1; step < size - 2; ++step) {
      for (int index = 0; index < size; ++index) {
        const int rank = (index + step + size) % size;
        const int next = (index + step + 1 + size) % size;
        p->chunk(rank, Buffer::input(), index)
            .copy(next, Buffer::input(), index, {index % channels});
      }
    }
    return p;
  };
  return example;
}

}  // namespace ccsynth::examples

CCSYNTH_EXAMPLE_MAIN(ring_allreduce_example)
