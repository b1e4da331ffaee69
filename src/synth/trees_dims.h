#pragma once
// The dimension-order split of the trees method (docs/trees.md "The dimension-order split"),
// internal to synth: a topology that is a Cartesian product of dimensions (rfs: ring x fully
// connected x switch) gets broadcast trees that cross the dimensions one after the other, with a
// mix of dimension orders chosen so that every dimension's ingress carries its share of the
// per-rank bound.

#include <vector>

#include "ccsynth/core/topology.h"
#include "ccsynth/synth/trees.h"

namespace ccsynth::synth::detail {

/// The dimensions of a product topology. Connections are classed by kind (link or switch) and
/// bandwidth; each class's connected components are its groups. It is a product when there are
/// 2 or 3 classes, every class's groups have one size >= 2, the sizes multiply to the rank
/// count, and every group is fully connected (a star reaches it) or a cycle (a ring).
struct TreeDimensions {
  /// groups[d]: the groups of dimension d; a ring's members in cycle order.
  std::vector<std::vector<std::vector<int>>> groups;
  std::vector<std::vector<int>> group_of;  // [d][rank]: index into groups[d]
  std::vector<std::vector<int>> position;  // [d][rank]: index in its group
  std::vector<bool> ring;                  // [d]: cycle (else fully connected)
  std::vector<double> ingress_mb_per_us;   // [d]: a rank's ingress bandwidth in dimension d
  int size(int d) const { return static_cast<int>(groups[d].front().size()); }
  int count() const { return static_cast<int>(groups.size()); }
  bool applies() const { return count() >= 2; }
};

/// The dimensions of `t`, or none (applies() false) where it is not such a product.
TreeDimensions tree_dimensions(const Topology& t);

/// A mix of dimension orders: trees_by_order[o] of the `trees` trees per root cross the
/// dimensions in orders[o].
struct DimsMix {
  int trees = 0;
  std::vector<std::vector<int>> orders;
  std::vector<int> trees_by_order;
  double us_per_mb = 0;  // busiest dimension's ingress per MB of a rank's data
};

/// The mix of orders that balances the dimensions' ingress best, with trees per root up to
/// kMaxDimsTrees dividing `chunks` (any when 0): of equally balanced mixes the fewest trees.
/// A rank's ingress in dimension d carries (size_d - 1) x (the product of the sizes of the
/// dimensions before d in the order) per unit of every rank's data. With `slowest_first`, only
/// the orders that start with the dimension of the least ingress bandwidth (the first of equals),
/// which then carries the least it can, size - 1 per unit (TreesOptions::slowest_dimension_first).
DimsMix best_dims_mix(const TreeDimensions& dims, int chunks, bool slowest_first = false);

/// The trees of `mix`: tree j of root r crosses the dimensions in its order, every rank reached
/// so far sending down its own group's tree (a star, or both ways round a ring, the antipode
/// from alternating sides). Fills parents and trees_per_root; trees.cc tallies the figures.
TreePacking dims_trees(const Topology& t, const TreeDimensions& dims, const DimsMix& mix);

/// Most trees per root best_dims_mix considers.
inline constexpr int kMaxDimsTrees = 32;

}  // namespace ccsynth::synth::detail
