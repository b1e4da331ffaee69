#pragma once
// Breadth-first search over graphs whose vertices are 0..n-1 (ranks, usually): hop distances,
// the BFS tree and shortest paths in hops. The one implementation behind the topology checks,
// the simulator's routes, the lower bounds, the baselines and TACCL's stages.

#include <cstddef>
#include <vector>

namespace ccsynth {

/// What a breadth-first search found: every vertex's hop distance from the nearest source,
/// its parent in the BFS tree and the order in which vertices were reached.
struct BfsResult {
  std::vector<int> distance;  // hops from the nearest source; -1 where not reached
  std::vector<int> parent;    // predecessor on a shortest path; -1 for sources and unreached
  std::vector<int> order;     // reached vertices, sources first, in order of distance

  /// Whether the search reached `v`.
  bool reached(int v) const { return distance[v] >= 0; }
  /// The vertices from a source to `v` along parents, both ends included; empty when `v` was
  /// not reached.
  std::vector<int> path_to(int v) const;
  /// The largest distance of a reached vertex (0 when only sources were reached).
  int max_distance() const;
};

/// Breadth-first search from `sources` over the vertices 0..num_vertices-1.
/// `for_each_neighbor(u, visit)` calls visit(v) for every successor v of u; the first visit of
/// a vertex makes u its parent, so the order in which neighbours are offered breaks ties
/// (ascending gives lowest-numbered ties). Visits of vertices already reached are ignored, so
/// the callback may offer a vertex twice or offer u itself. With `target` >= 0 the search stops
/// as soon as the target is reached (its distance, parent and path are final then; other
/// vertices may be left unreached).
template <typename ForEachNeighbor>
BfsResult breadth_first_search(int num_vertices, const std::vector<int>& sources,
                               ForEachNeighbor&& for_each_neighbor, int target = -1) {
  BfsResult result;
  result.distance.assign(num_vertices, -1);
  result.parent.assign(num_vertices, -1);
  for (int s : sources) {
    if (result.reached(s)) continue;
    result.distance[s] = 0;
    result.order.push_back(s);
  }
  // result.order doubles as the FIFO queue: entries from `head` on are still to expand.
  for (std::size_t head = 0; head < result.order.size(); ++head) {
    if (target >= 0 && result.reached(target)) break;
    const int u = result.order[head];
    for_each_neighbor(u, [&result, u](int v) {
      if (result.reached(v)) return;
      result.distance[v] = result.distance[u] + 1;
      result.parent[v] = u;
      result.order.push_back(v);
    });
  }
  return result;
}

/// Breadth-first search over an adjacency list (adjacency[u]: successors of u, in tie-breaking
/// order) from `sources`.
BfsResult breadth_first_search(const std::vector<std::vector<int>>& adjacency,
                               const std::vector<int>& sources);

/// Breadth-first hop distances from `src` over `adjacency` (adjacency[u]: successors of u);
/// -1 where unreachable. Shared by Topology and the SCCL bandwidth model.
std::vector<int> bfs_hop_distances(const std::vector<std::vector<int>>& adjacency, int src);

/// The reversed graph: reversed[v] lists every u with v in adjacency[u], ascending in u.
std::vector<std::vector<int>> reverse_adjacency(const std::vector<std::vector<int>>& adjacency);

}  // namespace ccsynth
