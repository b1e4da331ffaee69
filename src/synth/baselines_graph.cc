// Graph searches for the baselines: NCCL-style ring search under lane capacities, paths,
// spanning trees and pattern embeddings (for recursive doubling and double binary trees).

#include <algorithm>
#include <deque>
#include <functional>
#include <numeric>
#include <set>

#include "baselines_detail.h"
#include "ccsynth/core/graph.h"

namespace ccsynth::synth::detail {

void reject(const std::string& reason) { throw UserError("", "algo", reason); }

Block ranges_of(std::vector<int> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  Block out;
  for (int id : ids) {
    if (!out.empty() && out.back().first + out.back().count == id) {
      ++out.back().count;
    } else {
      out.push_back({id, 1});
    }
  }
  return out;
}

std::vector<int> ids_of(const Block& block) {
  std::vector<int> out;
  for (const Range& r : block)
    for (int i = 0; i < r.count; ++i) out.push_back(r.first + i);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Range> split(Range range, int parts) {
  parts = std::max(1, std::min(parts, range.count));
  std::vector<Range> out;
  int first = range.first;
  for (int p = 0; p < parts; ++p) {
    // Near-equal sizes: the first (count % parts) pieces get one more chunk.
    const int size = range.count / parts + (p < range.count % parts ? 1 : 0);
    if (size > 0) out.push_back({first, size});
    first += size;
  }
  return out;
}

void emit(Algorithm& a, const Block& block, int src, int dst, OpKind kind, int step) {
  for (const Range& r : block) {
    if (r.count > 0) a.ops.push_back({r.first, src, dst, kind, step, -1, r.count});
  }
}

Tree Tree::from_parents(int root, std::vector<int> parent) {
  Tree t;
  const int n = static_cast<int>(parent.size());
  t.root = root;
  t.parent = std::move(parent);
  t.children.assign(n, {});
  t.height.assign(n, 0);
  for (int v = 0; v < n; ++v) {
    if (v != root) {
      CCSYNTH_CHECK(t.parent[v] >= 0 && t.parent[v] < n) << "rank " << v << " has no parent";
      t.children[t.parent[v]].push_back(v);
    }
  }
  CCSYNTH_CHECK(t.parent[root] == -1) << "root has a parent";
  // BFS down the children: depths are hop distances, and its order puts parents first.
  const BfsResult search = breadth_first_search(t.children, {root});
  const std::vector<int>& order = search.order;
  CCSYNTH_CHECK(static_cast<int>(order.size()) == n) << "parent array is not a spanning tree";
  t.depth = search.distance;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (*it != root) t.height[t.parent[*it]] = std::max(t.height[t.parent[*it]], t.height[*it] + 1);
  }
  return t;
}

Net::Net(const Topology& topology)
    : topology_(topology),
      n_(topology.num_ranks),
      adj_(n_, std::vector<char>(n_, 0)),
      successors_(topology.out_neighbors()) {
  for (int a = 0; a < n_; ++a)
    for (int b : successors_[a]) adj_[a][b] = 1;
}

namespace {

// Remaining lanes of every link and ports of every switch while rings are carved out. Ranks
// sharing a switch port (Switch::port_group) share its one egress and one ingress use.
class Capacity {
 public:
  explicit Capacity(const Topology& t)
      : t_(t), lanes_(t.num_ranks, std::vector<int>(t.num_ranks, 0)) {
    for (const Link& l : t.links) lanes_[l.src][l.dst] += l.lanes;
    port_of_.assign(t.switches.size(), std::vector<int>(t.num_ranks, -1));
    egress_.resize(t.switches.size());
    for (size_t s = 0; s < t.switches.size(); ++s) {
      const Switch& sw = t.switches[s];
      for (size_t i = 0; i < sw.ranks.size(); ++i) port_of_[s][sw.ranks[i]] = sw.port_of_member(i);
      egress_[s].assign(sw.num_ports(), 1);
    }
    ingress_ = egress_;
  }

