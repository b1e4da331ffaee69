// The throughput method (synth/trees.h, docs/trees.md): greedy spanning out-tree packing under
// exponential congestion prices with rip-up-and-reroute, and the allgather / reducescatter /
// allreduce algorithms that pipeline chunks down the trees.

#include "ccsynth/synth/trees.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <numeric>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ccsynth/core/error.h"
#include "ccsynth/core/graph.h"
#include "ccsynth/core/units.h"
#include "ccsynth/synth/combine.h"

namespace ccsynth::synth {

namespace {

// Steepness of the congestion price exp(kPriceSteepness * load / (capacity * bound)): high
// enough that a resource at the bound costs e^10 times an idle one, so trees avoid it.
constexpr double kPriceSteepness = 10.0;
// Above this many ranks the default trees per root are chosen among 1 and 2 only (each
// candidate is a whole packing).
constexpr int kManyRanks = 256;
// Pipeline pieces per tree of the default chunk count up to kManyRanks ranks; above, one (the
// simulator and the runtime pipeline a chunk in FIFO slices anyway, and 1024 ranks with 4
// pieces make 4 million ops to schedule and compile).
constexpr int kDefaultPieces = 4;

// One directed edge of the packing graph (a link or a pair of switch members) and the resources
// (the link, or the switch ports it leaves and enters by, in that order) a transfer holds.
struct PackEdge {
  int src = 0;
  int dst = 0;
  std::vector<int> resources;
};

// The topology as the packing sees it: edges, per-rank out-edges and resource bandwidths.
struct PackGraph {
  int num_ranks = 0;
  std::vector<PackEdge> edges;
  std::vector<std::vector<int>> out_edges;
  std::vector<double> capacity;  // MB per us of every resource
};

// Resource ids by (kind, index, port, egress): links once each, switch ports once per direction
// (a port shared by several ranks is one resource).
class ResourceTable {
 public:
  int link(const Topology& t, int index) {
    const Link& l = t.links[index];
    return id({0, index, 0, 0}, l.lanes / l.beta_us_per_mb);
  }
  int port(const Switch& sw, int switch_index, int rank, bool egress) {
    return id({1, switch_index, sw.port_of_rank(rank), egress ? 1 : 0},
              1.0 / sw.port_beta_us_per_mb);
  }
  std::vector<double> capacities() const { return capacity_; }

 private:
  int id(std::tuple<int, int, int, int> key, double capacity) {
    const auto [it, added] = ids_.emplace(key, static_cast<int>(capacity_.size()));
    if (added) capacity_.push_back(capacity);
    return it->second;
  }
  std::map<std::tuple<int, int, int, int>, int> ids_;
  std::vector<double> capacity_;
};

// Rails between nodes (PackOptions::rails): a switch edge between two nodes is kept only from
// node i to the next node (i + 1 mod nodes) and between ports of the same local index (the
// p-th distinct port of the sender's node on that switch to the p-th of the receiver's node).
// Every port then exchanges bytes with one port only, in each direction, so the transfers
// sharing a port's egress are exactly those sharing the peer's ingress: no transfer is held
// back by a busier port at its other end (the simulator shares a port equally per transfer).
class Rails {
 public:
  explicit Rails(const Topology& t) : t_(t) {
    const int nodes = static_cast<int>(t.nodes.size());
    local_port_.resize(t.switches.size());
    for (size_t w = 0; w < t.switches.size(); ++w) {
      std::vector<std::vector<int>> seen(std::max(nodes, 1));
      for (int rank : t.switches[w].ranks) {
        const int port = t.switches[w].port_of_rank(rank);
        std::vector<int>& ports = seen[t.node_of(rank)];
        auto it = std::find(ports.begin(), ports.end(), port);
        if (it == ports.end()) it = ports.insert(ports.end(), port);
        local_port_[w][rank] = static_cast<int>(it - ports.begin());
      }
    }
  }

  bool keeps(const Connection& c) const {
    if (c.switch_index < 0) return true;
    const int from = t_.node_of(c.src), to = t_.node_of(c.dst);
    if (from == to) return true;
    const int nodes = static_cast<int>(t_.nodes.size());
    const auto& local = local_port_[c.switch_index];
    return to == (from + 1) % nodes && local.at(c.src) == local.at(c.dst);
  }

