// Hierarchical AllReduce (MSCCLang fig. 3 and sec. 5.1) on N nodes of G GPUs: ring
// ReduceScatter inside each node, ring ReduceScatter + AllGather across nodes among the GPUs
// with the same local index, ring AllGather inside each node. The intra-node rings move N
// chunks per send and are parallelized N ways; intra-node ReduceScatters run on channel 0, the
// cross-node rings on channel 1 and the intra-node AllGathers on channel 2 (the paper's
// schedule).

#include "example.h"

namespace ccsynth::examples {

namespace {

// MSCCLang fig. 3b: ring ReduceScatter of `count` chunks per rank starting at `offset`.
void reduce_scatter(DslProgram& p, const std::vector<int>& ranks, int offset, int count,
                    int channel) {
  const int size = static_cast<int>(ranks.size());
  for (int r = 0; r < size; ++r) {
    const int index = offset + r * count;
    ChunkRef c = p.chunk(ranks[(r + 1) % size], Buffer::input(), index, count);
    for (int step = 1; step < size; ++step) {
      c = p.chunk(ranks[(step + r + 1) % size], Buffer::input(), index, count).reduce(c, {channel});
    }
  }
}

// MSCCLang fig. 3b: ring AllGather.
void all_gather(DslProgram& p, const std::vector<int>& ranks, int offset, int count, int channel) {
  const int size = static_cast<int>(ranks.size());
  for (int r = 0; r < size; ++r) {
    const int index = offset + r * count;
    ChunkRef c = p.chunk(ranks[r], Buffer::input(), index, count);
    for (int step = 1; step < size; ++step) {
      c = c.copy(ranks[(step + r) % size], Buffer::input(), index, {channel});
    }
  }
}

std::vector<int> local_ranks(int node, int gpus) {
  std::vector<int> ranks;
  for (int g = 0; g < gpus; ++g) ranks.push_back(node * gpus + g);
  return ranks;
}

std::vector<int> cross_ranks(int gpu, int nodes, int gpus) {
  std::vector<int> ranks;
  for (int n = 0; n < nodes; ++n) ranks.push_back(n * gpus + gpu);
  return ranks;
}

}  // namespace

Example hierarchical_allreduce_example() {
  Example example;
  example.name = "hierarchical_allreduce";
  example.description = "Hierarchical AllReduce with parallelize (MSCCLang fig. 3, sec. 5.1)";
  example.default_topology = "ndv4x2";
  example.build = [](const Topology& t, const ExampleArgs& args) {
    const auto [nodes, gpus] = node_shape(t, args);
    auto p = make_program("hierarchical_allreduce",
                          make_collective(CollectiveKind::kAllReduce, nodes * gpus, 1), t, args,
                          /*inplace=*/true);
    for (int n = 0; n < nodes; ++n) {
      auto scope = p->parallelize(nodes);
      reduce_scatter(*p, local_ranks(n, gpus), 0, nodes, 0);
    }
    for (int g = 0; g < gpus; ++g) {
      reduce_scatter(*p, cross_ranks(g, nodes, gpus), g * nodes, 1, 1);
      all_gather(*p, cross_ranks(g, nodes, gpus), g * nodes, 1, 1);
    }
    for (int n = 0; n < nodes; ++n) {
      auto scope = p->parallelize(nodes);
      all_gather(*p, local_ranks(n, gpus), 0, nodes, 2);
    }
    return p;
  };
  return example;
}

}  // namespace ccsynth::examples

CCSYNTH_EXAMPLE_MAIN(hierarchical_allreduce_example)