  int lanes(int a, int b) const { return lanes_[a][b]; }
  // The shared switch ports (ids) that a -> b would hold: a path may use each only once, since
  // unlike a rank's own port several of its ranks can be on one path. Empty on a free lane.
  std::vector<int> shared_ports(int a, int b) const {
    if (lanes_[a][b] > 0) return {};
    const int s = port_switch(a, b);
    if (s < 0) return {};
    std::vector<int> out;
    const int pa = port_of_[s][a], pb = port_of_[s][b];
    if (t_.switches[s].has_shared_ports()) {
      const int base = 2 * t_.num_ranks * s;     // a switch has at most num_ranks ports
      out = {base + 2 * pa, base + 2 * pb + 1};  // egress of a's port, ingress of b's
    }
    return out;
  }
  bool available(int a, int b) const { return lanes_[a][b] > 0 || port_switch(a, b) >= 0; }
  // Consumes one lane (or a switch's ports) for a -> b; false when nothing is left.
  bool take(int a, int b) {
    if (lanes_[a][b] > 0) {
      --lanes_[a][b];
      return true;
    }
    const int s = port_switch(a, b);
    if (s < 0) return false;
    --egress_[s][port_of_[s][a]];
    --ingress_[s][port_of_[s][b]];
    return true;
  }
  // Upper bound on rings: the fewest outgoing lanes + switch ports of any rank in `subset`.
  int ring_bound(const std::vector<int>& subset) const {
    int bound = 1 << 30;
    for (int a : subset) {
      int out = 0;
      for (int b : subset) out += (a != b) ? lanes_[a][b] : 0;
      for (size_t s = 0; s < egress_.size(); ++s) {
        if (port_of_[s][a] >= 0) out += egress_[s][port_of_[s][a]];
      }
      bound = std::min(bound, out);
    }
    return bound;
  }

 private:
  int port_switch(int a, int b) const {
    for (size_t s = 0; s < egress_.size(); ++s) {
      const int pa = port_of_[s][a], pb = port_of_[s][b];
      if (pa >= 0 && pb >= 0 && egress_[s][pa] > 0 && ingress_[s][pb] > 0) {
        return static_cast<int>(s);
      }
    }
    return -1;
  }

  const Topology& t_;
  std::vector<std::vector<int>> lanes_;
  std::vector<std::vector<int>> port_of_;           // switch -> rank -> port id, or -1
  std::vector<std::vector<int>> egress_, ingress_;  // switch -> port -> uses left
};

constexpr long kPathBudget = 20000;    // DFS expansions per ring/path search (bounds failures)
constexpr long kEmbedBudget = 200000;  // backtracking steps per embedding search
constexpr int kNearVariants = 6;       // candidate orders tried without, then with, the far rule

// Depth-first search for a Hamiltonian cycle (or path when !close) over `subset` starting at
// subset[0], over edges `ok(a, b)` among `successors` (successors[a]: every rank b that ok(a, b)
// may accept). `variant` perturbs the candidate order (Warnsdorff's rule: fewest onward options
// first, then most remaining lanes). `claims(a, b)` (optional) lists resources the edge holds
// exclusively (shared switch ports): no two edges of the result share one. Each DFS step costs
// O(m + degree): the unvisited in- and out-degrees of every rank are kept up to date as ranks
// join and leave the path.
using Claims = std::function<std::vector<int>(int, int)>;
class HamiltonianSearch {
 public:
  HamiltonianSearch(const std::vector<int>& subset, bool close, int variant,
                    const std::vector<std::vector<int>>& successors,
                    const std::function<bool(int, int)>& ok,
                    const std::function<int(int, int)>& weight, const Claims& claims)
      : subset_(subset),
        m_(static_cast<int>(subset.size())),
        close_(close),
        variant_(variant),
        claims_(claims),
        edge_(static_cast<size_t>(m_) * m_, 0),
        out_(m_),
        in_(m_),
        out_left_(m_, 0),
        in_left_(m_, 0),
        path_{subset[0]},
        at_{0},
        used_(m_, 0) {
    // Edges and weights by subset index, computed once (capacities do not change during a
    // search).
    std::vector<int> index_of(successors.size(), -1);
    for (int i = 0; i < m_; ++i) index_of[subset[i]] = i;
    for (int i = 0; i < m_; ++i) {
      for (int b : successors[subset[i]]) {
        const int j = index_of[b];
        if (j < 0 || j == i || !ok(subset[i], b)) continue;
        edge_[index(i, j)] = 1;
        out_[i].push_back({j, weight(subset[i], b)});
        in_[j].push_back(i);
      }
    }
    for (int i = 0; i < m_; ++i) {
      out_left_[i] = static_cast<int>(out_[i].size());
      in_left_[i] = static_cast<int>(in_[i].size());
    }
    // Hop distance from the start; later variants break Warnsdorff ties by visiting far ranks
    // first, which leaves a way back to the start on grids.
    auto for_each_edge_from = [this](int u, auto&& visit) {
      for (const auto& [v, lanes] : out_[u]) visit(v);
    };
    dist_ = breadth_first_search(m_, {0}, for_each_edge_from).distance;
    visit(0, true);
  }

