// AllToNext (MSCCLang sec. 7.4, fig. 10), a custom collective: rank r sends its buffer of G
// chunks to rank r+1, the last rank sends nothing. Inside a node the buffer goes directly.
// Across nodes (--variant cooperative, the default) the last GPU of node n scatters its chunks
// over the GPUs of its node, each GPU sends its chunk over its own IB link to the GPU with the
// same index on node n+1, and those gather them on the first GPU there: every IB link of the
// node is used. --variant direct sends every buffer directly (the naive baseline).

#include "example.h"

namespace ccsynth::examples {

Example alltonext_example() {
  static std::string variant = "cooperative";
  Example example;
  example.name = "alltonext";
  example.description = "AllToNext, cooperative cross-node sends (MSCCLang sec. 7.4)";
  example.default_topology = "ndv4x2";
  example.default_sizes = {"1M", "64M"};
  example.add_flags = [](CLI::App& app) {
    app.add_option("--variant", variant, "cross-node sends: cooperative or direct")
        ->check(CLI::IsMember({"cooperative", "direct"}))
        ->capture_default_str();
  };
  example.build = [](const Topology& t, const ExampleArgs& args) {
    const auto [nodes, gpus] = node_shape(t, args);
    const int size = t.num_ranks;
    const int chunks = gpus;  // one chunk per GPU of a node: a cross-node buffer splits over all
    auto p = make_program("alltonext_" + variant, make_alltonext(size, chunks), t, args,
                          /*inplace=*/false);
    for (int r = 0; r + 1 < size; ++r) {
      const int n = r / gpus;
      const int g = r % gpus;
      if (variant == "direct" || g != gpus - 1) {
        p->chunk(r, Buffer::input(), 0, chunks).copy(r + 1, Buffer::output(), 0);
        continue;
      }
      // Cooperative cross-node send from (n, G-1) to (n+1, 0).
      for (int k = 0; k < chunks; ++k) {
        ChunkRef c = p->chunk(r, Buffer::input(), k);
        if (k != g) c = c.copy(n * gpus + k, Buffer::scratch(), 0);  // scatter inside node n
        const int dst = (n + 1) * gpus + k;
        if (k == 0) {
          c.copy(dst, Buffer::output(), k);  // arrives where it belongs
        } else {                             // IB, then gather on (n+1, 0)
          c.copy(dst, Buffer::scratch(), 0).copy((n + 1) * gpus, Buffer::output(), k);
        }
      }
    }
    return p;
  };
  return example;
}

}  // namespace ccsynth::examples

CCSYNTH_EXAMPLE_MAIN(alltonext_example)
