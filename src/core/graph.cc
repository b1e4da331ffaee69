#include "ccsynth/core/graph.h"

#include <algorithm>

namespace ccsynth {

std::vector<int> BfsResult::path_to(int v) const {
  if (!reached(v)) return {};
  std::vector<int> path;
  for (int u = v; u != -1; u = parent[u]) path.push_back(u);
  std::reverse(path.begin(), path.end());
  return path;
}

int BfsResult::max_distance() const {
  int farthest = 0;
  for (int v : order) farthest = std::max(farthest, distance[v]);
  return farthest;
}

BfsResult breadth_first_search(const std::vector<std::vector<int>>& adjacency,
                               const std::vector<int>& sources) {
  return breadth_first_search(static_cast<int>(adjacency.size()), sources,
                              [&adjacency](int u, auto&& visit) {
                                for (int v : adjacency[u]) visit(v);
                              });
}

std::vector<int> bfs_hop_distances(const std::vector<std::vector<int>>& adjacency, int src) {
  return breadth_first_search(adjacency, {src}).distance;
}

std::vector<std::vector<int>> reverse_adjacency(const std::vector<std::vector<int>>& adjacency) {
  std::vector<std::vector<int>> reversed(adjacency.size());
  for (size_t u = 0; u < adjacency.size(); ++u) {
    for (int v : adjacency[u]) reversed[v].push_back(static_cast<int>(u));
  }
  return reversed;
}

}  // namespace ccsynth