  /// The cycle or path in subset order, if found within the budget.
  std::optional<std::vector<int>> run() {
    if (dfs()) return path_;
    return std::nullopt;
  }

 private:
  size_t index(int i, int j) const { return static_cast<size_t>(i) * m_ + j; }
  bool edge(int i, int j) const { return edge_[index(i, j)] != 0; }

  // Marks subset index v visited (or not) and updates its neighbours' unvisited degrees.
  void visit(int v, bool on) {
    used_[v] = on ? 1 : 0;
    const int delta = on ? -1 : 1;
    for (int u : in_[v]) out_left_[u] += delta;
    for (const auto& [w, lanes] : out_[v]) in_left_[w] += delta;
  }

  // Prunes dead ends: every unvisited rank still needs a way in (from another unvisited rank
  // or the path's end) and a way out (to another unvisited rank, or back to the start when
  // closing a cycle), and a cycle's start needs a way in.
  bool completable() const {
    const int end = at_.back();
    bool start_in = false;
    for (int i = 0; i < m_; ++i) {
      if (used_[i]) continue;
      const bool in = edge(end, i) || in_left_[i] > 0;
      const bool to_start = close_ && edge(i, 0);
      const bool out = to_start || out_left_[i] > 0;
      start_in = start_in || to_start;
      if (!in || (!out && static_cast<int>(path_.size()) + 1 < m_)) return false;
    }
    return !close_ || start_in || static_cast<int>(path_.size()) == m_;
  }

  // Whether edge i -> j claims no resource the path already holds.
  bool free_edge(int i, int j) const {
    if (!claims_) return true;
    for (int c : claims_(subset_[i], subset_[j])) {
      if (held_.count(c)) return false;
    }
    return true;
  }

  void hold(int i, int j, bool take) {
    if (!claims_) return;
    for (int c : claims_(subset_[i], subset_[j])) {
      take ? (void)held_.insert(c) : (void)held_.erase(c);
    }
  }

  // The next ranks to try after subset index a, best first.
  std::vector<int> candidates(int a) const {
    std::vector<std::pair<std::tuple<int, int, int, int>, int>> cands;
    for (const auto& [i, lanes] : out_[a]) {
      if (used_[i] || !free_edge(a, i)) continue;
      const int far = variant_ >= kNearVariants ? -dist_[i] : 0;
      cands.push_back({{out_left_[i], -lanes, far, (i + variant_) % m_}, i});
    }
    std::sort(cands.begin(), cands.end());
    std::vector<int> out;
    for (const auto& [key, i] : cands) out.push_back(i);
    return out;
  }

  bool dfs() {
    if (--budget_ < 0) return false;
    const int a = at_.back();
    if (static_cast<int>(path_.size()) == m_) return !close_ || (edge(a, 0) && free_edge(a, 0));
    if (!completable()) return false;
    for (int i : candidates(a)) {
      visit(i, true);
      path_.push_back(subset_[i]);
      at_.push_back(i);
      hold(a, i, true);
      if (dfs()) return true;
      hold(a, i, false);
      at_.pop_back();
      path_.pop_back();
      visit(i, false);
    }
    return false;
  }

