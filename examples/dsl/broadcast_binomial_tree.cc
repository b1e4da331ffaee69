// Binomial-tree Broadcast: in round k every rank that has the data (the root and the ranks it
// reached) sends it to the rank 2^k further on, so ceil(log2(R)) rounds.

#include "example.h"

namespace ccsynth::examples {

Example broadcast_binomial_tree_example() {
  static int root = 0;
  static int chunks = 1;
  Example example;
  example.name = "broadcast_binomial_tree";
  example.description = "Binomial-tree Broadcast in ceil(log2(R)) rounds";
  example.default_topology = "ndv4";
  example.add_flags = [](CLI::App& app) {
    app.add_option("--root", root, "root rank")->capture_default_str();
    app.add_option("--chunks", chunks, "chunks of the buffer")->capture_default_str();
  };
  example.build = [](const Topology& t, const ExampleArgs& args) {
    const int size = t.num_ranks;
    auto p = make_program("broadcast_binomial_tree",
                          make_collective(CollectiveKind::kBroadcast, size, chunks, root), t, args,
                          /*inplace=*/false);
    p->chunk(root, Buffer::input(), 0, chunks).copy(root, Buffer::output(), 0);
    for (int distance = 1; distance < size; distance *= 2) {
      for (int relative = 0; relative < std::min(distance, size - distance); ++relative) {
        const int src = (root + relative) % size;
        const int dst = (root + relative + distance) % size;
        p->chunk(src, Buffer::output(), 0, chunks).copy(dst, Buffer::output(), 0);
      }
    }
    return p;
  };
  return example;
}

}  // namespace ccsynth::examples

CCSYNTH_EXAMPLE_MAIN(broadcast_binomial_tree_example)
