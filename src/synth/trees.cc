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
#include <optional>
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
#include "trees_dims.h"

namespace ccsynth::synth {

namespace {

// Steepness of the congestion price exp(kPriceSteepness * load / (capacity * bound)): high
// enough that a resource at the bound costs e^10 times an idle one, so trees avoid it.
constexpr double kPriceSteepness = 10.0;
// Above this many ranks the default trees per root are chosen among 1 and 2 only (each
// candidate is a whole packing).
constexpr int kManyRanks = 256;
// Channels of one phase of the spray split on a connection (a tree each, then in turn): half the
// executor dialect's 32, so that an allreduce's allgather runs on channels of its own, beside
// its reducescatter. (At 1 GiB per rank on dgxh100x2, 16 channels: allgather 1.009x the bound,
// reducescatter 1.029x; 32: 1.006x and 1.076x, a slice through a port shared by more
// transfers taking longer to drain; 8: 1.16x and 1.03x.)
constexpr int kSprayChannels = 16;
// Channels of the dimension-order split on a connection (a tree each, then in turn): the
// executor dialect's 32. Its trees of 1-4 hops meet many others on every link, and trees that
// share a threadblock move slice by slice in step (the runtime runs a threadblock's steps per
// slice), so more channels keep the early hops from waiting for the late ones (rfs:4x4x4
// allgather at 1 GiB, 15 trees per root: 8 channels 1.11x the bound, 16 1.26x, 32 1.008x).
constexpr int kDimsChannels = 32;
// Most trees per root the spray split uses (k in best_spray).
constexpr int kMaxSprayTrees = 64;
// Pipeline pieces per tree of the default chunk count up to kManyRanks ranks; above, one (the
// simulator and the runtime pipeline a chunk in FIFO slices anyway, and 1024 ranks with 4
// pieces make 4 million ops to schedule and compile).
constexpr int kDefaultPieces = 4;
// Rounds of the joint allreduce packing, each packing both phases, each on top of the other's
// load (mesh2d:8x8 at 1 GiB, 2 trees per root: packed 1.17x the traffic bound after 1 round,
// 1.08x after 2, 1.04x after 4, 1.03x after 8; simulated 1.29x, 1.26x, 1.23x, 1.29x). Above
// kManyRanks one (rfs:8x8x8 at 1 MiB: 35.95 us after 1 round, 41.37 after 2; each round packs
// both phases of 512 roots).
constexpr int kJointRounds = 4;

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

// Whether every member of `members` lies in one node of `t`.
bool in_one_node(const Topology& t, const std::vector<int>& members) {
  return std::all_of(members.begin(), members.end(),
                     [&](int r) { return t.node_of(r) == t.node_of(members.front()); });
}

// Whether a switch joins ranks of more than one node (a NIC switch, not an in-node one).
bool joins_nodes(const Topology& t, const Switch& sw) { return !in_one_node(t, sw.ranks); }

// The packing graph of `t` among `members` (every rank when empty; ranks renumbered by their
// position in members); transposed reverses every edge but keeps its resources (an in-tree of
// the topology is an out-tree of the transposed graph). Members of one node keep only its links
// and in-node switches. Resources come from `table`, which packings of one phase share.
PackGraph build_graph(const Topology& t, bool transposed, bool rails,
                      const std::vector<int>& members, ResourceTable& table) {
  PackGraph g;
  std::vector<int> local(t.num_ranks, members.empty() ? 0 : -1);
  if (members.empty()) std::iota(local.begin(), local.end(), 0);
  for (size_t i = 0; i < members.size(); ++i) local.at(members[i]) = static_cast<int>(i);
  const bool one_node = !members.empty() && in_one_node(t, members);
  g.num_ranks = members.empty() ? t.num_ranks : static_cast<int>(members.size());
  g.out_edges.resize(g.num_ranks);
  const Rails rail(t);
  for (const Connection& c : t.connections()) {
    if (local[c.src] < 0 || local[c.dst] < 0 || (rails && !rail.keeps(c))) continue;
    if (one_node && c.switch_index >= 0 && joins_nodes(t, t.switches[c.switch_index])) continue;
    PackEdge e{local[c.src], local[c.dst], {}};
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
  if (!strongly_connected(g)) {
    throw UserError("", rails ? "rails" : "trees",
                    std::string(rails ? "rails between the nodes of " : "the connections of ") +
                        t.name + " leave some ranks unreachable" +
                        (members.empty() ? "" : " among a group of its ranks"));
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
  // `load`: trees other packings of the same phase already put on each resource.
  Packer(const PackGraph& g, double bound, double depth_weight, std::vector<double> load)
      : g_(g),
        bound_(bound),
        load_(std::move(load)),
        marginal_(g.capacity.size()),
        depth_weight_(depth_weight) {
    load_.resize(g.capacity.size(), 0);
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

  const std::vector<double>& loads() const { return load_; }

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

// pack_trees on `table`'s resources on top of `load` (trees that other packings of the same
// phase put on each resource; this packing's are added): the prices and the bottleneck see both.
TreePacking pack_into(const Topology& topology, int trees_per_root, const PackOptions& o,
                      ResourceTable& table, std::vector<double>& load) {
  if (trees_per_root < 1) throw UserError("", "trees", "must be >= 1");
  const PackGraph g = build_graph(topology, o.transposed, o.rails, o.members, table);
  TreePacking out;
  out.num_ranks = g.num_ranks;
  out.trees_per_root = trees_per_root;
  out.port_bound_us_per_mb = port_bound(g, trees_per_root);
  Packer packer(g, out.port_bound_us_per_mb, o.depth_weight, load);
  const int n = g.num_ranks;
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
  load = packer.loads();
  for (const std::vector<int>& tree : trees) {
    out.parents.push_back(parents_of(g, tree));
    const std::vector<int> depth = depths(out.parents.back());
    out.max_depth = std::max(out.max_depth, *std::max_element(depth.begin(), depth.end()));
  }
  return out;
}

// Fills the bottleneck, the per-rank port bound and the deepest tree of explicitly built trees
// (every edge a connection of the topology), as pack_trees reports them for its own.
void tally_packing(const Topology& t, TreePacking& packing) {
  ResourceTable table;
  const PackGraph g = build_graph(t, false, false, {}, table);
  std::unordered_map<int64_t, int> edge_of;
  for (size_t e = 0; e < g.edges.size(); ++e)
    edge_of[static_cast<int64_t>(g.edges[e].src) * t.num_ranks + g.edges[e].dst] =
        static_cast<int>(e);
  std::vector<double> load(g.capacity.size(), 0);
  packing.max_depth = 0;
  for (const std::vector<int>& parent : packing.parents) {
    const std::vector<int> depth = depths(parent);
    packing.max_depth = std::max(packing.max_depth, *std::max_element(depth.begin(), depth.end()));
    for (int v = 0; v < t.num_ranks; ++v) {
      if (parent[v] < 0) continue;
      const auto it = edge_of.find(static_cast<int64_t>(parent[v]) * t.num_ranks + v);
      CCSYNTH_CHECK(it != edge_of.end()) << "tree edge " << parent[v] << "->" << v;
      for (int r : g.edges[it->second].resources) load[r] += 1;
    }
  }
  packing.bottleneck_us_per_mb = 0;
  for (size_t r = 0; r < load.size(); ++r)
    packing.bottleneck_us_per_mb = std::max(packing.bottleneck_us_per_mb, load[r] / g.capacity[r]);
  packing.port_bound_us_per_mb = port_bound(g, packing.trees_per_root);
}

// Channel hints for tree edges: trees sharing a link of L lanes take channels 0..L-1 in turn,
// so that the compiler gives each lane its own threadblock (one transfer at a time each); on a
// switch port faster than one threadblock, trees sharing a connection likewise take as many
// channels as the port needs threadblocks; -1 (the compiler's choice) elsewhere. In-trees use
// the reversed connection.
class LaneCounter {
 public:
  LaneCounter(const Topology& t, bool transposed) : ranks_(t.num_ranks), transposed_(transposed) {
    for (const Connection& c : t.connections()) {
      const int lanes = std::max(c.lanes, threadblocks_to_fill(t, c));
      if (lanes > 1) lanes_[key(c.src, c.dst)] = {lanes, 0};
    }
  }

  // Threadblocks a switch connection needs to fill its port alone when one threadblock moves at
  // most Topology::threadblock_gbps (an NVSwitch port of 300 GB/s: 12 at 25 GB/s); 1 otherwise.
  // (Fewer, e.g. 2 per peer with 7 peers, measured slower: trees do not use every peer at once.)
  static int threadblocks_to_fill(const Topology& t, const Connection& c) {
    if (c.switch_index < 0 || t.threadblock_gbps <= 0) return 1;
    const double port_gbps = gbps_from_beta(t.switches[c.switch_index].port_beta_us_per_mb);
    return std::max(1, static_cast<int>(std::ceil(port_gbps / t.threadblock_gbps - 1e-9)));
  }

  // Every tree on a connection its own channel, up to `channels` (then in turn): transfers
  // sharing a port then get shares of it in proportion to the trees they carry (the simulator
  // shares a port equally per transfer), and a tree never waits in a threadblock behind another.
  static LaneCounter channel_per_tree(const Topology& t, bool transposed, int channels) {
    LaneCounter out(t.num_ranks, transposed);
    for (const Connection& c : t.connections()) out.lanes_[out.key(c.src, c.dst)] = {channels, 0};
    return out;
  }

  int next_channel(int u, int v) {
    const auto it = lanes_.find(transposed_ ? key(v, u) : key(u, v));
    if (it == lanes_.end()) return -1;
    auto& [lanes, used] = it->second;
    return used++ % lanes;
  }

 private:
  LaneCounter(int ranks, bool transposed) : ranks_(ranks), transposed_(transposed) {}
  int64_t key(int u, int v) const { return static_cast<int64_t>(u) * ranks_ + v; }

  int ranks_;
  bool transposed_;
  std::unordered_map<int64_t, std::pair<int, int>> lanes_;  // lanes, trees so far
};

// Ops of an allgather down the packed trees: tree j of root r carries chunks r*C + j*p ..
// + p - 1 (p = C / trees per root); piece i crosses the edge into a rank at depth d in step
// i + d - 1, so consecutive pieces follow each other down the tree.
// `members` names the ranks of the packing's indices (empty: the same numbers), for the lanes.
Algorithm allgather_down_trees(const TreePacking& packing, Collective collective, LaneCounter lanes,
                               const std::vector<int>& members = {}) {
  auto rank = [&members](int v) { return members.empty() ? v : members[v]; };
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
      const int channel = lanes.next_channel(rank(parent[v]), rank(v));
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

// The divisors of `chunks` up to 8: the trees per root that can share its chunks evenly.
std::vector<int> divisors_up_to_8(int chunks) {
  std::vector<int> out;
  for (int k = 1; k <= std::min(chunks, 8); ++k) {
    if (chunks % k == 0) out.push_back(k);
  }
  return out;
}

// The packings of one phase of the hierarchical split over several rank groups (the nodes, or
// the rails), packed one after the other against the load of those before, so that groups
// sharing a resource (the rails of a NIC that two GPUs share) share it in the prices and in the
// bottleneck.
struct GroupPacking {
  std::vector<TreePacking> packings;  // per group, parents over the group's indices
  double bottleneck_us_per_mb = 0;    // of one tree's data, over all groups' load together
  double port_bound_us_per_mb = 0;    // the largest group's per-rank bound
  int max_depth = 0;
};

GroupPacking pack_groups(const Topology& t, const std::vector<std::vector<int>>& groups,
                         int trees_per_root, PackOptions o) {
  ResourceTable table;
  std::vector<double> load;
  GroupPacking out;
  for (const std::vector<int>& members : groups) {
    o.members = members;
    out.packings.push_back(pack_into(t, trees_per_root, o, table, load));
    out.max_depth = std::max(out.max_depth, out.packings.back().max_depth);
    out.port_bound_us_per_mb =
        std::max(out.port_bound_us_per_mb, out.packings.back().port_bound_us_per_mb);
    out.bottleneck_us_per_mb = out.packings.back().bottleneck_us_per_mb;  // load so far
  }
  return out;
}

// Of `candidates` (trees per root, ascending), the one whose packing has the smallest
// bottleneck per byte, `bottleneck_us_per_mb(k)` / k: the fewest unless more are 0.5% better.
// Packs nothing when there is a single candidate.
template <typename Bottleneck>
int best_trees_count(const std::vector<int>& candidates, Bottleneck bottleneck_us_per_mb) {
  if (candidates.size() == 1) return candidates.front();  // nothing to compare
  int best = candidates.front();
  double best_per_byte = 0;
  for (const int k : candidates) {
    const double per_byte = bottleneck_us_per_mb(k) / k;
    if (k == candidates.front() || per_byte < best_per_byte * 0.995) {
      best = k;
      best_per_byte = per_byte;
    }
  }
  return best;
}

// Of the divisors of `chunks` up to 8, the trees per root whose group packing has the
// smallest bottleneck per byte (best_trees_count).
int best_group_trees(const Topology& t, const std::vector<std::vector<int>>& groups, int chunks,
                     const PackOptions& o) {
  return best_trees_count(divisors_up_to_8(chunks),
                          [&](int k) { return pack_groups(t, groups, k, o).bottleneck_us_per_mb; });
}

// The rank groups of the hierarchical split: the nodes, and the rails (rails[g]: the rank of
// local index g of every node, in node order). Empty unless there are 2 or more nodes of equal
// size >= 2.
struct Hierarchy {
  std::vector<std::vector<int>> nodes, rails;
  bool applies() const { return !rails.empty(); }
};

Hierarchy hierarchy_of(const Topology& t) {
  Hierarchy h;
  if (t.nodes.size() < 2 || t.nodes.front().size() < 2) return h;
  for (const std::vector<int>& node : t.nodes) {
    if (node.size() != t.nodes.front().size()) return h;
  }
  h.nodes = t.nodes;
  h.rails.assign(t.nodes.front().size(), {});
  for (const std::vector<int>& node : t.nodes) {
    for (size_t g = 0; g < node.size(); ++g) h.rails[g].push_back(node[g]);
  }
  return h;
}

// Appends the ops of `local`, an algorithm among `members` (its rank i is members[i]), with
// chunks renamed by chunk_of (local -> global) and steps shifted by step0.
void append_placed(const Algorithm& local, const std::vector<int>& members,
                   const std::vector<int>& chunk_of, int step0, Algorithm& out) {
  for (ChunkOp op : local.ops) {
    CCSYNTH_CHECK(op.count == 1) << "trees ops carry one chunk each";
    op.chunk = chunk_of.at(op.chunk);
    op.src = members.at(op.src);
    op.dst = members.at(op.dst);
    op.step += step0;
    out.ops.push_back(op);
  }
}

// What hier_allgather_down_trees packed: each phase's bandwidth time, its worst packing ratio
// to the per-rank bound, the deepest tree.
struct HierFigures {
  double rail_us = 0;
  double node_us = 0;
  double bottleneck_ratio = 0;
  int max_depth = 0;
};

// Trees per root of the two phases of the hierarchical split.
struct HierTrees {
  int rail = 1;  // divides the chunks per rank C
  int node = 1;  // divides N x C
};

// A hierarchical allgather with `chunks` (C) chunks per rank on N nodes of G ranks: first every
// rail allgathers its ranks' chunks across the nodes (N ranks, C chunks each), then every node
// allgathers inside itself what its ranks hold (G ranks, N x C chunks each; a rank's own node's
// chunks first, those arriving from the next nodes after, in the order the rail delivers them).
// With `transposed` both phases are packed as in-trees (for the inverse, a reducescatter).
// rail_us / node_us: each phase's packed bandwidth time for chunks of chunk_bytes.
Algorithm hier_allgather_down_trees(const Topology& t, const Hierarchy& h, int chunks,
                                    const HierTrees& k, PackOptions o, double chunk_bytes,
                                    HierFigures& figures) {
  const int N = static_cast<int>(h.nodes.size()), G = static_cast<int>(h.rails.size());
  Algorithm out;
  out.collective = make_collective(CollectiveKind::kAllGather, t.num_ranks, chunks);
  const GroupPacking rail = pack_groups(t, h.rails, k.rail, o);
  int rail_steps = 0;
  for (int g = 0; g < G; ++g) {
    const std::vector<int>& members = h.rails[g];
    const Algorithm a = allgather_down_trees(rail.packings[g],
                                             make_collective(CollectiveKind::kAllGather, N, chunks),
                                             LaneCounter(t, o.transposed), members);
    std::vector<int> chunk_of(static_cast<size_t>(N) * chunks);
    for (int x = 0; x < N * chunks; ++x) chunk_of[x] = members[x / chunks] * chunks + x % chunks;
    append_placed(a, members, chunk_of, 0, out);
    rail_steps = std::max(rail_steps, a.num_steps());
  }
  o.rails = false;  // inside a node
  const GroupPacking node = pack_groups(t, h.nodes, k.node, o);
  const int per_rank = N * chunks;
  for (int n = 0; n < N; ++n) {
    const std::vector<int>& members = h.nodes[n];
    const Algorithm a = allgather_down_trees(
        node.packings[n], make_collective(CollectiveKind::kAllGather, G, per_rank),
        LaneCounter(t, o.transposed), members);
    std::vector<int> chunk_of(static_cast<size_t>(G) * per_rank);
    for (int l = 0; l < G; ++l) {
      for (int x = 0; x < per_rank; ++x) {
        const int from_node = (n + x / chunks) % N;
        chunk_of[l * per_rank + x] = h.nodes[from_node][l] * chunks + x % chunks;
      }
    }
    append_placed(a, members, chunk_of, rail_steps, out);
  }
  sort_ops(out);
  figures.rail_us = rail.bottleneck_us_per_mb * chunks / k.rail * chunk_bytes / kBytesPerMb;
  figures.node_us = node.bottleneck_us_per_mb * per_rank / k.node * chunk_bytes / kBytesPerMb;
  figures.bottleneck_ratio = std::max(rail.bottleneck_us_per_mb / rail.port_bound_us_per_mb,
                                      node.bottleneck_us_per_mb / node.port_bound_us_per_mb);
  figures.max_depth = std::max(rail.max_depth, node.max_depth);
  return out;
}

// The switches of the spray split: every node's ranks alone on one in-node switch, and one
// switch over all ranks with a port of its own per rank (a NIC per GPU).
struct SprayPorts {
  double node_mb_per_us = 0;   // an in-node switch port, each way
  double cross_mb_per_us = 0;  // a rank's port on the cross-node switch, each way
  bool applies() const { return node_mb_per_us > 0 && cross_mb_per_us > 0; }
};

SprayPorts spray_ports(const Topology& t, const Hierarchy& h) {
  SprayPorts out;
  if (!h.applies()) return out;
  for (const Switch& sw : t.switches) {
    const std::vector<std::vector<int>> ports = sw.port_members();
    const bool port_each = ports.size() == sw.ranks.size();
    if (static_cast<int>(sw.ranks.size()) == t.num_ranks && port_each) {
      out.cross_mb_per_us = 1.0 / sw.port_beta_us_per_mb;
    }
  }
  double node_rate = -1;
  for (const std::vector<int>& node : h.nodes) {
    std::vector<int> members(node);
    std::sort(members.begin(), members.end());
    const auto in_node = std::find_if(t.switches.begin(), t.switches.end(), [&](const Switch& sw) {
      std::vector<int> ranks(sw.ranks);
      std::sort(ranks.begin(), ranks.end());
      return ranks == members && sw.port_members().size() == ranks.size();
    });
    if (in_node == t.switches.end()) return {};
    const double rate = 1.0 / in_node->port_beta_us_per_mb;
    if (node_rate >= 0 && rate != node_rate) return {};
    node_rate = rate;
  }
  // The in-node switch must be the faster way between a node's ranks (Topology::connection).
  if (node_rate <= out.cross_mb_per_us) return {};
  out.node_mb_per_us = node_rate;
  return out;
}

// How many of the k trees of a root send straight to each non-rail rank of the other nodes.
struct Spray {
  int trees = 1;         // k, trees per root
  int sprayed = 0;       // s
  double us_per_mb = 0;  // busiest port per MB of a rank's data
};

// Per MB of a rank's data on N nodes of n ranks, a rank's cross-node port carries
// (N-1)(1 + (n-1) s / k) and its in-node port (n-1)(1 + (N-1)(1 - s / k)) each way: the k (up
// to kMaxSprayTrees, dividing `chunks` unless it is 0) and s that make the busier of the two
// the least loaded; of equally balanced ones the most trees (more concurrent transfers, each
// tree on its own channel) or, with `fewest`, the fewest.
Spray best_spray(const Hierarchy& h, const SprayPorts& p, int chunks, bool fewest = false) {
  const double N = static_cast<double>(h.nodes.size()), n = static_cast<double>(h.rails.size());
  Spray best;
  best.us_per_mb = std::numeric_limits<double>::infinity();
  for (int k = 1; k <= (chunks > 0 ? std::min(chunks, kMaxSprayTrees) : kMaxSprayTrees); ++k) {
    if (chunks > 0 && chunks % k != 0) continue;
    for (int s = 0; s <= k; ++s) {
      const double f = static_cast<double>(s) / k;
      const double us = std::max((N - 1) * (1 + (n - 1) * f) / p.cross_mb_per_us,
                                 (n - 1) * (1 + (N - 1) * (1 - f)) / p.node_mb_per_us);
      const bool better =
          fewest ? us < best.us_per_mb * (1 - 1e-9) : us <= best.us_per_mb * (1 + 1e-9);
      if (better) best = {k, s, us};
    }
  }
  return best;
}

// The spray split's trees (TreesSplit::kSpray): tree j of root r (local index g of its node)
// reaches r's node peers and r's rail peer (local index g) on every other node directly; the
// other ranks of those nodes get it from their rail peer, except the ones tree j sprays to,
// which get it straight from r. Non-rail rank q (numbered among r's) is sprayed in the s trees
// q s, q s + 1, ... (mod k), so the sprays spread over the trees and over the ranks.
TreePacking spray_packing(const Topology& t, const Hierarchy& h, const SprayPorts& p,
                          const Spray& spray) {
  const int N = static_cast<int>(h.nodes.size()), n = static_cast<int>(h.rails.size());
  const int k = spray.trees;
  TreePacking out;
  out.num_ranks = t.num_ranks;
  out.trees_per_root = k;
  out.max_depth = 1;
  for (int x = 0; x < N; ++x) {
    for (int g = 0; g < n; ++g) {
      const int root = h.nodes[x][g];
      for (int j = 0; j < k; ++j) {
        std::vector<int> parent(t.num_ranks, -1);
        for (int v : h.nodes[x]) {
          if (v != root) parent[v] = root;
        }
        int q = 0;  // the non-rail ranks of the other nodes, in order
        for (int y = 0; y < N; ++y) {
          if (y == x) continue;
          const int rail = h.nodes[y][g];
          parent[rail] = root;
          for (int l = 0; l < n; ++l) {
            if (l == g) continue;
            const bool sprayed = (j - q * spray.sprayed % k + k) % k < spray.sprayed;
            parent[h.nodes[y][l]] = sprayed ? root : rail;
            if (!sprayed) out.max_depth = 2;
            ++q;
          }
        }
        out.parents.push_back(std::move(parent));
      }
    }
  }
  out.bottleneck_us_per_mb = spray.us_per_mb * k;  // per MB of one tree's data
  // Every rank receives the other N n - 1 ranks' data through its two ports.
  out.port_bound_us_per_mb = (N * n - 1) / (p.node_mb_per_us + p.cross_mb_per_us) * k;
  return out;
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
  return best_trees_count(candidates, [&](int k) {
    return pack_trees(topology, k, {false, refine_passes, 0.0, rails, {}}).bottleneck_us_per_mb;
  });
}

// The trees per root for `chunks`: the given count, or the best divisor of chunks up to 8.
int choose_trees(const Topology& topology, int chunks, const TreesOptions& o, bool rails) {
  if (o.trees_per_root > 0) return o.trees_per_root;
  return best_of(topology, divisors_up_to_8(chunks), o.refine_passes, rails);
}

}  // namespace

TreePacking pack_trees(const Topology& topology, int trees_per_root, const PackOptions& o) {
  ResourceTable table;
  std::vector<double> load;
  return pack_into(topology, trees_per_root, o, table, load);
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

int spray_trees_per_root(const Topology& topology) {
  const Hierarchy h = hierarchy_of(topology);
  const SprayPorts ports = spray_ports(topology, h);
  return ports.applies() ? best_spray(h, ports, 0, true).trees : 0;
}

int dims_trees_per_root(const Topology& topology) {
  const detail::TreeDimensions dims = detail::tree_dimensions(topology);
  return dims.applies() ? detail::best_dims_mix(dims, 0).trees : 0;
}

int default_chunks_per_rank(const Topology& topology) {
  return best_trees_per_root(topology) * (topology.num_ranks > kManyRanks ? 1 : kDefaultPieces);
}

namespace {

// A phase (allgather or reducescatter) or a whole collective as made by one split, with the
// figures TreesResult reports.
struct Made {
  Algorithm algorithm;
  double packed_us = 0;    // bandwidth time of the packing(s)
  double estimate_us = 0;  // list schedule makespan
  int trees_per_root = 0;  // hierarchical: the rails'
  double bottleneck_ratio = 0;
  int max_depth = 0;
};

// Builds the phases of synthesize_trees by either split. Of the packings with each depth weight,
// a phase keeps the one whose list schedule ends first.
class TreesBuilder {
 public:
  TreesBuilder(const Topology& t, const Collective& c, const TreesOptions& o, bool rails)
      : t_(t),
        chunks_(c.chunks_per_rank),
        chunk_bytes_(static_cast<double>(o.bytes) / c.input_chunks),
        refine_(o.refine_passes),
        slowest_dimension_first_(o.slowest_dimension_first),
        rails_(rails),
        allreduce_(c.kind == CollectiveKind::kAllReduce) {}

  // An allgather down out-trees over all ranks, or (transposed) the inverse of one down
  // in-trees, where reductions flow up to every root; k trees per root.
  Made flat(bool transposed, int k) const {
    const Collective ag = make_collective(CollectiveKind::kAllGather, t_.num_ranks, chunks_);
    return best_weight([&](double weight) {
      const TreePacking p = pack_trees(t_, k, {transposed, refine_, weight, rails_, {}});
      Made m;
      m.algorithm = allgather_down_trees(p, ag, LaneCounter(t_, transposed));
      if (transposed) m.algorithm = invert(m.algorithm);
      m.max_depth = p.max_depth;
      m.trees_per_root = k;
      m.bottleneck_ratio = p.bottleneck_us_per_mb / p.port_bound_us_per_mb;
      m.packed_us = packed_time_us(p.bottleneck_us_per_mb, k);
      return m;
    });
  }

  // The hierarchical allgather (rails across the nodes, then inside every node), or
  // (transposed) the inverse of one packed as in-trees: a reducescatter inside every node, then
  // along the rails. Its packed time is the sum of the two parts': they use disjoint resources
  // (NICs, in-node links) and could overlap piece by piece, but the simulated programs run
  // them one after the other (docs/trees.md "The hierarchical split").
  Made hier(bool transposed, const Hierarchy& h) const {
    const PackOptions base{transposed, refine_, 0.0, rails_, {}};
    PackOptions in_node = base;
    in_node.rails = false;
    const HierTrees k{
        best_group_trees(t_, h.rails, chunks_, base),
        best_group_trees(t_, h.nodes, static_cast<int>(h.nodes.size()) * chunks_, in_node)};
    return best_weight([&](double weight) {
      PackOptions o = base;
      o.depth_weight = weight;
      HierFigures f;
      Made m;
      m.algorithm = hier_allgather_down_trees(t_, h, chunks_, k, o, chunk_bytes_, f);
      if (transposed) m.algorithm = invert(m.algorithm);
      m.packed_us = f.rail_us + f.node_us;
      m.trees_per_root = k.rail;
      m.bottleneck_ratio = f.bottleneck_ratio;
      m.max_depth = f.max_depth;
      return m;
    });
  }

  // The spray split's allgather, or (transposed) its inverse, a reducescatter (the trees are
  // their own transpose's mirror: every port carries the same both ways).
  Made spray(bool transposed, const Hierarchy& h, const SprayPorts& ports) const {
    return explicit_trees(transposed, spray_packing(t_, h, ports, best_spray(h, ports, chunks_)),
                          kSprayChannels);
  }

  // The allgather down trees built by hand (spray, dims), or (transposed) its inverse; every tree
  // on a connection on a channel of its own, `channels` of them, then in turn. An allreduce's
  // allgather takes the `channels` after its reducescatter's: in a threadblock shared with the
  // reducescatter, a slice's allgather step would hold back the next slice's reduction.
  Made explicit_trees(bool transposed, const TreePacking& p, int channels) const {
    const int channel0 = allreduce_ && !transposed ? channels : 0;
    Made m;
    m.algorithm =
        allgather_down_trees(p, make_collective(CollectiveKind::kAllGather, t_.num_ranks, chunks_),
                             LaneCounter::channel_per_tree(t_, transposed, channels));
    for (ChunkOp& op : m.algorithm.ops) {
      if (op.channel >= 0) op.channel += channel0;
    }
    if (transposed) m.algorithm = invert(m.algorithm);
    m.estimate_us = ListScheduler(m.algorithm, t_, chunk_bytes_).run();
    m.max_depth = p.max_depth;
    m.trees_per_root = p.trees_per_root;
    m.bottleneck_ratio = p.bottleneck_us_per_mb / p.port_bound_us_per_mb;
    m.packed_us = packed_time_us(p.bottleneck_us_per_mb, p.trees_per_root);
    return m;
  }

  // The dimension-order split's allgather, or (transposed) its inverse: the trees' edges join
  // ranks of one group, whose connections go both ways at the same bandwidth. kDimsChannels per
  // connection, half each for an allreduce's two phases.
  Made dims(bool transposed, const detail::TreeDimensions& dims) const {
    TreePacking p = detail::dims_trees(
        t_, dims, detail::best_dims_mix(dims, chunks_, slowest_dimension_first_));
    tally_packing(t_, p);
    return explicit_trees(transposed, p, allreduce_ ? kDimsChannels / 2 : kDimsChannels);
  }

  // The joint allreduce: flat trees whose phases are packed together, the reducescatter's
  // in-trees on top of the allgather's out-trees' load and the other way round, joint_rounds()
  // times, so that no link is busy in both phases while others idle. A slice's allgather leaves
  // its root as soon as it is reduced there, on channels of its own (explicit_trees), so the
  // phases overlap and the packed time is the joint bottleneck, not the sum of the phases'. Of
  // the depth weights, the one whose joint bottleneck is lowest (the list schedule runs the
  // phases one after the other).
  Made joint_allreduce(int k, const Collective& c) const {
    std::optional<Made> best;
    for (const double weight : depth_weights(t_)) {
      ResourceTable table;
      std::vector<double> rs_load, ag_load;
      TreePacking rs, ag;
      for (int round = 0; round < joint_rounds(); ++round) {
        rs = pack_on_top(true, k, weight, table, ag_load, rs_load);
        ag = pack_on_top(false, k, weight, table, rs_load, ag_load);
      }
      // The allgather, packed last, sees both phases' load.
      const double joint_us = packed_time_us(ag.bottleneck_us_per_mb, k);
      if (best && joint_us >= best->packed_us) continue;
      best = allreduce(explicit_trees(true, rs, kDimsChannels / 2),
                       explicit_trees(false, ag, kDimsChannels / 2), c);
      best->packed_us = joint_us;
    }
    return *best;
  }

  // Allreduce as `rs` then `ag`, with its list schedule.
  Made allreduce(Made rs, Made ag, const Collective& c) const {
    Made m;
    m.algorithm = allreduce_from(rs.algorithm, ag.algorithm);
    m.algorithm.collective = c;
    m.estimate_us = ListScheduler(m.algorithm, t_, chunk_bytes_).run();
    m.max_depth = std::max(rs.max_depth, ag.max_depth);
    m.trees_per_root = ag.trees_per_root;
    m.bottleneck_ratio = std::max(rs.bottleneck_ratio, ag.bottleneck_ratio);
    // The phases follow each other (no byte of a chunk can leave for the allgather before all
    // its contributions are in).
    m.packed_us = rs.packed_us + ag.packed_us;
    return m;
  }

 private:
  // Bandwidth time of a packing whose busiest resource takes `bottleneck_us_per_mb` per MB of a
  // tree's data, with `trees` trees per root: each carries chunks / trees chunks.
  double packed_time_us(double bottleneck_us_per_mb, int trees) const {
    return bottleneck_us_per_mb * chunks_ / trees * chunk_bytes_ / kBytesPerMb;
  }

  int joint_rounds() const { return t_.num_ranks > kManyRanks ? 1 : kJointRounds; }

  // One phase's trees packed on `table` on top of `other` (the other phase's load); `own` is
  // set to this phase's load alone. The packing's bottleneck counts both phases.
  TreePacking pack_on_top(bool transposed, int k, double weight, ResourceTable& table,
                          const std::vector<double>& other, std::vector<double>& own) const {
    std::vector<double> load = other;
    TreePacking p = pack_into(t_, k, {transposed, refine_, weight, rails_, {}}, table, load);
    own.resize(load.size());
    for (size_t r = 0; r < load.size(); ++r) own[r] = load[r] - (r < other.size() ? other[r] : 0);
    return p;
  }

  // Of make(weight) for every depth weight, the one whose list schedule ends first (its start
  // times set in the ops).
  template <typename Make>
  Made best_weight(const Make& make) const {
    Made best;
    for (const double weight : depth_weights(t_)) {
      Made m = make(weight);
      m.estimate_us = ListScheduler(m.algorithm, t_, chunk_bytes_).run();
      if (best.estimate_us > 0 && m.estimate_us >= best.estimate_us) continue;
      best = std::move(m);
    }
    return best;
  }

  const Topology& t_;
  int chunks_;
  double chunk_bytes_;
  int refine_;
  bool slowest_dimension_first_;  // TreesOptions::slowest_dimension_first
  bool rails_;
  bool allreduce_;  // the explicit trees' allgather then on channels after the reducescatter's
};

// The hierarchy of `t` for split option `split` (-1 auto, 0 flat, 1 hierarchical, 2 spray):
// empty where the flat split is asked for or the hierarchical one does not apply. UserError for
// an unknown value, or 1 or 2 on a topology without 2 or more equal nodes of 2 or more ranks.
Hierarchy hierarchy_for(const Topology& t, int split) {
  if (split < -1 || split > 4) {
    throw UserError("", "split",
                    "must be -1 (whichever packs fastest), 0 (flat), 1 (hierarchical), 2 "
                    "(spray), 3 (dimension order) or 4 (joint), not " +
                        std::to_string(split));
  }
  if (split == 0 || split == 3 || split == 4) return {};
  Hierarchy h = hierarchy_of(t);
  if (split >= 1 && !h.applies()) {
    throw UserError("", "split",
                    std::string(split == 1 ? "the hierarchical" : "the spray") +
                        " split needs 2 or more nodes of equal size >= 2; " + t.name + " has " +
                        std::to_string(t.nodes.size()) + " node(s)");
  }
  return h;
}

// The result of synthesize_trees from what the chosen split made.
TreesResult result_of(Made made, TreesSplit split, const Topology& topology, const Collective& c) {
  TreesResult r;
  r.split = split;
  r.trees_per_root = made.trees_per_root;
  r.pieces = c.chunks_per_rank / made.trees_per_root;
  r.bottleneck_ratio = made.bottleneck_ratio;
  r.max_depth = made.max_depth;
  r.packed_us = made.packed_us;
  r.estimate_us = made.estimate_us;
  r.algorithm = std::move(made.algorithm);
  r.algorithm.collective = c;
  r.algorithm.name = "trees_" + c.name;
  r.algorithm.topology = topology.name;
  return r;
}

}  // namespace

TreesResult synthesize_trees(const Topology& topology, const Collective& c, const TreesOptions& o) {
  const int chunks = c.chunks_per_rank;
  if (c.kind != CollectiveKind::kAllGather && c.kind != CollectiveKind::kReduceScatter &&
      c.kind != CollectiveKind::kAllReduce) {
    throw UserError("", "collective",
                    "trees synthesizes allgather, reducescatter and allreduce, not " + c.name);
  }
  const bool rails = o.rails < 0 ? uses_rails_by_default(topology) : o.rails != 0;
  const Hierarchy h = hierarchy_for(topology, o.split);
  const bool flat_too = o.split == -1 || o.split == 0;
  // The joint allreduce competes with the other splits by default (docs/trees.md "The joint
  // allreduce"); asked for, it needs an allreduce.
  const bool allreduce = c.kind == CollectiveKind::kAllReduce;
  if (o.split == 4 && !allreduce) {
    throw UserError(
        "", "split",
        "the joint split packs an allreduce's two phases together; " + c.name + " has one");
  }
  const bool joint_too = allreduce && (o.split == -1 || o.split == 4);
  const int k = flat_too || joint_too ? choose_trees(topology, chunks, o, rails) : 1;
  check_inputs(topology, c, k);
  const TreesBuilder build(topology, c, o, rails);
  // The collective by one split: one phase, or reducescatter then allgather.
  auto make = [&](auto phase) {
    switch (c.kind) {
      case CollectiveKind::kAllGather: return phase(false);
      case CollectiveKind::kReduceScatter: return phase(true);
      default: return build.allreduce(phase(true), phase(false), c);
    }
  };
  const SprayPorts ports = h.applies() ? spray_ports(topology, h) : SprayPorts{};
  if (o.split == 2 && !ports.applies()) {
    throw UserError("", "split",
                    "the spray split needs every node's ranks alone on an in-node switch, faster "
                    "than one switch over all ranks with a port per rank; " +
                        topology.name + " has not");
  }
  // By default the dimension-order split competes for allgather only: its reducescatter (and
  // allreduce) packs better than the flat trees on rfs:4x4x4 but simulates slower at 1 GiB
  // (1.34x against 1.29x the bound): reductions climb its 4-hop in-trees slice by slice, and 16
  // MiB shards leave a tree's chunk a few slices to fill them with (docs/trees.md).
  const bool dims_by_default = o.split == -1 && c.kind == CollectiveKind::kAllGather;
  const detail::TreeDimensions dims = dims_by_default || o.split == 3
                                          ? detail::tree_dimensions(topology)
                                          : detail::TreeDimensions{};
  if (o.slowest_dimension_first && o.split != 3) {
    throw UserError("", "slowest-first",
                    "orders the trees of the dimension-order split; it needs split 3, not " +
                        std::to_string(o.split) + (o.split == -1 ? " (the default)" : ""));
  }
  if (o.split == 3 && !dims.applies()) {
    throw UserError("", "split",
                    "the dimension-order split needs a product of 2 or 3 dimensions (connections "
                    "of one kind and bandwidth forming equal fully connected groups or rings); " +
                        topology.name + " is not one");
  }
  std::optional<Made> flat, hier, spray, by_dims, joint;
  if (flat_too) flat = make([&](bool transposed) { return build.flat(transposed, k); });
  if (joint_too) joint = build.joint_allreduce(k, c);
  if (h.applies() && o.split != 2) {
    try {
      hier = make([&](bool transposed) { return build.hier(transposed, h); });
    } catch (const UserError& e) {
      // Asked for: say which split failed (e.g. a rail without a cross-node connection).
      if (!flat)
        throw UserError("", "split", "the hierarchical split does not apply: " + e.reason());
    }
  }
  if (ports.applies() && (o.split == -1 || o.split == 2))
    spray = make([&](bool transposed) { return build.spray(transposed, h, ports); });
  if (dims.applies()) by_dims = make([&](bool transposed) { return build.dims(transposed, dims); });
  // Flat, then the hierarchical, the spray, the dimension-order and the joint split each where
  // its packing is faster than the one chosen so far by more than 0.5% (or it alone is asked
  // for). The joint split wins ties within 0.5%: where every link carries the same in both
  // phases (dgx1) the packings cannot tell the overlap apart, and its channel per tree keeps
  // a slice of one tree from waiting behind another's (dgx1 at 1 GiB: 14,296 us against the
  // flat trees' 15,544).
  Made* best = flat ? &*flat : nullptr;
  TreesSplit split = TreesSplit::kFlat;
  for (auto [made, kind] :
       {std::pair{&hier, TreesSplit::kHierarchical}, std::pair{&spray, TreesSplit::kSpray},
        std::pair{&by_dims, TreesSplit::kDims}, std::pair{&joint, TreesSplit::kJoint}}) {
    const double margin = kind == TreesSplit::kJoint ? 1.005 : 0.995;
    if (*made && (!best || (*made)->packed_us < best->packed_us * margin)) {
      best = &**made;
      split = kind;
    }
  }
  TreesResult r = result_of(std::move(*best), split, topology, c);
  r.rails = rails && (split == TreesSplit::kFlat || split == TreesSplit::kHierarchical);
  r.flat_packed_us = flat ? flat->packed_us : 0;
  r.hier_packed_us = hier ? hier->packed_us : 0;
  r.spray_packed_us = spray ? spray->packed_us : 0;
  r.dims_packed_us = by_dims ? by_dims->packed_us : 0;
  r.joint_packed_us = joint ? joint->packed_us : 0;
  return r;
}

}  // namespace ccsynth::synth