 private:
  const Topology& t_;
  std::vector<std::unordered_map<int, int>> local_port_;  // per switch: rank -> local port
};

// Whether every rank reaches every other along the graph's edges (forward and backward from 0).
bool strongly_connected(const PackGraph& g) {
  std::vector<std::vector<int>> adjacency(g.num_ranks);
  for (const PackEdge& e : g.edges) adjacency[e.src].push_back(e.dst);
  auto reaches_all = [](const std::vector<int>& hops) {
    return std::none_of(hops.begin(), hops.end(), [](int h) { return h < 0; });
  };
  return reaches_all(bfs_hop_distances(adjacency, 0)) &&
         reaches_all(bfs_hop_distances(reverse_adjacency(adjacency), 0));
}

// The packing graph of `t`; transposed reverses every edge but keeps its resources (an in-tree
// of the topology is an out-tree of the transposed graph).
PackGraph build_graph(const Topology& t, bool transposed, bool rails) {
  PackGraph g;
  g.num_ranks = t.num_ranks;
  g.out_edges.resize(t.num_ranks);
  ResourceTable table;
  const Rails rail(t);
  for (const Connection& c : t.connections()) {
    if (rails && !rail.keeps(c)) continue;
    PackEdge e{c.src, c.dst, {}};
    if (c.link_index >= 0) {
      e.resources = {table.link(t, c.link_index)};
    } else {
      const Switch& sw = t.switches[c.switch_index];
      e.resources = {table.port(sw, c.switch_index, c.src, true),
                     table.port(sw, c.switch_index, c.dst, false)};
    }
    if (transposed) {
      std::swap(e.src, e.dst);
      std::reverse(e.resources.begin(), e.resources.end());
    }
    g.out_edges[e.src].push_back(static_cast<int>(g.edges.size()));
    g.edges.push_back(std::move(e));
  }
  g.capacity = table.capacities();
  if (rails && !strongly_connected(g)) {
    throw UserError("", "rails",
                    "rails between the nodes of " + t.name + " leave some ranks unreachable");
  }
  return g;
}

// The per-rank bound in us per MB of one tree's data: the (R-1) * k trees of the other roots
// enter every rank, and its own k trees leave it, through the distinct resources of its
// in-edges (out-edges).
double port_bound(const PackGraph& g, int trees_per_root) {
  const int n = g.num_ranks;
  std::vector<std::vector<int>> in(n), out(n);
  for (const PackEdge& e : g.edges) {
    // A link is both; through a switch the sender's egress port and the receiver's ingress.
    out[e.src].push_back(e.resources.front());
    in[e.dst].push_back(e.resources.back());
  }
  auto capacity_of = [&g](std::vector<int>& ids) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    double sum = 0;
    for (int id : ids) sum += g.capacity[id];
    return sum;
  };
  double bound = 0;
  for (int r = 0; r < n; ++r) {
    const double ingress = (n - 1.0) * trees_per_root / capacity_of(in[r]);
    const double egress = 1.0 * trees_per_root / capacity_of(out[r]);
    bound = std::max({bound, ingress, egress});
  }
  return bound;
}

// The greedy packer's state: resource loads (trees through each) and the congestion prices.
class Packer {
 public:
  Packer(const PackGraph& g, double bound, double depth_weight)
      : g_(g),
        bound_(bound),
        load_(g.capacity.size(), 0),
        marginal_(g.capacity.size()),
        depth_weight_(depth_weight) {
    for (size_t r = 0; r < load_.size(); ++r) update(static_cast<int>(r));
  }

  // A spanning out-tree from `root` (parent edge per rank, -1 at the root), grown like Prim's
  // algorithm: always the cheapest edge from the tree to a rank outside it, the shallower on
  // ties, where an edge costs the marginal congestion price of one more tree on its resources.
  // Each edge is charged as it joins, so the tree pays for its own load too (a star that sends
  // 15 copies from one port prices that port up as it grows); a frontier edge whose price rose
  // since it was queued is queued again at its new price. The tree stays charged.
  std::vector<int> grow(int root) {
    const int n = g_.num_ranks;
    std::vector<int> parent_edge(n, -1), depth(n, 0);
    std::vector<bool> in_tree(n, false);
    using Item = std::tuple<double, int, int>;  // cost, depth, edge
    std::priority_queue<Item, std::vector<Item>, std::greater<>> frontier;
    auto expand = [&](int u) {
      in_tree[u] = true;
      for (int e : g_.out_edges[u]) {
        if (!in_tree[g_.edges[e].dst]) frontier.emplace(key(e, depth[u] + 1), depth[u] + 1, e);
      }
    };
    expand(root);
    int reached = 1;
    while (!frontier.empty() && reached < n) {
      const auto [c, d, e] = frontier.top();
      frontier.pop();
      const int v = g_.edges[e].dst;
      if (in_tree[v]) continue;
      if (const double now = key(e, d); now > c) {
        frontier.emplace(now, d, e);
        continue;
      }
      parent_edge[v] = e;
      depth[v] = d;
      charge_edge(e, +1);
      ++reached;
      expand(v);
    }
    CCSYNTH_CHECK(reached == n) << "topology is not strongly connected";
    return parent_edge;
  }

