// Baseline algorithms as Algorithms (docs/baselines.md). Every builder emits ops over single-hop
// connections only; combining variants come from inversion and RS + AG (SCCL sec. 3.5).

#include "ccsynth/synth/baselines.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "baselines_detail.h"
#include "ccsynth/synth/combine.h"

namespace ccsynth::synth {

using detail::Block;
using detail::emit;
using detail::Net;
using detail::Range;
using detail::ranges_of;
using detail::reject;
using detail::split;
using detail::Tree;

namespace {

using CK = CollectiveKind;

constexpr BaselineKind kAllKinds[] = {
    BaselineKind::kRing,        BaselineKind::kDirect, BaselineKind::kRecursiveDoubling,
    BaselineKind::kRhd,         BaselineKind::kDbt,    BaselineKind::kHier,
    BaselineKind::kTwoStep,     BaselineKind::kChain,  BaselineKind::kTree,
    BaselineKind::kCooperative,
};

// Which collectives each baseline builds (docs/baselines.md has the same table).
std::vector<CK> supported(BaselineKind kind) {
  switch (kind) {
    case BaselineKind::kRing:
      return {CK::kAllGather, CK::kReduceScatter, CK::kAllReduce, CK::kAllToAll};
    case BaselineKind::kDirect:
      return {CK::kAllGather, CK::kReduceScatter, CK::kAllReduce, CK::kAllToAll, CK::kBroadcast,
              CK::kReduce,    CK::kGather,        CK::kScatter,   CK::kCustom};
    case BaselineKind::kRecursiveDoubling:
    case BaselineKind::kRhd:
    case BaselineKind::kHier: return {CK::kAllGather, CK::kReduceScatter, CK::kAllReduce};
    case BaselineKind::kDbt:
    case BaselineKind::kTree: return {CK::kAllReduce, CK::kBroadcast, CK::kReduce};
    case BaselineKind::kTwoStep: return {CK::kAllToAll};
    case BaselineKind::kCooperative: return {CK::kCustom};
    case BaselineKind::kChain:
      return {CK::kAllReduce, CK::kBroadcast, CK::kReduce, CK::kGather, CK::kScatter};
  }
  return {};
}

// Chunks of rank q's share: allgather/gather input, reducescatter output, scatter destination.
Block rank_block(int q, int chunks) { return {{q * chunks, chunks}}; }

// Chunks of alltoall traffic s -> d (core/collective.h numbering).
Range pair_range(int s, int d, int num_ranks, int chunks) {
  return {(s * num_ranks + d) * chunks, chunks};
}

Algorithm empty_algorithm(const Collective& c, const Topology& t, CK kind,
                          const std::string& name) {
  Algorithm a;
  a.name = name;
  a.topology = t.name;
  a.collective =
      kind == CK::kCustom ? c : make_collective(kind, c.num_ranks, c.chunks_per_rank, c.root);
  return a;
}

// Channel hint for ops first.. (one channel per ring or tree, as NCCL gives each its own).
void set_channel(Algorithm& a, size_t first, int channel) {
  for (size_t i = first; i < a.ops.size(); ++i) a.ops[i].channel = channel;
}

// ---------------------------------------------------------------------------------------------
// Ring primitives.

// Ring allgather over `ring` (ranks in ring order): at step s the rank at position i forwards
// the block of position i - s to position i + 1, so each block travels m - 1 hops.
void ring_allgather(Algorithm& a, const std::vector<int>& ring, const std::vector<Block>& blocks,
                    int step0) {
  const int m = static_cast<int>(ring.size());
  for (int s = 0; s + 1 < m; ++s)
    for (int i = 0; i < m; ++i)
      emit(a, blocks[((i - s) % m + m) % m], ring[i], ring[(i + 1) % m], OpKind::kCopy, step0 + s);
}

std::vector<int> reversed(std::vector<int> ring) {
  std::reverse(ring.begin(), ring.end());
  return ring;
}

// The logical ring in rank order that topology-unaware libraries run (TACOS sec. V.A: "a
// logical Ring mapped over the physical topology"), followed by its reverse when bidirectional.
std::vector<std::vector<int>> rank_order_rings(int num_ranks, bool bidirectional) {
  std::vector<int> ring(num_ranks);
  std::iota(ring.begin(), ring.end(), 0);
  if (!bidirectional) return {ring};
  return {ring, reversed(ring)};
}

// The rings kRing uses: as many as requested/available, no more than chunks per rank.
std::vector<std::vector<int>> choose_rings(const Collective& c, const Net& net,
                                           const BaselineOptions& o) {
  if (o.rings < 0) reject("rings must be >= 0");
  if (o.rings > c.chunks_per_rank) {
    reject(std::to_string(o.rings) + " rings need at least " + std::to_string(o.rings) +
           " chunks per rank to spread over them (got " + std::to_string(c.chunks_per_rank) + ")");
  }
  auto rings = !o.ring_list.empty() ? o.ring_list
               : o.end_to_end       ? rank_order_rings(c.num_ranks, o.bidirectional)
                                    : net.rings(o.rings, o.bidirectional);
  if (o.rings > 0 && static_cast<int>(rings.size()) > o.rings) rings.resize(o.rings);
  if (rings.empty()) {
    reject("topology " + net.topology().name +
           ": the ring search found no Hamiltonian ring over its connections" +
           std::string(o.bidirectional ? " usable in both directions" : ""));
  }
  if (o.rings > 0 && static_cast<int>(rings.size()) < o.rings) {
    reject("only " + std::to_string(rings.size()) + " edge-disjoint rings fit " +
           net.topology().name + "'s lanes, " + std::to_string(o.rings) + " requested");
  }
  rings.resize(std::min<size_t>(rings.size(), c.chunks_per_rank));
  return rings;
}

// Multi-ring allgather: ring j carries part j of every rank's chunks. With `reverse` every ring
// runs backwards (used to build reducescatters by inversion on the forward links).
Algorithm ring_allgather_alg(const Collective& c, const Topology& t,
                             const std::vector<std::vector<int>>& rings, bool reverse) {
  Algorithm a = empty_algorithm(c, t, CK::kAllGather, "ring");
  const int C = c.chunks_per_rank;
  const auto parts = split({0, C}, static_cast<int>(rings.size()));
  for (size_t j = 0; j < parts.size(); ++j) {
    const auto ring = reverse ? reversed(rings[j]) : rings[j];
    std::vector<Block> blocks;
    for (int q : ring) blocks.push_back({{q * C + parts[j].first, parts[j].count}});
    const size_t first = a.ops.size();
    ring_allgather(a, ring, blocks, 0);
    if (parts.size() > 1) set_channel(a, first, static_cast<int>(j));
  }
  return a;
}

// Ring alltoall: every chunk rides its ring from source to destination; at step t the rank at
// position i forwards what position i - t sent to positions more than t hops away.
Algorithm ring_alltoall(const Collective& c, const Topology& t,
                        const std::vector<std::vector<int>>& rings) {
  Algorithm a = empty_algorithm(c, t, CK::kAllToAll, "ring");
  const int R = c.num_ranks, C = c.chunks_per_rank;
  const auto parts = split({0, C}, static_cast<int>(rings.size()));
  for (size_t j = 0; j < parts.size(); ++j) {
    const auto& ring = rings[j];
    const size_t first = a.ops.size();
    for (int step = 0; step + 1 < R; ++step)
      for (int i = 0; i < R; ++i) {
        const int o = ((i - step) % R + R) % R;
        for (int hops = step + 1; hops < R; ++hops) {
          const int d = (o + hops) % R;
          Range r = pair_range(ring[o], ring[d], R, C);
          emit(a, {{r.first + parts[j].first, parts[j].count}}, ring[i], ring[(i + 1) % R],
               OpKind::kCopy, step);
        }
      }
    if (parts.size() > 1) set_channel(a, first, static_cast<int>(j));
  }
  return a;
}

Algorithm make_ring(const Collective& c, const Topology& t, const BaselineOptions& o) {
  const Net net(t);
  const auto rings = choose_rings(c, net, o);
  switch (c.kind) {
    case CK::kAllGather: return ring_allgather_alg(c, t, rings, false);
    case CK::kReduceScatter: return invert(ring_allgather_alg(c, t, rings, true));
    case CK::kAllReduce:
      return allreduce_from(invert(ring_allgather_alg(c, t, rings, true)),
                            ring_allgather_alg(c, t, rings, false));
    default: return ring_alltoall(c, t, rings);
  }
}

// ---------------------------------------------------------------------------------------------
// Pipelined trees (chain = a path-shaped tree). Pieces move independently: piece p leaves a
// rank one step after it arrived, so p enters step p + (hops so far).

void tree_broadcast(Algorithm& a, const Tree& tree, const std::vector<Range>& pieces, int step0) {
  for (size_t p = 0; p < pieces.size(); ++p)
    for (int v = 0; v < tree.num_ranks(); ++v)
      if (v != tree.root)
        emit(a, {pieces[p]}, tree.parent[v], v, OpKind::kCopy, step0 + p + tree.depth[v] - 1);
}

// Reduce towards the root: a rank of height h sends piece p at step p + h, after all its
// children (heights < h) delivered theirs.
void tree_reduce(Algorithm& a, const Tree& tree, const std::vector<Range>& pieces, int step0) {
  for (size_t p = 0; p < pieces.size(); ++p)
    for (int v = 0; v < tree.num_ranks(); ++v)
      if (v != tree.root)
        emit(a, {pieces[p]}, v, tree.parent[v], OpKind::kReduce, step0 + p + tree.height[v]);
}

// Allreduce = reduce up, broadcast down, pipelined: the root holds piece p fully reduced at the
// end of step p + H - 1 (H = its height) and sends it down at p + H.
void tree_allreduce(Algorithm& a, const Tree& tree, const std::vector<Range>& pieces) {
  tree_reduce(a, tree, pieces, 0);
  tree_broadcast(a, tree, pieces, tree.height[tree.root]);
}

// Broadcast, reduce or allreduce of the collective's chunks over `trees`, which split the data
// evenly (one tree: everything), each tree pipelined in `pipeline` pieces.
Algorithm tree_collective(const Collective& c, const Topology& t, const std::vector<Tree>& trees,
                          int pipeline, const std::string& name) {
  Algorithm a = empty_algorithm(c, t, c.kind, name);
  const int total = c.kind == CK::kAllReduce ? c.num_ranks * c.chunks_per_rank : c.chunks_per_rank;
  const auto halves = split({0, total}, static_cast<int>(trees.size()));
  for (size_t j = 0; j < halves.size(); ++j) {
    const auto pieces = split(halves[j], pipeline);
    const size_t first = a.ops.size();
    if (c.kind == CK::kBroadcast) tree_broadcast(a, trees[j], pieces, 0);
    if (c.kind == CK::kReduce) tree_reduce(a, trees[j], pieces, 0);
    if (c.kind == CK::kAllReduce) tree_allreduce(a, trees[j], pieces);
    if (trees.size() > 1) set_channel(a, first, static_cast<int>(j));
  }
  return a;
}

Tree path_tree(const std::vector<int>& path) {
  std::vector<int> parent(path.size(), -1);
  for (size_t i = 1; i < path.size(); ++i) parent[path[i]] = path[i - 1];
  return Tree::from_parents(path[0], parent);
}

// Chain scatter: the root sends the farthest rank's chunks first; each group moves one hop per
// step, so every link carries one group per step and all arrive at step m - 2.
Algorithm chain_scatter(const Collective& c, const Topology& t, const std::vector<int>& path) {
  Algorithm a = empty_algorithm(c, t, CK::kScatter, "chain");
  const int m = static_cast<int>(path.size());
  for (int j = 1; j < m; ++j)
    for (int h = 1; h <= j; ++h)
      emit(a, rank_block(path[j], c.chunks_per_rank), path[h - 1], path[h], OpKind::kCopy,
           (m - 1 - j) + (h - 1));
  return a;
}

Algorithm make_chain(const Collective& c, const Topology& t, const BaselineOptions& o) {
  const Net net(t);
  const auto path = net.hamiltonian_path(c.root);
  if (!path) {
    reject("topology " + t.name +
           " has no chain (Hamiltonian path over two-way connections) "
           "from rank " +
           std::to_string(c.root));
  }
  if (c.kind == CK::kScatter) return chain_scatter(c, t, *path);
  if (c.kind == CK::kGather) return invert(chain_scatter(c, t, *path));
  return tree_collective(c, t, {path_tree(*path)}, o.pipeline_chunks, "chain");
}

Algorithm make_tree(const Collective& c, const Topology& t, const BaselineOptions& o) {
  return tree_collective(c, t, {Net(t).binary_spanning_tree(c.root)}, o.pipeline_chunks, "tree");
}

// NCCL's binary tree over positions 0..n-1 (the double binary tree's first tree): a position's
// parent clears its lowest set bit and sets the next one (or just clears it past the end), so
// odd positions are leaves and position 0 is the root.
int btree_parent(int q, int n) {
  if (q == 0) return -1;
  const int bit = q & -q;
  const int up = (q ^ bit) | (bit << 1);
  return up < n ? up : q ^ bit;
}

Algorithm make_dbt(const Collective& c, const Topology& t, const BaselineOptions& o) {
  const int n = c.num_ranks;
  const bool rooted = c.kind != CK::kAllReduce;
  // Second tree: mirrored positions (its leaves are the first tree's inner ranks) for
  // allreduce; for rooted collectives the non-root positions rotate by one so both trees share
  // the root.
  std::vector<int> to_b(n);
  for (int q = 0; q < n; ++q) to_b[q] = rooted ? (q == 0 ? 0 : q % (n - 1) + 1) : n - 1 - q;
  std::vector<int> parent_a(n), parent_b(n);
  for (int q = 0; q < n; ++q) {
    parent_a[q] = btree_parent(q, n);
    parent_b[to_b[q]] = parent_a[q] < 0 ? -1 : to_b[parent_a[q]];
  }
  std::vector<std::pair<int, int>> edges;
  for (int q = 0; q < n; ++q) {
    if (parent_a[q] >= 0) edges.push_back({q, parent_a[q]});
    if (parent_b[q] >= 0) edges.push_back({q, parent_b[q]});
  }
  // End to end: tree positions are ranks (NCCL's and ASTRA-sim's trees over rank indices),
  // neighbours without a connection reached through the network.
  std::optional<std::vector<int>> map;
  if (o.end_to_end && (!rooted || c.root == 0)) {
    map.emplace(n);
    std::iota(map->begin(), map->end(), 0);
  } else {
    map = Net(t).embed(n, edges, rooted ? c.root : -1);
  }
  if (!map) {
    reject(
        "the double binary tree needs two-way connections between tree neighbours, and no "
        "placement of its ranks on " +
        t.name + " has them all (try tree or ring)");
  }
  std::vector<int> rank_parent_a(n), rank_parent_b(n);
  for (int q = 0; q < n; ++q) {
    rank_parent_a[(*map)[q]] = parent_a[q] < 0 ? -1 : (*map)[parent_a[q]];
    rank_parent_b[(*map)[q]] = parent_b[q] < 0 ? -1 : (*map)[parent_b[q]];
  }
  const int root_b = (*map)[to_b[0]];
  return tree_collective(
      c, t,
      {Tree::from_parents((*map)[0], rank_parent_a), Tree::from_parents(root_b, rank_parent_b)},
      o.pipeline_chunks, "dbt");
}

// ---------------------------------------------------------------------------------------------
// Recursive doubling and halving-doubling.

// Positions 0..n-1 placed on ranks so that every pair at distance 2^k (XOR) is linked.
std::vector<int> hypercube_placement(const Collective& c, const Topology& t) {
  const int n = c.num_ranks;
  if (n < 2 || (n & (n - 1)) != 0) {
    reject("recursive doubling/halving needs a power-of-two number of ranks, got " +
           std::to_string(n));
  }
  std::vector<std::pair<int, int>> edges;
  for (int i = 0; i < n; ++i)
    for (int bit = 1; bit < n; bit <<= 1)
      if (i < (i ^ bit)) edges.push_back({i, i ^ bit});
  const auto map = Net(t).embed(n, edges);
  if (!map) {
    reject(
        "recursive doubling exchanges between ranks whose numbers differ in one bit; no "
        "placement of the ranks on " +
        t.name +
        " has all those pairs linked (try ring or "
        "direct)");
  }
  return *map;
}

// Recursive-doubling allgather: at step k position i swaps with i ^ 2^k everything it holds,
// the chunks of the 2^k positions sharing its high bits (log2 n steps).
Algorithm rd_allgather(const Collective& c, const Topology& t, const std::vector<int>& map) {
  Algorithm a = empty_algorithm(c, t, CK::kAllGather, "rd");
  const int n = c.num_ranks, C = c.chunks_per_rank;
  for (int k = 0, bit = 1; bit < n; ++k, bit <<= 1)
    for (int i = 0; i < n; ++i) {
      std::vector<int> ids;
      for (int p = i & ~(bit - 1); p < (i & ~(bit - 1)) + bit; ++p)
        for (int x = 0; x < C; ++x) ids.push_back(map[p] * C + x);
      emit(a, ranges_of(ids), map[i], map[i ^ bit], OpKind::kCopy, k);
    }
  return a;
}

// Recursive-doubling allreduce: at step k position i reduces its whole buffer into i ^ 2^k
// (both directions in one step; each reads the start-of-step value).
Algorithm rd_allreduce(const Collective& c, const Topology& t, const std::vector<int>& map) {
  Algorithm a = empty_algorithm(c, t, CK::kAllReduce, "rd");
  const int n = c.num_ranks;
  for (int k = 0, bit = 1; bit < n; ++k, bit <<= 1)
    for (int i = 0; i < n; ++i)
      emit(a, {{0, n * c.chunks_per_rank}}, map[i], map[i ^ bit], OpKind::kReduce, k);
  return a;
}

Algorithm make_recursive(BaselineKind kind, const Collective& c, const Topology& t) {
  const auto map = hypercube_placement(c, t);
  Algorithm ag = rd_allgather(c, t, map);
  // The inverse of recursive doubling is recursive halving (largest distance first).
  if (c.kind == CK::kAllGather) return ag;
  if (c.kind == CK::kReduceScatter) return invert(ag);
  if (kind == BaselineKind::kRecursiveDoubling) return rd_allreduce(c, t, map);
  return allreduce_from(invert(ag), ag);  // Rabenseifner: halving RS, doubling AG
}

// ---------------------------------------------------------------------------------------------
// Direct (all pairs, relayed along shortest paths where ranks are not adjacent).

// Sends `block` hop by hop along `path`, the first hop at step0.
void route(Algorithm& a, const Block& block, const std::vector<int>& path, int step0) {
  for (size_t h = 1; h < path.size(); ++h)
    emit(a, block, path[h - 1], path[h], OpKind::kCopy, step0 + static_cast<int>(h) - 1);
}

void tree_send(Algorithm& a, const Tree& tree, const Block& block) {
  for (int v = 0; v < tree.num_ranks(); ++v)
    if (v != tree.root) emit(a, block, tree.parent[v], v, OpKind::kCopy, tree.depth[v] - 1);
}

std::vector<int> tree_path(const Tree& tree, int v) {
  std::vector<int> path;
  for (; v != -1; v = tree.parent[v]) path.push_back(v);
  std::reverse(path.begin(), path.end());
  return path;
}

// Shortest path a -> b, within `within` when possible, else over the whole topology.
std::vector<int> path_or_reject(const Net& net, int a, int b, const std::vector<int>& within = {}) {
  auto path = net.shortest_path(a, b, within);
  if (path.empty() && !within.empty()) path = net.shortest_path(a, b);
  if (path.empty()) reject("no path from rank " + std::to_string(a) + " to " + std::to_string(b));
  return path;
}

// The chunks of a point-to-point custom collective (every chunk starts at one slot and ends at
// one slot, like AllToNext) grouped by (source rank, destination rank), ascending.
std::map<std::pair<int, int>, std::vector<int>> point_to_point(const Collective& c) {
  std::map<std::pair<int, int>, std::vector<int>> pairs;
  for (int k = 0; k < c.num_chunks(); ++k) {
    const ChunkSpec& spec = c.chunks[k];
    if (c.combining || spec.pre.size() != 1 || spec.post.size() != 1) {
      reject(c.name +
             " is not point-to-point: every chunk must start at one slot and end at one slot "
             "(chunk " +
             std::to_string(k) + ")");
    }
    if (spec.pre[0].rank != spec.post[0].rank)
      pairs[{spec.pre[0].rank, spec.post[0].rank}].push_back(k);
  }
  return pairs;
}

// Direct for a point-to-point custom collective: each rank's chunks for one destination travel
// together along a shortest path (AllToNext's naive version, MSCCLang sec. 7.4).
Algorithm direct_custom(const Collective& c, const Topology& t) {
  const Net net(t);
  Algorithm a = empty_algorithm(c, t, CK::kCustom, "direct");
  for (const auto& [pair, chunks] : point_to_point(c))
    route(a, ranges_of(chunks), path_or_reject(net, pair.first, pair.second), 0);
  return a;
}

// The traffic shapes a direct algorithm is made of; the other collectives follow by inversion
// (reduce-scatter, reduce, gather) and composition (allreduce = reduce-scatter + allgather).
struct DirectShapes {
  std::function<Algorithm()> allgather, broadcast, scatter, alltoall, custom;
};

Algorithm compose_direct(CK kind, const DirectShapes& s) {
  switch (kind) {
    case CK::kAllGather: return s.allgather();
    case CK::kReduceScatter: return invert(s.allgather());
    case CK::kAllReduce: return allreduce_from(invert(s.allgather()), s.allgather());
    case CK::kBroadcast: return s.broadcast();
    case CK::kReduce: return invert(s.broadcast());
    case CK::kScatter: return s.scatter();
    case CK::kGather: return invert(s.scatter());
    case CK::kAllToAll: return s.alltoall();
    default: return s.custom();
  }
}

// Direct end to end (ASTRA-sim's Direct, NCCL's p2p): every block goes straight from its
// source to each destination in one step; the network routes sends between unconnected ranks.
Algorithm direct_end_to_end(const Collective& c, const Topology& t) {
  const int R = c.num_ranks, C = c.chunks_per_rank;
  auto fan_out = [&](CK kind, const auto& block_of_pair) {
    Algorithm a = empty_algorithm(c, t, kind, "direct");
    for (int s = 0; s < R; ++s)
      for (int d = 0; d < R; ++d)
        if (s != d) {
          if (auto block = block_of_pair(s, d)) emit(a, *block, s, d, OpKind::kCopy, 0);
        }
    return a;
  };
  auto from_root = [&](int s, const Block& block) {
    return s == c.root ? std::optional<Block>(block) : std::nullopt;
  };
  DirectShapes shapes;
  shapes.allgather = [&] {
    return fan_out(CK::kAllGather, [&](int s, int) { return std::optional(rank_block(s, C)); });
  };
  shapes.broadcast = [&] {
    return fan_out(CK::kBroadcast, [&](int s, int) { return from_root(s, {{0, C}}); });
  };
  shapes.scatter = [&] {
    return fan_out(CK::kScatter, [&](int s, int d) { return from_root(s, rank_block(d, C)); });
  };
  shapes.alltoall = [&] {
    return fan_out(CK::kAllToAll,
                   [&](int s, int d) { return std::optional(Block{pair_range(s, d, R, C)}); });
  };
  shapes.custom = [&] {
    Algorithm a = empty_algorithm(c, t, CK::kCustom, "direct");
    for (const auto& [pair, chunks] : point_to_point(c))
      emit(a, ranges_of(chunks), pair.first, pair.second, OpKind::kCopy, 0);
    return a;
  };
  return compose_direct(c.kind, shapes);
}

Algorithm make_direct(const Collective& c, const Topology& t, const BaselineOptions& o) {
  if (o.end_to_end) return direct_end_to_end(c, t);
  const Net net(t);
  const int R = c.num_ranks, C = c.chunks_per_rank;
  DirectShapes shapes;
  shapes.allgather = [&] {
    Algorithm a = empty_algorithm(c, t, CK::kAllGather, "direct");
    for (int q = 0; q < R; ++q) tree_send(a, net.bfs_tree(q, true), rank_block(q, C));
    return a;
  };
  shapes.broadcast = [&] {
    Algorithm a = empty_algorithm(c, t, CK::kBroadcast, "direct");
    tree_send(a, net.bfs_tree(c.root, true), {{0, C}});
    return a;
  };
  shapes.scatter = [&] {
    Algorithm a = empty_algorithm(c, t, CK::kScatter, "direct");
    const Tree tree = net.bfs_tree(c.root, true);
    for (int d = 0; d < R; ++d)
      if (d != c.root) route(a, rank_block(d, C), tree_path(tree, d), 0);
    return a;
  };
  shapes.alltoall = [&] {
    Algorithm a = empty_algorithm(c, t, CK::kAllToAll, "direct");
    for (int s = 0; s < R; ++s)
      for (int d = 0; d < R; ++d)
        if (s != d) route(a, {pair_range(s, d, R, C)}, path_or_reject(net, s, d), 0);
    return a;
  };
  shapes.custom = [&] { return direct_custom(c, t); };
  return compose_direct(c.kind, shapes);
}

// ---------------------------------------------------------------------------------------------
// Multi-node: hierarchical and two-step.

struct NodeLayout {
  int nodes = 0;
  int per_node = 0;
  std::vector<int> local;  // local index of every rank within its node
};

NodeLayout node_layout(const Topology& t) {
  if (t.nodes.size() < 2) {
    reject("needs a multi-node topology (" + t.name + " has " + std::to_string(t.nodes.size()) +
           " node)");
  }
  NodeLayout l{static_cast<int>(t.nodes.size()), static_cast<int>(t.nodes[0].size()),
               std::vector<int>(t.num_ranks, 0)};
  for (const auto& node : t.nodes) {
    if (static_cast<int>(node.size()) != l.per_node) reject("needs nodes of equal size");
    for (size_t g = 0; g < node.size(); ++g) l.local[node[g]] = static_cast<int>(g);
  }
  return l;
}

std::vector<int> one_ring(const Net& net, const std::vector<int>& subset) {
  if (subset.size() < 2) return subset;
  auto rings = net.rings(1, false, subset);
  return rings.empty() ? std::vector<int>{} : rings[0];
}

// The rings and shares of a hierarchical allgather. A rail is the set of ranks with one local
// index, one per node; rails with a ring across the nodes are leaders' rails.
struct HierPlan {
  NodeLayout layout;
  std::vector<std::vector<int>> node_rings;  // one ring inside every node
  std::vector<std::vector<int>> rails;       // ring across the nodes per leader index
  std::vector<int> leaders;                  // local indices with a rail ring
  bool all_rails = false;                    // every local index is a leader
  // share[i][n]: chunks of node n that leader i carries across the nodes: with all rails the
  // leader's own chunks, otherwise an even cut of the node's chunks.
  std::vector<std::vector<std::vector<int>>> share;
};

void plan_rings(const Topology& t, bool reverse, HierPlan& plan) {
  const Net net(t);
  for (const auto& node : t.nodes) {
    auto ring = one_ring(net, node);
    if (ring.empty()) reject("a node of " + t.name + " has no ring inside it");
    plan.node_rings.push_back(reverse ? reversed(ring) : ring);
  }
  for (int g = 0; g < plan.layout.per_node; ++g) {
    std::vector<int> rail;
    for (const auto& node : t.nodes) rail.push_back(node[g]);
    auto ring = one_ring(net, rail);
    if (ring.empty()) continue;
    plan.leaders.push_back(g);
    plan.rails.push_back(reverse ? reversed(ring) : ring);
  }
  if (plan.leaders.empty()) reject("no ranks of equal local index form a ring across the nodes");
  plan.all_rails = static_cast<int>(plan.leaders.size()) == plan.layout.per_node;
}

void plan_shares(const Topology& t, int C, HierPlan& plan) {
  const int leaders = static_cast<int>(plan.leaders.size());
  plan.share.assign(leaders, std::vector<std::vector<int>>(plan.layout.nodes));
  for (int n = 0; n < plan.layout.nodes; ++n) {
    std::vector<int> ids;
    for (int r : t.nodes[n])
      for (int x = 0; x < C; ++x) ids.push_back(r * C + x);
    std::sort(ids.begin(), ids.end());
    const auto cuts = split({0, static_cast<int>(ids.size())}, leaders);
    for (int i = 0; i < leaders; ++i) {
      auto& share = plan.share[i][n];
      if (plan.all_rails) {
        for (int x = 0; x < C; ++x) share.push_back(t.nodes[n][plan.leaders[i]] * C + x);
      } else if (i < static_cast<int>(cuts.size())) {
        share.assign(ids.begin() + cuts[i].first, ids.begin() + cuts[i].first + cuts[i].count);
      }
    }
  }
}

HierPlan hier_plan(const Collective& c, const Topology& t, bool reverse) {
  HierPlan plan;
  plan.layout = node_layout(t);
  plan_rings(t, reverse, plan);
  plan_shares(t, c.chunks_per_rank, plan);
  return plan;
}

// What rank r of node n spreads inside its node in the last phase: a leader's shares of the
// other nodes (and of its own node with all rails, where no first phase spread it).
Block leader_block(const HierPlan& plan, int n, int r) {
  const auto it = std::find(plan.leaders.begin(), plan.leaders.end(), plan.layout.local[r]);
  if (it == plan.leaders.end()) return {};
  std::vector<int> ids;
  for (int m = 0; m < plan.layout.nodes; ++m) {
    if (!plan.all_rails && m == n) continue;
    const auto& s = plan.share[it - plan.leaders.begin()][m];
    ids.insert(ids.end(), s.begin(), s.end());
  }
  return ranges_of(ids);
}

// Hierarchical allgather. With a ring across the nodes for every local index (rails): each rail
// gathers its ranks' chunks, then each node's ring spreads them (N - 1 + G - 1 steps). Otherwise
// only the leader local indices with a cross-node ring talk between nodes: nodes first gather
// internally, leaders exchange one share each of their node's chunks, and the node rings spread
// what leaders received (G - 1 + N - 1 + G - 1 steps). `reverse` runs every ring backwards.
Algorithm hier_allgather(const Collective& c, const Topology& t, bool reverse) {
  const HierPlan plan = hier_plan(c, t, reverse);
  const NodeLayout& L = plan.layout;
  Algorithm a = empty_algorithm(c, t, CK::kAllGather, "hier");
  int step = 0;
  if (!plan.all_rails && L.per_node > 1) {  // phase A: every node gathers its own chunks
    for (const auto& ring : plan.node_rings) {
      std::vector<Block> blocks;
      for (int r : ring) blocks.push_back(rank_block(r, c.chunks_per_rank));
      ring_allgather(a, ring, blocks, step);
    }
    step += L.per_node - 1;
  }
  for (size_t i = 0; i < plan.rails.size(); ++i) {  // phase B: leaders exchange across nodes
    std::vector<Block> blocks;
    for (int r : plan.rails[i]) blocks.push_back(ranges_of(plan.share[i][t.node_of(r)]));
    ring_allgather(a, plan.rails[i], blocks, step);
  }
  step += L.nodes - 1;
  for (int n = 0; n < L.nodes; ++n) {  // phase C: spread what leaders received
    std::vector<Block> blocks;
    for (int r : plan.node_rings[n]) blocks.push_back(leader_block(plan, n, r));
    ring_allgather(a, plan.node_rings[n], blocks, step);
  }
  return a;
}

// MSCCLang's hierarchical allreduce (sec. 2, figs. 1 and 3; sec. 7.2) on N nodes of G ranks where
// every local index has a rail. The R*C chunks form G groups of N*C consecutive chunks; piece n
// of group g (C chunks) ends, fully reduced, on rank g of node n:
//   1. every node ring reduce-scatters whole groups, group g onto local index g (G - 1 steps,
//      channel 0; the paper's ReduceScatter(local_ranks, 0, N) with aggregated N-chunk sends),
//   2. rail g reduce-scatters then allgathers group g's pieces across the nodes (2(N - 1) steps,
//      channel 1),
//   3. every node ring allgathers the groups (G - 1 steps, channel 2).
// Like the paper's parallelize(N), each group moving inside a node is cut into `parallel` parts,
// part q on channels 3q, 3q + 2 (phases 1 and 3), so the parts get their own threadblocks.
// Differences from the paper: ring orders come from the ring search instead of rank order, and
// the parts of the intra-node phases share the rank's one NVSwitch port in the simulator.
Algorithm hier_allreduce(const Collective& c, const Topology& t, const HierPlan& plan,
                         int parallel) {
  const NodeLayout& L = plan.layout;
  const int N = L.nodes, G = L.per_node, C = c.chunks_per_rank;
  Algorithm a = empty_algorithm(c, t, CK::kAllReduce, "hier");
  auto group = [&](int r) { return Range{L.local[r] * N * C, N * C}; };
  auto piece = [&](int r) { return Block{{L.local[r] * N * C + t.node_of(r) * C, C}}; };
  // Phases 1 and 3: at step s, position i of the node ring reduces into (or copies to)
  // position i + 1 the group of position i - s + 1 (reduce) or i - s (copy), so a
  // reduce-scatter leaves group g on its owner after G - 1 steps.
  auto node_rings = [&](OpKind kind, int step0, int channel) {
    for (const auto& ring : plan.node_rings)
      for (int s = 0; s + 1 < G; ++s)
        for (int i = 0; i < G; ++i) {
          const int owner = ring[((i - s + (kind == OpKind::kReduce ? -1 : 0)) % G + G) % G];
          const auto parts = split(group(owner), parallel);
          for (size_t q = 0; q < parts.size(); ++q) {
            const size_t first = a.ops.size();
            emit(a, {parts[q]}, ring[i], ring[(i + 1) % G], kind, step0 + s);
            set_channel(a, first, 3 * static_cast<int>(q) + channel);
          }
        }
  };
  node_rings(OpKind::kReduce, 0, 0);
  // Phase 2 on channel 1: reduce-scatter then allgather of the pieces along each rail.
  const size_t rail_first = a.ops.size();
  for (const auto& rail : plan.rails) {
    std::vector<Block> blocks;
    for (int r : rail) blocks.push_back(piece(r));
    for (int s = 0; s + 1 < N; ++s)
      for (int i = 0; i < N; ++i)
        emit(a, blocks[((i - s - 1) % N + N) % N], rail[i], rail[(i + 1) % N], OpKind::kReduce,
             G - 1 + s);
    ring_allgather(a, rail, blocks, G - 1 + N - 1);
  }
  set_channel(a, rail_first, 1);
  node_rings(OpKind::kCopy, G - 1 + 2 * (N - 1), 2);
  return a;
}

Algorithm make_hier(const Collective& c, const Topology& t, const BaselineOptions& o) {
  if (c.kind == CK::kAllGather) return hier_allgather(c, t, false);
  if (c.kind == CK::kReduceScatter) return invert(hier_allgather(c, t, true));
  const HierPlan plan = hier_plan(c, t, false);
  if (plan.all_rails) {
    return hier_allreduce(c, t, plan, o.parallel > 0 ? o.parallel : plan.layout.nodes);
  }
  return allreduce_from(invert(hier_allgather(c, t, true)), hier_allgather(c, t, false));
}

// Two-step alltoall (MSCCLang sec. 7.3, fig. 9): a chunk from (n, g) to (m, i) first moves inside
// node n to the hub (n, i), which sends everything of node n for (m, i) as one cross-node
// transfer (IB). Chunks within a node go directly; ranks that are not adjacent relay along
// shortest paths (inside the node for the first step).
//
// Aggregation. The compiler merges same-step transfers that are contiguous at both ends
// (docs/compiler.md pass 2). The receiver (m, i) keeps the chunks of node n's ranks side by side
// in its output, and the hub stores relayed chunks in scratch in arrival order (step, then
// sender), so the relays for remote node m_k = n + 1 + k arrive at step k + 1 (N - 1 staggered
// rounds; node n sends to node n + 1 + k at step k + 1 + h, h = the in-node hops), in rank order.
// The hub's own chunk for (m, i) sits in its input; the compiler copies it locally next to the
// relays in scratch (docs/compiler.md, gathering), as MSCCLang's program does, so each hub sends
// one transfer of G chunks per remote node.
Algorithm make_twostep(const Collective& c, const Topology& t) {
  const Net net(t);
  const NodeLayout L = node_layout(t);
  const int R = c.num_ranks, C = c.chunks_per_rank, N = L.nodes, G = L.per_node;
  Algorithm a = empty_algorithm(c, t, CK::kAllToAll, "twostep");
  std::vector<std::vector<int>> in_node(R);  // in_node[s][d]: path s -> d inside s's node
  int hops = 1;
  for (int s = 0; s < R; ++s) {
    in_node[s].resize(R);
    for (int d : t.nodes[t.node_of(s)]) {
      if (d == s) continue;
      in_node[s][d] = static_cast<int>(path_or_reject(net, s, d, t.nodes[t.node_of(s)]).size());
      hops = std::max(hops, in_node[s][d] - 1);
    }
  }
  for (int s = 0; s < R; ++s) {
    const int n = t.node_of(s);
    const auto& node = t.nodes[n];
    for (int d : node)  // inside the node: directly
      if (d != s) route(a, {pair_range(s, d, R, C)}, path_or_reject(net, s, d, node), 0);
    for (int k = 0; k + 1 < N; ++k) {
      const int m = (n + 1 + k) % N;
      const int arrive = k + hops - 1;  // every relay for m_k reaches its hub now
      for (int i = 0; i < G; ++i) {
        const int hub = node[i], d = t.nodes[m][i];
        const Block block{pair_range(s, d, R, C)};
        if (hub != s) {
          const auto path = path_or_reject(net, s, hub, node);
          route(a, block, path, arrive - static_cast<int>(path.size()) + 2);
        }
        route(a, block, path_or_reject(net, hub, d), arrive + 1);
      }
    }
  }
  return a;
}

// Cooperative cross-node sends (MSCCLang sec. 7.4, fig. 10) for point-to-point custom collectives
// such as AllToNext. Chunks whose ends share a node go directly (relayed inside the node where
// not adjacent). The chunks from s to a rank d of another node are cut into G contiguous parts;
// part g is scattered inside s's node to its GPU g, which sends it over its own NIC to GPU g of
// d's node, which forwards it to d: three steps (more where the paths have more hops), every
// NIC of both nodes carrying 1/G of the data instead of s's NIC carrying all of it.
Algorithm make_cooperative(const Collective& c, const Topology& t) {
  const Net net(t);
  const NodeLayout L = node_layout(t);
  Algorithm a = empty_algorithm(c, t, CK::kCustom, "cooperative");
  struct Hop3 {
    Block part;
    std::vector<int> scatter, cross, gather;
  };
  std::vector<Hop3> parts;
  int scatter_hops = 0, cross_hops = 0;
  for (const auto& [pair, chunks] : point_to_point(c)) {
    const auto [s, d] = pair;
    const auto& from = t.nodes[t.node_of(s)];
    const auto& to = t.nodes[t.node_of(d)];
    if (t.node_of(s) == t.node_of(d)) {
      route(a, ranges_of(chunks), path_or_reject(net, s, d, from), 0);
      continue;
    }
    const auto cuts = split({0, static_cast<int>(chunks.size())}, L.per_node);
    for (size_t g = 0; g < cuts.size(); ++g) {
      Hop3 h;
      h.part = ranges_of(
          {chunks.begin() + cuts[g].first, chunks.begin() + cuts[g].first + cuts[g].count});
      h.scatter = path_or_reject(net, s, from[g], from);
      h.cross = path_or_reject(net, from[g], to[g]);
      h.gather = path_or_reject(net, to[g], d, to);
      scatter_hops = std::max(scatter_hops, static_cast<int>(h.scatter.size()) - 1);
      cross_hops = std::max(cross_hops, static_cast<int>(h.cross.size()) - 1);
      parts.push_back(std::move(h));
    }
  }
  for (const Hop3& h : parts) {
    route(a, h.part, h.scatter, 0);
    route(a, h.part, h.cross, scatter_hops);
    route(a, h.part, h.gather, scatter_hops + cross_hops);
  }
  return a;
}

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

void check_inputs(BaselineKind kind, const Collective& c, const Topology& t) {
  const auto kinds = supported(kind);
  if (std::find(kinds.begin(), kinds.end(), c.kind) == kinds.end()) {
    std::string names;
    for (CK k : kinds) names += (names.empty() ? "" : ", ") + to_string(k);
    reject(to_string(kind) + " does not build " + c.name + " (it builds " + names + ")");
  }
  if (c.num_ranks != t.num_ranks) {
    reject("the collective has " + std::to_string(c.num_ranks) + " ranks but topology " + t.name +
           " has " + std::to_string(t.num_ranks));
  }
  if (c.num_ranks < 2) reject("needs at least two ranks");
}

}  // namespace

BaselineKind parse_baseline_kind(const std::string& name) {
  const std::string key = lower(name);
  for (BaselineKind k : kAllKinds)
    if (to_string(k) == key) return k;
  if (key == "recursive-doubling" || key == "recursive_doubling")
    return BaselineKind::kRecursiveDoubling;
  throw UserError("", "algo",
                  "unknown baseline '" + name +
                      "' (expected ring, direct, rd, rhd, dbt, hier, twostep, chain, tree, "
                      "cooperative)");
}

std::string to_string(BaselineKind kind) {
  switch (kind) {
    case BaselineKind::kRing: return "ring";
    case BaselineKind::kDirect: return "direct";
    case BaselineKind::kRecursiveDoubling: return "rd";
    case BaselineKind::kRhd: return "rhd";
    case BaselineKind::kDbt: return "dbt";
    case BaselineKind::kHier: return "hier";
    case BaselineKind::kTwoStep: return "twostep";
    case BaselineKind::kChain: return "chain";
    case BaselineKind::kTree: return "tree";
    case BaselineKind::kCooperative: return "cooperative";
  }
  return "ring";
}

std::vector<BaselineKind> all_baseline_kinds() {
  return {std::begin(kAllKinds), std::end(kAllKinds)};
}

std::string baseline_inapplicable_reason(BaselineKind kind, const Collective& c,
                                         const Topology& t) {
  try {
    make_baseline(kind, c, t);
    return "";
  } catch (const UserError& e) {
    return e.reason();
  }
}

bool baseline_applies(BaselineKind kind, const Collective& c, const Topology& t) {
  return baseline_inapplicable_reason(kind, c, t).empty();
}

Algorithm make_baseline(BaselineKind kind, const Collective& c, const Topology& t,
                        const BaselineOptions& o) {
  check_inputs(kind, c, t);
  if (o.pipeline_chunks < 1) reject("pipeline chunks must be >= 1");
  Algorithm a;
  switch (kind) {
    case BaselineKind::kRing: a = make_ring(c, t, o); break;
    case BaselineKind::kDirect: a = make_direct(c, t, o); break;
    case BaselineKind::kRecursiveDoubling:
    case BaselineKind::kRhd: a = make_recursive(kind, c, t); break;
    case BaselineKind::kDbt: a = make_dbt(c, t, o); break;
    case BaselineKind::kHier: a = make_hier(c, t, o); break;
    case BaselineKind::kTwoStep: a = make_twostep(c, t); break;
    case BaselineKind::kChain: a = make_chain(c, t, o); break;
    case BaselineKind::kTree: a = make_tree(c, t, o); break;
    case BaselineKind::kCooperative: a = make_cooperative(c, t); break;
  }
  a.name = to_string(kind) + "_" + c.name;
  a.topology = t.name;
  a.collective = c;
  a.routed = o.end_to_end;
  sort_ops(a);
  return a;
}

std::vector<std::vector<int>> find_rings(const Topology& topology, int max_rings,
                                         bool bidirectional) {
  return Net(topology).rings(max_rings, bidirectional);
}

namespace {

// Intra-node connection a -> b (NVLink, NVSwitch, PCIe: anything but the NIC fabric) and its
// lanes; 0 lanes when there is none, kShared for a switch (NCCL's rings share NVSwitch ports).
constexpr int kShared = 1 << 20;
int intra_lanes(const Topology& t, int a, int b) {
  const std::optional<Connection> c = t.connection(a, b);
  if (!c) return 0;
  if (c->switch_index >= 0) return t.switches[c->switch_index].kind == "ib" ? 0 : kShared;
  return c->lanes;
}

// A path from `entry` to `exit` through every rank of `node` over intra-node connections,
// depth-first (lowest rank first among the least used connections); with `strict`, only over
// connections with a lane no earlier ring took. Empty when none is found within the budget.
std::vector<int> node_path(const Topology& t, const std::vector<int>& node, int entry, int exit,
                           std::map<std::pair<int, int>, int>& used, bool strict) {
  if (node.size() == 1) return entry == exit ? std::vector<int>{entry} : std::vector<int>{};
  if (entry == exit) return {};
  std::vector<int> path = {entry};
  std::set<int> visited = {entry};
  int budget = 200000;
  auto usable = [&](int a, int b) {
    const int lanes = intra_lanes(t, a, b);
    return lanes > 0 && (!strict || used[{a, b}] < lanes);
  };
  std::function<bool()> extend = [&]() -> bool {
    if (--budget < 0) return false;
    const int u = path.back();
    if (path.size() + 1 == node.size()) return usable(u, exit);
    std::vector<int> next;
    for (int v : node)
      if (v != exit && !visited.count(v) && usable(u, v)) next.push_back(v);
    std::stable_sort(next.begin(), next.end(), [&](int a, int b) {
      return used[{u, a}] < used[{u, b}];
    });
    for (int v : next) {
      path.push_back(v);
      visited.insert(v);
      if (extend()) return true;
      visited.erase(v);
      path.pop_back();
    }
    return false;
  };
  if (!extend()) return {};
  path.push_back(exit);
  for (size_t i = 0; i + 1 < path.size(); ++i) ++used[{path[i], path[i + 1]}];
  return path;
}

// A single node whose ranks all share one switch and nothing else (NVSwitch machines).
bool single_switch_node(const Topology& t) {
  if (t.nodes.size() > 1 || !t.links.empty() || t.switches.size() != 1) return false;
  return static_cast<int>(t.switches[0].ranks.size()) == t.num_ranks;
}

}  // namespace

std::vector<std::vector<int>> nic_rings(const Topology& t) {
  const int N = static_cast<int>(t.nodes.size());
  if (N < 2) return {};
  // The NICs of every node: the member ranks of each port of each "ib" switch.
  std::vector<std::vector<std::vector<int>>> nics(N);
  for (const Switch& sw : t.switches) {
    if (sw.kind != "ib") continue;
    for (const std::vector<int>& gpus : sw.port_members()) {
      if (gpus.empty()) continue;
      const int n = t.node_of(gpus[0]);
      for (int g : gpus)
        if (t.node_of(g) != n) return {};  // a NIC spanning nodes
      nics[n].push_back(gpus);
    }
  }
  const size_t K = nics[0].size();
  for (auto& node_nics : nics) {
    if (node_nics.size() != K || K == 0) return {};
    std::sort(node_nics.begin(), node_nics.end());
  }
  std::map<std::pair<int, int>, int> used;  // intra-node connection -> rings over it
  std::vector<std::vector<int>> rings;
  for (size_t k = 0; k < K; ++k) {
    std::vector<int> ring;
    for (int n = 0; n < N; ++n) {
      const auto& node_nics = nics[n];
      int entry = 0, exit = 0;
      if (node_nics[k].size() >= 2) {  // a shared NIC: in at its first GPU, out at its second
        entry = node_nics[k][0];
        exit = node_nics[k][1];
      } else {  // a NIC per GPU: in at NIC k + n, out at the next one
        entry = node_nics[(k + n) % K][0];
        exit = node_nics[(k + n + 1) % K][0];
      }
      std::vector<int> path = node_path(t, t.nodes[n], entry, exit, used, true);
      if (path.empty()) path = node_path(t, t.nodes[n], entry, exit, used, false);
      if (path.empty()) return {};
      ring.insert(ring.end(), path.begin(), path.end());
    }
    if (static_cast<int>(ring.size()) != t.num_ranks) return {};
    for (size_t i = 0; i < ring.size(); ++i)
      if (!t.connection(ring[i], ring[(i + 1) % ring.size()])) return {};
    rings.push_back(std::move(ring));
  }
  return rings;
}

NcclRings nccl_rings(const Topology& topology) {
  NcclRings out;
  if (std::vector<std::vector<int>> cluster = nic_rings(topology); !cluster.empty()) {
    out.rings = std::move(cluster);
    out.count = static_cast<int>(out.rings.size());
    return out;
  }
  const Net net(topology);
  if (single_switch_node(topology)) {
    const std::vector<std::vector<int>> one = net.rings(1, false);
    for (int j = 0; j < kNvswitchRings && !one.empty(); ++j) out.rings.push_back(one[0]);
    out.count = std::max<int>(1, static_cast<int>(out.rings.size()));
    return out;
  }
  out.rings = net.rings(kMaxNcclRings, true);
  out.bidirectional = !out.rings.empty();
  // One direction only when it finds more rings; no search when both already reach the bound.
  const int bound = std::min(kMaxNcclRings, net.ring_bound());
  if (static_cast<int>(out.rings.size()) < bound) {
    std::vector<std::vector<int>> one_way = net.rings(kMaxNcclRings, false);
    if (one_way.size() > out.rings.size()) {
      out.rings = std::move(one_way);
      out.bidirectional = false;
    }
  }
  out.count = std::max<int>(1, static_cast<int>(out.rings.size()));
  return out;
}

Algorithm nccl_ring(const Topology& topology, CollectiveKind kind, int root) {
  // Kinds the ring does not build are rejected before the ring search.
  check_inputs(BaselineKind::kRing, make_collective(kind, topology.num_ranks, 1, root), topology);
  NcclRings nccl = nccl_rings(topology);
  const Collective c = make_collective(kind, topology.num_ranks, nccl.count, root);
  BaselineOptions options;
  options.bidirectional = nccl.bidirectional;
  options.ring_list = std::move(nccl.rings);
  return make_baseline(BaselineKind::kRing, c, topology, options);
}

bool rings_time_alike(const Topology& topology, const NcclRings& nccl) {
  if (nccl.rings.size() < 2) return false;
  std::set<int> links_used;
  std::optional<Connection> first_hop;
  for (const std::vector<int>& ring : nccl.rings) {
    if (static_cast<int>(ring.size()) != topology.num_ranks) return false;
    for (size_t i = 0; i < ring.size(); ++i) {
      const std::optional<Connection> hop =
          topology.connection(ring[i], ring[(i + 1) % ring.size()]);
      if (!hop || hop->link_index < 0 || hop->switch_index >= 0) return false;
      if (!links_used.insert(hop->link_index).second) return false;
      if (!first_hop) first_hop = hop;
      if (hop->alpha_us != first_hop->alpha_us ||
          hop->beta_us_per_mb != first_hop->beta_us_per_mb || hop->lanes != first_hop->lanes) {
        return false;
      }
    }
  }
  return true;
}

Algorithm nccl_first_ring(const Topology& topology, CollectiveKind kind, int root,
                          const NcclRings& nccl) {
  CCSYNTH_CHECK(!nccl.rings.empty()) << "nccl_first_ring needs a ring";
  BaselineOptions options;
  options.ring_list = {nccl.rings.front()};
  Algorithm a = make_baseline(
      BaselineKind::kRing, make_collective(kind, topology.num_ranks, 1, root), topology, options);
  // In nccl_ring() every ring's ops have its channel (ring 0: channel 0).
  if (nccl.rings.size() > 1) set_channel(a, 0, 0);
  return a;
}

}  // namespace ccsynth::synth
