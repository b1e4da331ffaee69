#pragma once
// The throughput method `trees` (docs/trees.md): every rank's data travels down rooted spanning
// out-trees packed onto the topology so that no link or switch port carries more than its share,
// aiming at the cut bound of allgather (ForestColl's spanning-tree packing). Switches are
// replaced by direct edges between their members whose use is charged to the members' ports (a
// port-constrained complete graph: every cut keeps exactly the switch's capacity), so the trees
// address switch members directly, as the Algorithm IR does. Each tree carries `pieces`
// consecutive chunks of its root, pipelined down the tree. Reducescatter is the inverse of an
// allgather packed on the transposed topology (in-trees), allreduce is reducescatter then
// allgather. On multi-node clusters each phase may instead be split hierarchically: an
// allgather across the nodes along rails (the ranks of one local index) then inside every node,
// so an allreduce becomes an in-node reducescatter, a cross-node allreduce of each shard, and an
// in-node allgather.

#include <cstdint>
#include <string>
#include <vector>

#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/collective.h"
#include "ccsynth/core/topology.h"

namespace ccsynth::synth {

/// A packing of `trees_per_root` spanning out-trees for every rank of a topology.
struct TreePacking {
  int num_ranks = 0;
  int trees_per_root = 0;
  /// parents[r * trees_per_root + j][v]: v's parent in root r's j-th tree (-1 at r itself).
  std::vector<std::vector<int>> parents;
  /// The packing's bandwidth time per MB of one tree's data: the largest over links and switch
  /// port directions of (trees using it) / (its bandwidth in MB per us).
  double bottleneck_us_per_mb = 0;
  /// The per-rank ingress / egress lower bound of the same quantity (trees must enter and
  /// leave every rank); bottleneck / this is the packing's ratio to that bound.
  double port_bound_us_per_mb = 0;
  int max_depth = 0;  // deepest tree, in edges
};

/// Options of pack_trees.
struct PackOptions {
  bool transposed = false;  // pack in-trees (every edge reversed), as reducescatter needs
  int refine_passes = 4;    // rip-up-and-reroute passes over every tree after the first fill
  /// Growing a tree, an edge's price is raised by this share per level of depth: > 0 trades
  /// some balance for shallower trees (shorter pipelines).
  double depth_weight = 0.0;
  /// Between nodes, switch edges only from node i to node i + 1 (mod nodes) and between ports
  /// of the same local index ("rails"): every port then exchanges bytes with one peer port per
  /// direction, so no transfer is held back by a busier port at its other end. UserError when
  /// that leaves ranks unreachable.
  bool rails = false;
  /// Pack among these ranks only (the result's parents use their indices 0..size-1); empty:
  /// every rank. When they all lie in one node, only that node's links and the switches that
  /// join no other node are used (no NIC round trip).
  std::vector<int> members{};
};

/// Packs `trees_per_root` spanning out-trees per rank greedily against an exponential congestion
/// price per resource (link, switch port direction), then re-routes every tree against the
/// others' load `refine_passes` times. Throws UserError when trees_per_root < 1.
TreePacking pack_trees(const Topology& topology, int trees_per_root, const PackOptions& options);

/// Trees per root the method uses when the chunk count allows: the count in 1..max_trees whose
/// packing has the smallest bottleneck per byte of a rank's data (the fewest on ties within
/// 0.5%); max_trees 0 means 8, or 2 above 256 ranks.
int best_trees_per_root(const Topology& topology, int max_trees = 0);

/// Trees per root of the spray split (TreesSplit::kSpray) that best balance a rank's in-node
/// and cross-node ports (the fewest of equally balanced ones, up to 64), or 0 where the split
/// does not apply. The chunks per rank should be a multiple of it.
int spray_trees_per_root(const Topology& topology);

/// Trees per root of the dimension-order split (TreesSplit::kDims): the fewest (up to 32) whose
/// mix of dimension orders balances the dimensions' ingress best, or 0 where the topology is
/// not a product of 2 or 3 dimensions. The chunks per rank should be a multiple of it.
int dims_trees_per_root(const Topology& topology);

/// The method's default chunks per rank: best_trees_per_root() x 4 pipeline pieces, or x 1
/// above 256 ranks.
int default_chunks_per_rank(const Topology& topology);

/// Options of the trees method.
struct TreesOptions {
  int trees_per_root = 0;  // 0: the divisor of the chunk count up to 8 that packs best
  int refine_passes = 4;
  int64_t bytes = int64_t{1} << 20;  // per-rank size the ops' start times are estimated for
  /// PackOptions::rails: 1 on, 0 off, -1 (default) on where a switch joins 3 or more nodes
  /// (uses_rails_by_default).
  int rails = -1;
  /// TreesSplit: -1 (default) whichever of those that apply packs fastest, 0 flat, 1
  /// hierarchical, 2 spray, 3 dimension order, 4 joint. UserError for 1 or 2 unless the
  /// topology has 2 or more nodes of equal size >= 2, for 2 unless each node has its own
  /// switch, faster than a switch over all ranks with a port per rank, for 3 unless the
  /// topology is a product of 2 or 3 dimensions (tree_dimensions in docs/trees.md) and for 4
  /// unless the collective is an allreduce.
  int split = -1;
  /// With the dimension-order split (split 3, which it needs: UserError otherwise), every tree
  /// crosses the dimension of least ingress bandwidth first, the others in the mix that
  /// balances them. In a reduction's in-trees that hop is the last, into the root: it waits
  /// for the slices reduced over the other dimensions, so it gets the least load and slack to
  /// start late (docs/trees.md "The dimension-order split").
  bool slowest_dimension_first = false;
};

/// How the trees method splits a collective (docs/trees.md "The hierarchical split").
enum class TreesSplit {
  kFlat,          // trees over all ranks (allreduce: reducescatter then allgather)
  kHierarchical,  // allgather along rails across the nodes, then inside every node (reduce-
                  // scatter: the inverse; allreduce: one then the other)
  kSpray,  // one tree per piece: a root's node peers and rail peers directly, the rail peers'
           // node peers through them, some of those straight from the root, as many as
           // balance the in-node and the cross-node ports (docs/trees.md "The spray split")
  kDims,   // on a product of dimensions (rfs: ring x fully connected x switch), trees that
           // cross the dimensions one after the other, in a mix of orders that balances every
           // dimension's ingress (docs/trees.md "The dimension-order split")
  kJoint,  // allreduce: flat trees whose reducescatter and allgather are packed together and
           // overlap slice by slice on channels of their own (docs/trees.md "The joint
           // allreduce")
};

/// Whether some switch of `topology` joins ranks of 3 or more nodes: there rails (a ring of
/// nodes, port to port) let every NIC port exchange bytes with one peer port per direction,
/// which the simulator's equal port sharing rewards (ndv2x4 allgather at 1 GiB: 1.001x the
/// bound with rails, 1.26x without).
bool uses_rails_by_default(const Topology& topology);

/// What synthesize_trees made, with the packing's figures for the stats.
struct TreesResult {
  Algorithm algorithm;
  int trees_per_root = 0;  // hierarchical split: of the cross-node phase
  int pieces = 0;          // chunks each tree carries (pipelined)
  bool rails = false;      // packed with PackOptions::rails
  /// Packing bottleneck / per-rank port bound (worst phase; the joint split: the bottleneck
  /// of both phases' bytes over one phase's bound).
  double bottleneck_ratio = 0;
  int max_depth = 0;  // deepest tree of any phase
  /// Bandwidth time of the packing at TreesOptions::bytes (every phase's bottleneck resource
  /// busy all the time), and the list schedule's makespan that set the ops' start times.
  double packed_us = 0;
  double estimate_us = 0;
  /// The split used, and the packed time of each split considered (0 where one was not
  /// applicable or not packed).
  TreesSplit split = TreesSplit::kFlat;
  double flat_packed_us = 0;
  double hier_packed_us = 0;
  double spray_packed_us = 0;
  double dims_packed_us = 0;
  double joint_packed_us = 0;
};

/// Allgather, reducescatter or allreduce with collective.chunks_per_rank chunks per rank split
/// over trees_per_root trees (which must divide it). Each phase keeps, of the packings with
/// depth weights 0, 0.1 and 0.5 (only 0 above 256 ranks), the one whose list schedule at
/// TreesOptions::bytes ends first. UserError for other collectives, a rank
/// count that differs from the topology's, or trees that do not divide the chunks.
TreesResult synthesize_trees(const Topology& topology, const Collective& collective,
                             const TreesOptions& options);

}  // namespace ccsynth::synth