  // Removes one tree's load (to grow it again).
  void remove(const std::vector<int>& parent_edge) {
    for (int e : parent_edge) {
      if (e >= 0) charge_edge(e, -1);
    }
  }

  // Largest load / capacity over the resources (us per MB of one tree's data).
  double bottleneck() const {
    double worst = 0;
    for (size_t r = 0; r < load_.size(); ++r) worst = std::max(worst, load_[r] / g_.capacity[r]);
    return worst;
  }

 private:
  double price(int resource, double load) const {
    return std::exp(kPriceSteepness * load / (g_.capacity[resource] * bound_));
  }
  void charge_edge(int edge, int sign) {
    for (int r : g_.edges[edge].resources) {
      load_[r] += sign;
      update(r);
    }
  }
  // The price of one more tree on `resource`, kept current as its load changes.
  void update(int resource) {
    marginal_[resource] = price(resource, load_[resource] + 1) - price(resource, load_[resource]);
  }
  // The frontier key: the edge's price, raised by depth_weight_ per level so that among nearly
  // equally loaded choices shallow trees win (a shorter pipeline to fill).
  double key(int edge, int depth) const { return cost(edge) * (1 + depth_weight_ * depth); }
  double cost(int edge) const {
    double sum = 0;
    for (int r : g_.edges[edge].resources) sum += marginal_[r];
    return sum;
  }

  const PackGraph& g_;
  double bound_;
  std::vector<double> load_;
  std::vector<double> marginal_;
  double depth_weight_;
};

std::vector<int> parents_of(const PackGraph& g, const std::vector<int>& parent_edge) {
  std::vector<int> parent(parent_edge.size(), -1);
  for (size_t v = 0; v < parent_edge.size(); ++v) {
    if (parent_edge[v] >= 0) parent[v] = g.edges[parent_edge[v]].src;
  }
  return parent;
}

// Depth of every rank in a tree given by parents (-1 at the root).
std::vector<int> depths(const std::vector<int>& parent) {
  const int n = static_cast<int>(parent.size());
  std::vector<int> depth(n, -1);
  std::function<int(int)> depth_of = [&](int v) {
    if (depth[v] >= 0) return depth[v];
    return depth[v] = parent[v] < 0 ? 0 : depth_of(parent[v]) + 1;
  };
  for (int v = 0; v < n; ++v) depth_of(v);
  return depth;
}

// Channel hints for tree edges: trees sharing a link of L lanes take channels 0..L-1 in turn,
// so that the compiler gives each lane its own threadblock (one transfer at a time each); -1
// (the compiler's choice) on single-lane connections. In-trees use the reversed connection.
class LaneCounter {
 public:
  LaneCounter(const Topology& t, bool transposed) : ranks_(t.num_ranks), transposed_(transposed) {
    for (const Connection& c : t.connections()) {
      if (c.lanes > 1) lanes_[key(c.src, c.dst)] = {c.lanes, 0};
    }
  }

  int next_channel(int u, int v) {
    const auto it = lanes_.find(transposed_ ? key(v, u) : key(u, v));
    if (it == lanes_.end()) return -1;
    auto& [lanes, used] = it->second;
    return used++ % lanes;
  }

 private:
  int64_t key(int u, int v) const { return static_cast<int64_t>(u) * ranks_ + v; }

