#pragma once
// Internal to the baselines: graph searches over a topology (rings, paths, trees, embeddings)
// and helpers that turn chunk ranges into ops. Shared by baselines*.cc.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/topology.h"

namespace ccsynth::synth::detail {

/// Consecutive logical chunks first..first+count-1.
struct Range {
  int first = 0;
  int count = 0;
};
using Block = std::vector<Range>;

/// Sorted unique chunk ids -> maximal runs.
Block ranges_of(std::vector<int> ids);
/// Ids of every chunk of a block, ascending.
std::vector<int> ids_of(const Block& block);
/// `range` cut into min(parts, count) contiguous near-equal pieces.
std::vector<Range> split(Range range, int parts);
/// One op per range of `block` (nothing for an empty block).
void emit(Algorithm& a, const Block& block, int src, int dst, OpKind kind, int step);

/// A rooted spanning tree over ranks: parent[root] = -1.
struct Tree {
  int root = 0;
  std::vector<int> parent;
  std::vector<std::vector<int>> children;
  std::vector<int> depth;
  std::vector<int> height;  // 0 for leaves

  /// Builds children, depth and height from root and parent (CCSYNTH_CHECKs it is a tree).
  static Tree from_parents(int root, std::vector<int> parent);
  int num_ranks() const { return static_cast<int>(parent.size()); }
};

/// Single-hop connectivity of a topology, with the searches the baselines need.
class Net {
 public:
  explicit Net(const Topology& topology);

  int size() const { return n_; }
  const Topology& topology() const { return topology_; }
  /// A connection a -> b exists.
  bool connected(int a, int b) const { return adj_[a][b] != 0; }
  /// Connections exist both ways.
  bool linked(int a, int b) const { return connected(a, b) && connected(b, a); }

  /// Directed Hamiltonian cycles over `subset` (all ranks when empty), edge-disjoint under
  /// lane and switch-port capacities; greedy with a few search orders, the best kept.
  std::vector<std::vector<int>> rings(int max_rings, bool bidirectional,
                                      const std::vector<int>& subset = {}) const;
  /// The most edge-disjoint rings over all ranks the lanes and switch ports could allow.
  int ring_bound() const;
  /// A path starting at `start` visiting every rank once over two-way connections, if found.
  std::optional<std::vector<int>> hamiltonian_path(int start) const;
  /// Shortest path a -> b (BFS, lowest-numbered ties) using only ranks in `allowed` (every rank
  /// when empty); empty when none. The path includes both ends.
  std::vector<int> shortest_path(int a, int b, const std::vector<int>& allowed = {}) const;
  /// BFS shortest-path tree from `root` over connections root-outwards (two-way when `sym`).
  Tree bfs_tree(int root, bool sym) const;
  /// A spanning tree over two-way connections with fan-out 2 where possible (BFS order).
  Tree binary_spanning_tree(int root) const;
  /// An injective map position -> rank such that every pattern edge (pos u, pos v) is linked
  /// both ways; pos 0 is `root` when root >= 0. Tries the identity (rotated to the root) first.
  std::optional<std::vector<int>> embed(int positions,
                                        const std::vector<std::pair<int, int>>& edges,
                                        int root = -1) const;

 private:
  const Topology& topology_;
  int n_;
  std::vector<std::vector<char>> adj_;
  std::vector<std::vector<int>> successors_;  // ascending ranks b with connected(a, b)
};

/// UserError for a baseline that cannot be built.
[[noreturn]] void reject(const std::string& reason);

}  // namespace ccsynth::synth::detail
