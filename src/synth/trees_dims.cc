// The dimension-order split of the trees method (trees_dims.h, docs/trees.md).

#include "trees_dims.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include "ccsynth/core/error.h"

namespace ccsynth::synth::detail {

namespace {

// The class of a connection: switch or link, and its bandwidth (MB per us, to 1e-6).
using ConnectionClass = std::pair<bool, int64_t>;

ConnectionClass class_of(const Topology& t, const Connection& c) {
  const bool through_switch = c.switch_index >= 0;
  const double mb_per_us = through_switch ? 1.0 / t.switches[c.switch_index].port_beta_us_per_mb
                                          : c.lanes / c.beta_us_per_mb;
  return {through_switch, std::llround(mb_per_us * 1e6)};
}

// A rank's ingress bandwidth over the connections of one class: its links' bandwidths, or its
// port on each switch once. -1 when a switch port is shared by several ranks (not a product).
double ingress_of(const Topology& t, const std::vector<Connection>& into_rank) {
  double sum = 0;
  std::set<int> switches;
  for (const Connection& c : into_rank) {
    if (c.switch_index < 0) {
      sum += c.lanes / c.beta_us_per_mb;
      continue;
    }
    const Switch& sw = t.switches[c.switch_index];
    if (sw.port_members().size() != sw.ranks.size()) return -1;
    if (switches.insert(c.switch_index).second) sum += 1.0 / sw.port_beta_us_per_mb;
  }
  return sum;
}

// The connected components of an undirected adjacency, each in BFS order from its smallest rank.
std::vector<std::vector<int>> components(const std::vector<std::set<int>>& adjacent) {
  const int n = static_cast<int>(adjacent.size());
  std::vector<int> seen(n, 0);
  std::vector<std::vector<int>> out;
  for (int r = 0; r < n; ++r) {
    if (seen[r]) continue;
    std::vector<int> group{r};
    seen[r] = 1;
    for (size_t i = 0; i < group.size(); ++i) {
      for (int v : adjacent[group[i]]) {
        if (!seen[v]) {
          seen[v] = 1;
          group.push_back(v);
        }
      }
    }
    out.push_back(std::move(group));
  }
  return out;
}

// A group's members in cycle order when every member has exactly two neighbours and they form
// one cycle; empty otherwise.
std::vector<int> cycle_order(const std::vector<int>& group, const std::vector<std::set<int>>& adj) {
  for (int v : group) {
    if (adj[v].size() != 2) return {};
  }
  std::vector<int> order{group.front()};
  int previous = -1;
  while (order.size() < group.size()) {
    const int at = order.back();
    const int next = *adj[at].begin() != previous ? *adj[at].begin() : *adj[at].rbegin();
    if (next == order.front()) return {};
    previous = at;
    order.push_back(next);
  }
  return adj[order.back()].count(order.front()) ? order : std::vector<int>{};
}

// Whether every ordered pair of the group has a connection of the class.
bool fully_connected(const std::vector<int>& group, const std::vector<std::set<int>>& out) {
  for (int u : group) {
    for (int v : group) {
      if (u != v && !out[u].count(v)) return false;
    }
  }
  return true;
}

// Adds dimension `d` (the groups of one class) to `dims`; false where a group is neither fully
// connected nor a cycle, the groups differ in size, or the ingress differs between ranks.
bool add_dimension(const Topology& t, const std::vector<Connection>& conns, TreeDimensions& dims) {
  const int n = t.num_ranks;
  std::vector<std::set<int>> out(n), adjacent(n);
  std::vector<std::vector<Connection>> into(n);
  for (const Connection& c : conns) {
    out[c.src].insert(c.dst);
    adjacent[c.src].insert(c.dst);
    adjacent[c.dst].insert(c.src);
    into[c.dst].push_back(c);
  }
  std::vector<std::vector<int>> groups = components(adjacent);
  const size_t size = groups.front().size();
  const bool complete = fully_connected(groups.front(), out);
  for (std::vector<int>& g : groups) {
    if (g.size() != size || size < 2 || fully_connected(g, out) != complete) return false;
    if (!complete) {
      g = cycle_order(g, adjacent);
      if (g.empty()) return false;
    }
  }
  const double ingress = ingress_of(t, into.front());
  for (int r = 0; r < n; ++r) {
    if (ingress <= 0 || std::abs(ingress_of(t, into[r]) - ingress) > 1e-9 * ingress) return false;
  }
  const int d = dims.count();
  dims.group_of.emplace_back(n);
  dims.position.emplace_back(n);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t i = 0; i < groups[g].size(); ++i) {
      dims.group_of[d][groups[g][i]] = static_cast<int>(g);
      dims.position[d][groups[g][i]] = static_cast<int>(i);
    }
  }
  dims.groups.push_back(std::move(groups));
  dims.ring.push_back(!complete);
  dims.ingress_mb_per_us.push_back(ingress);
  return true;
}

// Whether the groups form a Cartesian product: their sizes multiply to the rank count and no
// two ranks share a group in every dimension.
bool is_product(const TreeDimensions& dims, int num_ranks) {
  int64_t product = 1;
  for (int d = 0; d < dims.count(); ++d) product *= dims.size(d);
  if (product != num_ranks) return false;
  std::set<std::vector<int>> seen;
  for (int r = 0; r < num_ranks; ++r) {
    std::vector<int> key;
    for (int d = 0; d < dims.count(); ++d) key.push_back(dims.group_of[d][r]);
    if (!seen.insert(key).second) return false;
  }
  return true;
}