  int ranks_;
  bool transposed_;
  std::unordered_map<int64_t, std::pair<int, int>> lanes_;  // lanes, trees so far
};

// Ops of an allgather down the packed trees: tree j of root r carries chunks r*C + j*p ..
// + p - 1 (p = C / trees per root); piece i crosses the edge into a rank at depth d in step
// i + d - 1, so consecutive pieces follow each other down the tree.
Algorithm allgather_down_trees(const TreePacking& packing, Collective collective,
                               LaneCounter lanes) {
  Algorithm a;
  a.collective = std::move(collective);
  const int per_root = packing.trees_per_root;
  const int pieces = a.collective.chunks_per_rank / per_root;
  for (size_t t = 0; t < packing.parents.size(); ++t) {
    const std::vector<int>& parent = packing.parents[t];
    const std::vector<int> depth = depths(parent);
    const int root = static_cast<int>(t) / per_root;
    const int first =
        root * a.collective.chunks_per_rank + (static_cast<int>(t) % per_root) * pieces;
    for (int v = 0; v < packing.num_ranks; ++v) {
      if (parent[v] < 0) continue;
      const int channel = lanes.next_channel(parent[v], v);
      for (int i = 0; i < pieces; ++i) {
        a.ops.push_back({first + i, parent[v], v, OpKind::kCopy, i + depth[v] - 1, -1, 1, channel});
      }
    }
  }
  sort_ops(a);
  return a;
}

// Start times for the ops of `a` by event-driven list scheduling (docs/trees.md): an op is
// ready once every earlier-step op into (src, chunk) has ended; a ready op starts as soon as its
// connection's resources are free (a lane of its link, or the egress and ingress ports of its
// switch, each serving one transfer at a time at full bandwidth), first come first served per
// connection, and holds them for alpha + chunk_bytes x beta. The compiler can then order every
// threadblock by these times (CompileOptions::schedule_order), so that no link idles behind a
// chunk that arrives late. Returns the schedule's makespan.
class ListScheduler {
 public:
  ListScheduler(Algorithm& a, const Topology& t, double chunk_bytes)
      : a_(a), t_(t), chunk_bytes_(chunk_bytes) {}

  double run() {
    sort_ops(a_);
    build();
    for (size_t i = 0; i < a_.ops.size(); ++i) {
      if (missing_[i] == 0) make_ready(static_cast<int>(i), 0.0);
    }
    double now = 0;
    while (!events_.empty()) {
      const auto [end, op] = events_.top();
      events_.pop();
      now = end;
      finish(op, now);
    }
    sort_ops(a_);
    return now;
  }

 private:
  struct Route {
    std::vector<int> resources;  // lanes pool or ports, each with free_[] capacity counts
    Connection connection;
    std::deque<int> waiting;  // ready ops in arrival order
  };

  int resource(std::map<std::tuple<int, int, int>, int>& ids, std::tuple<int, int, int> key,
               int capacity) {
    const auto [it, added] = ids.emplace(key, static_cast<int>(free_.size()));
    if (added) {
      free_.push_back(capacity);
      users_.emplace_back();
    }
    return it->second;
  }

  // Routes, resources, and per op its unfinished predecessors and its readers.
  void build() {
    const int ranks = t_.num_ranks;
    const size_t chunks = a_.collective.num_chunks();
    std::vector<int> route_ids(static_cast<size_t>(ranks) * ranks, -1);  // by src * R + dst
    std::map<std::tuple<int, int, int>, int> resource_ids;
    std::vector<std::vector<int>> writers(ranks * chunks);  // by rank * chunks + chunk, in order
    const size_t n = a_.ops.size();
    route_of_.resize(n);
    missing_.assign(n, 0);
    readers_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const ChunkOp& op = a_.ops[i];
      int& route = route_ids[static_cast<size_t>(op.src) * ranks + op.dst];
      if (route < 0) {
        route = static_cast<int>(routes_.size());
        Route r;
        r.connection = t_.connection(op.src, op.dst).value();
        const Connection& c = r.connection;
        if (c.link_index >= 0) {
          r.resources = {resource(resource_ids, {0, c.link_index, 0}, c.lanes)};
        } else {
          const Switch& sw = t_.switches[c.switch_index];
          const int base = 1 + 2 * c.switch_index;
          r.resources = {resource(resource_ids, {base, sw.port_of_rank(op.src), 0}, 1),
                         resource(resource_ids, {base + 1, sw.port_of_rank(op.dst), 0}, 1)};
        }
        for (int res : r.resources) users_[res].push_back(static_cast<int>(routes_.size()));
        routes_.push_back(std::move(r));
      }
      route_of_[i] = route;
      for (int k = 0; k < op.count; ++k) {
        for (int w : writers[op.src * chunks + op.chunk + k]) {
          if (a_.ops[w].step >= op.step) continue;
          readers_[w].push_back(static_cast<int>(i));
          ++missing_[i];
        }
      }
      for (int k = 0; k < op.count; ++k)
        writers[op.dst * chunks + op.chunk + k].push_back(static_cast<int>(i));
    }
  }

  void make_ready(int op, double now) {
    routes_[route_of_[op]].waiting.push_back(op);
    try_start(route_of_[op], now);
  }