  const std::vector<int>& subset_;
  const int m_;
  const bool close_;
  const int variant_;
  const Claims& claims_;
  std::vector<char> edge_;                             // m x m adjacency by subset index
  std::vector<std::vector<std::pair<int, int>>> out_;  // i -> (j, lanes of i -> j)
  std::vector<std::vector<int>> in_;                   // j -> every i with an edge i -> j
  std::vector<int> out_left_;                          // i -> unvisited j with an edge i -> j
  std::vector<int> in_left_;                           // j -> unvisited i with an edge i -> j
  std::vector<int> dist_;                              // hops from subset[0]
  std::vector<int> path_;
  std::vector<int> at_;  // subset indices of the path
  std::vector<char> used_;
  std::set<int> held_;  // claimed resources of the path's edges
  long budget_ = kPathBudget;
};

std::optional<std::vector<int>> hamiltonian(const std::vector<int>& subset, bool close, int variant,
                                            const std::vector<std::vector<int>>& successors,
                                            const std::function<bool(int, int)>& ok,
                                            const std::function<int(int, int)>& weight,
                                            const Claims& claims = {}) {
  if (subset.size() == 1) return subset;
  return HamiltonianSearch(subset, close, variant, successors, ok, weight, claims).run();
}

std::vector<int> all_ranks(int n) {
  std::vector<int> out(n);
  std::iota(out.begin(), out.end(), 0);
  return out;
}

}  // namespace

int Net::ring_bound() const { return Capacity(topology_).ring_bound(all_ranks(n_)); }

std::vector<std::vector<int>> Net::rings(int max_rings, bool bidirectional,
                                         const std::vector<int>& subset_in) const {
  const std::vector<int> subset = subset_in.empty() ? all_ranks(n_) : subset_in;
  if (subset.size() < 2) return {};
  std::vector<std::vector<int>> best;
  constexpr int kVariants = 2 * kNearVariants;
  for (int variant = 0; variant < kVariants; ++variant) {
    Capacity cap(topology_);
    const int bound = cap.ring_bound(subset);
    std::vector<std::vector<int>> found;
    while ((max_rings == 0 || static_cast<int>(found.size()) < max_rings) &&
           static_cast<int>(found.size()) < bound) {
      auto ok = [&cap](int a, int b) { return cap.available(a, b); };
      auto weight = [&cap](int a, int b) { return cap.lanes(a, b); };
      auto claims = [&cap](int a, int b) { return cap.shared_ports(a, b); };
      auto ring = hamiltonian(subset, true, variant, successors_, ok, weight, claims);
      if (!ring) break;
      const int m = static_cast<int>(ring->size());
      for (int i = 0; i < m; ++i) cap.take((*ring)[i], (*ring)[(i + 1) % m]);
      if (bidirectional) {
        bool reverse_ok = true;
        for (int i = 0; i < m && reverse_ok; ++i)
          reverse_ok = cap.take((*ring)[(i + 1) % m], (*ring)[i]);
        if (!reverse_ok || (max_rings > 0 && static_cast<int>(found.size()) + 2 > max_rings)) break;
        found.push_back(*ring);
        found.emplace_back(ring->rbegin(), ring->rend());
        // Keep the reversed ring starting at the same rank.
        std::rotate(found.back().begin(), found.back().end() - 1, found.back().end());
      } else {
        found.push_back(*ring);
      }
    }
    if (found.size() > best.size()) best = found;
    if (static_cast<int>(best.size()) >= bound ||
        (max_rings > 0 && static_cast<int>(best.size()) >= max_rings)) {
      break;
    }
  }
  return best;
}

std::optional<std::vector<int>> Net::hamiltonian_path(int start) const {
  std::vector<int> subset{start};
  for (int r = 0; r < n_; ++r)
    if (r != start) subset.push_back(r);
  for (int variant = 0; variant < 3; ++variant) {
    auto path = hamiltonian(
        subset, false, variant, successors_, [this](int a, int b) { return linked(a, b); },
        [](int, int) { return 0; });
    if (path) return path;
  }
  return std::nullopt;
}

std::vector<int> Net::shortest_path(int a, int b, const std::vector<int>& allowed) const {
  std::vector<char> ok(n_, allowed.empty() ? 1 : 0);
  for (int r : allowed) ok[r] = 1;
  auto for_each_allowed_successor = [&](int u, auto&& visit) {
    for (int v = 0; v < n_; ++v) {
      if (ok[v] && connected(u, v)) visit(v);
    }
  };
  return breadth_first_search(n_, {a}, for_each_allowed_successor, b).path_to(b);
}

Tree Net::bfs_tree(int root, bool sym) const {
  auto for_each_successor = [&](int u, auto&& visit) {
    for (int v = 0; v < n_; ++v) {
      if (sym ? linked(u, v) : connected(u, v)) visit(v);
    }
  };
  const BfsResult search = breadth_first_search(n_, {root}, for_each_successor);
  for (int v = 0; v < n_; ++v) {
    if (!search.reached(v))
      reject("rank " + std::to_string(v) + " is not reachable from rank " + std::to_string(root) +
             (sym ? " over two-way connections" : ""));
  }
  return Tree::from_parents(root, search.parent);
}

Tree Net::binary_spanning_tree(int root) const {
  constexpr int kFanout = 2;  // NCCL's trees are binary
  std::vector<int> parent(n_, -2);
  std::vector<int> fanout(n_, 0);
  parent[root] = -1;
  std::deque<int> queue{root};
  int placed = 1;
  while (placed < n_) {
    while (!queue.empty()) {
      const int u = queue.front();
      queue.pop_front();
      for (int v = 0; v < n_ && fanout[u] < kFanout; ++v) {
        if (parent[v] == -2 && linked(u, v)) {
          parent[v] = u, ++fanout[u], ++placed;
          queue.push_back(v);
        }
      }
    }
    if (placed == n_) break;
    // Fan-out 2 left ranks out: hang one onto the placed neighbour with the fewest children.
    int best_u = -1, best_v = -1;
    for (int v = 0; v < n_ && best_v < 0; ++v) {
      if (parent[v] != -2) continue;
      for (int u = 0; u < n_; ++u) {
        if (parent[u] != -2 && linked(u, v) && (best_u < 0 || fanout[u] < fanout[best_u]))
          best_u = u;
      }
      if (best_u >= 0) best_v = v;
    }
    if (best_v < 0) reject("the topology is not connected over two-way connections");
    parent[best_v] = best_u, ++fanout[best_u], ++placed;
    queue.push_back(best_v);
  }
  return Tree::from_parents(root, parent);
}

std::optional<std::vector<int>> Net::embed(int positions,
                                           const std::vector<std::pair<int, int>>& edges,
                                           int root) const {
  if (positions != n_) return std::nullopt;
  // earlier[p]: pattern neighbours of position p with a smaller index.
  std::vector<std::vector<int>> earlier(positions);
  for (auto [u, v] : edges) {
    if (u == v) continue;
    earlier[std::max(u, v)].push_back(std::min(u, v));
  }
  std::vector<int> map(positions, -1);
  std::vector<char> used(n_, 0);
  long budget = kEmbedBudget;
  const int shift = root >= 0 ? root : 0;
  std::function<bool(int)> place;
  // Places position p on rank r if it is free and linked to its earlier neighbours' ranks, and
  // the positions after it then fit.
  auto place_at = [&](int p, int r) {
    if (used[r] || (p == 0 && root >= 0 && r != root)) return false;
    for (int q : earlier[p])
      if (!linked(map[q], r)) return false;
    map[p] = r, used[r] = 1;
    if (place(p + 1)) return true;
    used[r] = 0;
    return false;
  };
  // Ranks are tried from p + shift on, cyclically (the identity rotated to the root first).
  // With an earlier neighbour only its rank's successors can fit: they are tried in the same
  // order without scanning every rank (at 512 ranks, a failing search spent 0.4 s scanning).
  place = [&](int p) -> bool {
    if (p == positions) return true;
    if (--budget < 0) return false;
    const int start = (p + shift) % n_;
    if (earlier[p].empty()) {
      for (int k = 0; k < n_; ++k)
        if (place_at(p, (start + k) % n_)) return true;
    } else {
      const std::vector<int>& near = successors_[map[earlier[p].front()]];
      const auto from = std::lower_bound(near.begin(), near.end(), start);
      for (auto it = from; it != near.end(); ++it)
        if (place_at(p, *it)) return true;
      for (auto it = near.begin(); it != from; ++it)
        if (place_at(p, *it)) return true;
    }
    map[p] = -1;
    return false;
  };
  if (place(0)) return map;
  return std::nullopt;
}

}  // namespace ccsynth::synth::detail