// Every permutation of 0..count-1, in lexicographic order.
std::vector<std::vector<int>> all_orders(int count) {
  std::vector<int> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::vector<std::vector<int>> out;
  do {
    out.push_back(order);
  } while (std::next_permutation(order.begin(), order.end()));
  return out;
}

// Busiest dimension's ingress per MB of a rank's data when trees_by_order[o] of k trees follow
// orders[o] (best_dims_mix's formula).
double mix_us_per_mb(const TreeDimensions& dims, const std::vector<std::vector<int>>& orders,
                     const std::vector<int>& trees_by_order, int k) {
  std::vector<double> load(dims.count(), 0);
  for (size_t o = 0; o < orders.size(); ++o) {
    double before = 1;
    for (int d : orders[o]) {
      load[d] += trees_by_order[o] * (dims.size(d) - 1) * before;
      before *= dims.size(d);
    }
  }
  double worst = 0;
  for (int d = 0; d < dims.count(); ++d)
    worst = std::max(worst, load[d] / k / dims.ingress_mb_per_us[d]);
  return worst;
}

// Calls visit(trees_by_order) for every way of splitting k trees over `parts` orders.
void for_each_split(int k, int parts, const std::function<void(const std::vector<int>&)>& visit) {
  std::vector<int> split(parts, 0);
  std::function<void(int, int)> place = [&](int part, int left) {
    if (part == parts - 1) {
      split[part] = left;
      visit(split);
      return;
    }
    for (int x = 0; x <= left; ++x) {
      split[part] = x;
      place(part + 1, left - x);
    }
  };
  place(0, k);
}

// Parents of dimension d's tree from `root` inside its group: a star, or both ways round a ring
// with the antipode (even sizes) reached clockwise when `clockwise_antipode`.
void group_tree(const TreeDimensions& dims, int d, int root, bool clockwise_antipode,
                std::vector<int>& parent) {
  const std::vector<int>& group = dims.groups[d][dims.group_of[d][root]];
  const int s = static_cast<int>(group.size()), p = dims.position[d][root];
  for (int i = 1; i < s; ++i) {
    const int v = group[(p + i) % s];
    if (!dims.ring[d]) {
      parent[v] = root;
      continue;
    }
    const bool clockwise = 2 * i < s || (2 * i == s && clockwise_antipode);
    parent[v] = group[(p + (clockwise ? i - 1 : i + 1)) % s];
  }
}

}  // namespace

TreeDimensions tree_dimensions(const Topology& t) {
  std::map<ConnectionClass, std::vector<Connection>> classes;
  for (const Connection& c : t.connections()) classes[class_of(t, c)].push_back(c);
  TreeDimensions dims;
  if (classes.size() < 2 || classes.size() > 3) return {};
  for (const auto& [_, conns] : classes) {
    if (!add_dimension(t, conns, dims)) return {};
  }
  return is_product(dims, t.num_ranks) ? dims : TreeDimensions{};
}

DimsMix best_dims_mix(const TreeDimensions& dims, int chunks, bool slowest_first) {
  DimsMix best;
  best.orders = all_orders(dims.count());
  best.us_per_mb = std::numeric_limits<double>::infinity();
  const auto& ingress = dims.ingress_mb_per_us;
  const int slowest =
      static_cast<int>(std::min_element(ingress.begin(), ingress.end()) - ingress.begin());
  // Whether `split` puts a tree on an order that does not start with the slowest dimension.
  auto leaves_slowest_first = [&](const std::vector<int>& split) {
    for (size_t o = 0; o < split.size(); ++o) {
      if (split[o] > 0 && best.orders[o].front() != slowest) return true;
    }
    return false;
  };
  for (int k = 1; k <= kMaxDimsTrees; ++k) {
    if (chunks > 0 && chunks % k != 0) continue;
    for_each_split(k, static_cast<int>(best.orders.size()), [&](const std::vector<int>& split) {
      if (slowest_first && leaves_slowest_first(split)) return;
      const double us = mix_us_per_mb(dims, best.orders, split, k);
      if (us < best.us_per_mb * (1 - 1e-9)) {
        best.trees = k;
        best.trees_by_order = split;
        best.us_per_mb = us;
      }
    });
  }
  return best;
}

TreePacking dims_trees(const Topology& t, const TreeDimensions& dims, const DimsMix& mix) {
  TreePacking out;
  out.num_ranks = t.num_ranks;
  out.trees_per_root = mix.trees;
  // Every rank sends its ring antipodes clockwise and counter-clockwise in turn, so that both
  // links into a ring member carry the same (the two ways differ on an odd count only by one).
  std::vector<std::vector<bool>> clockwise_next(dims.count(), std::vector<bool>(t.num_ranks, true));
  for (int root = 0; root < t.num_ranks; ++root) {
    for (size_t o = 0; o < mix.orders.size(); ++o) {
      for (int x = 0; x < mix.trees_by_order[o]; ++x) {
        std::vector<int> parent(t.num_ranks, -1);
        std::vector<int> reached{root};
        for (int d : mix.orders[o]) {
          const size_t before = reached.size();
          for (size_t i = 0; i < before; ++i) {
            const int from = reached[i];
            std::vector<bool>::reference clockwise = clockwise_next[d][from];
            group_tree(dims, d, from, clockwise, parent);
            clockwise = !clockwise;
            for (int v : dims.groups[d][dims.group_of[d][from]]) {
              if (v != from) reached.push_back(v);
            }
          }
        }
        CCSYNTH_CHECK(static_cast<int>(reached.size()) == t.num_ranks)
            << "the dimensions of " << t.name << " do not span it";
        out.parents.push_back(std::move(parent));
      }
    }
  }
  return out;
}

}  // namespace ccsynth::synth::detail