  // Starts the route's waiting ops while its resources have room.
  void try_start(int route, double now) {
    Route& r = routes_[route];
    while (!r.waiting.empty() && std::all_of(r.resources.begin(), r.resources.end(),
                                             [this](int x) { return free_[x] > 0; })) {
      const int op = r.waiting.front();
      r.waiting.pop_front();
      for (int x : r.resources) --free_[x];
      a_.ops[op].start_us = now;
      events_.emplace(now + r.connection.cost_us(chunk_bytes_ * a_.ops[op].count), op);
    }
  }

  void finish(int op, double now) {
    const Route& r = routes_[route_of_[op]];
    for (int x : r.resources) ++free_[x];
    for (int reader : readers_[op]) {
      if (--missing_[reader] == 0) make_ready(reader, now);
    }
    for (int x : r.resources) {
      for (int route : users_[x]) try_start(route, now);
    }
  }

  Algorithm& a_;
  const Topology& t_;
  double chunk_bytes_;
  std::vector<Route> routes_;
  std::vector<int> route_of_, missing_, free_;
  std::vector<std::vector<int>> readers_, users_;
  using Event = std::pair<double, int>;  // end time, op
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
};

void check_inputs(const Topology& topology, const Collective& c, int trees_per_root) {
  if (topology.num_ranks != c.num_ranks) {
    throw UserError("", "collective",
                    "collective has " + std::to_string(c.num_ranks) + " ranks but topology " +
                        topology.name + " has " + std::to_string(topology.num_ranks));
  }
  if (c.chunks_per_rank % trees_per_root != 0) {
    throw UserError("", "trees",
                    std::to_string(trees_per_root) + " trees per root do not divide " +
                        std::to_string(c.chunks_per_rank) + " chunks per rank");
  }
}

// Depth weights tried (PackOptions::depth_weight): above kManyRanks only 0, where pipelines
// are long anyway and each packing costs seconds.
std::vector<double> depth_weights(const Topology& t) {
  if (t.num_ranks > kManyRanks) return {0.0};
  return {0.0, 0.1, 0.5};
}

// The candidate whose packing has the smallest bottleneck per byte of a rank's data (a tree
// carries 1 / k of it); the fewest trees unless more are 0.5% better.
int best_of(const Topology& topology, const std::vector<int>& candidates, int refine_passes,
            bool rails) {
  if (candidates.size() == 1) return candidates.front();  // nothing to compare
  int best = candidates.front();
  double best_per_byte = 0;
  for (const int k : candidates) {
    const TreePacking p = pack_trees(topology, k, {false, refine_passes, 0.0, rails});
    const double per_byte = p.bottleneck_us_per_mb / k;
    if (k == candidates.front() || per_byte < best_per_byte * 0.995) {
      best = k;
      best_per_byte = per_byte;
    }
  }
  return best;
}

// The trees per root for `chunks`: the given count, or the best divisor of chunks up to 8.
int choose_trees(const Topology& topology, int chunks, const TreesOptions& o, bool rails) {
  if (o.trees_per_root > 0) return o.trees_per_root;
  std::vector<int> divisors;
  for (int k = 1; k <= std::min(chunks, 8); ++k) {
    if (chunks % k == 0) divisors.push_back(k);
  }
  return best_of(topology, divisors, o.refine_passes, rails);
}

}  // namespace

TreePacking pack_trees(const Topology& topology, int trees_per_root, const PackOptions& o) {
  if (trees_per_root < 1) throw UserError("", "trees", "must be >= 1");
  const PackGraph g = build_graph(topology, o.transposed, o.rails);
  TreePacking out;
  out.num_ranks = topology.num_ranks;
  out.trees_per_root = trees_per_root;
  out.port_bound_us_per_mb = port_bound(g, trees_per_root);
  Packer packer(g, out.port_bound_us_per_mb, o.depth_weight);
  const int n = topology.num_ranks;
  std::vector<std::vector<int>> trees(static_cast<size_t>(n) * trees_per_root);
  // Round-robin over roots so that every root's first tree sees the same early prices.
  for (int j = 0; j < trees_per_root; ++j) {
    for (int r = 0; r < n; ++r) {
      std::vector<int>& tree = trees[static_cast<size_t>(r) * trees_per_root + j];
      tree = packer.grow(r);
    }
  }
  for (int pass = 0; pass < o.refine_passes; ++pass) {
    for (size_t t = 0; t < trees.size(); ++t) {
      packer.remove(trees[t]);
      trees[t] = packer.grow(static_cast<int>(t) / trees_per_root);
    }
  }
  out.bottleneck_us_per_mb = packer.bottleneck();
  for (const std::vector<int>& tree : trees) {
    out.parents.push_back(parents_of(g, tree));
    const std::vector<int> depth = depths(out.parents.back());
    out.max_depth = std::max(out.max_depth, *std::max_element(depth.begin(), depth.end()));
  }
  return out;
}

int best_trees_per_root(const Topology& topology, int max_trees) {
  if (max_trees < 0) throw UserError("", "trees", "must be >= 0");
  if (max_trees == 0) max_trees = topology.num_ranks > kManyRanks ? 2 : 8;
  std::vector<int> candidates(max_trees);
  std::iota(candidates.begin(), candidates.end(), 1);
  return best_of(topology, candidates, PackOptions{}.refine_passes, false);
}

bool uses_rails_by_default(const Topology& topology) {
  for (const Switch& sw : topology.switches) {
    std::vector<int> nodes;
    for (int rank : sw.ranks) nodes.push_back(topology.node_of(rank));
    std::sort(nodes.begin(), nodes.end());
    if (std::unique(nodes.begin(), nodes.end()) - nodes.begin() >= 3) return true;
  }
  return false;
}

int default_chunks_per_rank(const Topology& topology) {
  return best_trees_per_root(topology) * (topology.num_ranks > kManyRanks ? 1 : kDefaultPieces);
}

TreesResult synthesize_trees(const Topology& topology, const Collective& c, const TreesOptions& o) {
  const int chunks = c.chunks_per_rank;
  const bool rails = o.rails < 0 ? uses_rails_by_default(topology) : o.rails != 0;
  const int k = choose_trees(topology, chunks, o, rails);
  check_inputs(topology, c, k);
  TreesResult r;
  r.trees_per_root = k;
  r.pieces = chunks / k;
  r.rails = rails;
  const int n = c.num_ranks;
  const Collective ag = make_collective(CollectiveKind::kAllGather, n, chunks);
  const double chunk_bytes = static_cast<double>(o.bytes) / c.input_chunks;
  // The last phase's schedule makespan (the estimate of a one-phase collective).
  double best_us = 0;
  // One phase: an allgather down out-trees, or (transposed) the inverse of one down in-trees,
  // where reductions flow up to every root; of the packings with each depth weight, the one
  // whose list schedule ends first.
  auto phase = [&](bool transposed) {
    Algorithm best;
    best_us = 0;
    for (const double weight : depth_weights(topology)) {
      const TreePacking p = pack_trees(topology, k, {transposed, o.refine_passes, weight, rails});
      Algorithm a = allgather_down_trees(p, ag, LaneCounter(topology, transposed));
      if (transposed) a = invert(a);
      const double us = ListScheduler(a, topology, chunk_bytes).run();
      if (best_us > 0 && us >= best_us) continue;
      best = std::move(a);
      best_us = us;
      r.max_depth = p.max_depth;
      r.bottleneck_ratio = p.bottleneck_us_per_mb / p.port_bound_us_per_mb;
      // A tree carries C / k chunks.
      r.packed_us = p.bottleneck_us_per_mb * chunks / k * chunk_bytes / kBytesPerMb;
    }
    return best;
  };
  auto allgather = [&] { return phase(false); };
  auto reducescatter = [&] { return phase(true); };
  switch (c.kind) {
    case CollectiveKind::kAllGather:
      r.algorithm = allgather();
      r.estimate_us = best_us;  // start times already set by the phase's schedule
      break;
    case CollectiveKind::kReduceScatter:
      r.algorithm = reducescatter();
      r.estimate_us = best_us;
      break;
    case CollectiveKind::kAllReduce: {
      const Algorithm rs = reducescatter();
      const TreesResult first = r;
      const Algorithm ag_phase = allgather();
      r.max_depth = std::max(r.max_depth, first.max_depth);
      r.bottleneck_ratio = std::max(r.bottleneck_ratio, first.bottleneck_ratio);
      r.packed_us += first.packed_us;
      r.algorithm = allreduce_from(rs, ag_phase);
      r.estimate_us = ListScheduler(r.algorithm, topology, chunk_bytes).run();
      break;
    }
    default:
      throw UserError("", "collective",
                      "trees synthesizes allgather, reducescatter and allreduce, not " + c.name);
  }
  r.algorithm.name = "trees_" + c.name;
  r.algorithm.topology = topology.name;
  return r;
}

}  // namespace ccsynth::synth
