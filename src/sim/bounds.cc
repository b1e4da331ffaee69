#include "ccsynth/sim/bounds.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <vector>

#include "ccsynth/core/error.h"
#include "ccsynth/core/graph.h"
#include "ccsynth/core/units.h"
#include "ccsynth/sim/simulate.h"

namespace ccsynth::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// What must cross into a set of ranks: one chunk for every chunk with a destination inside and
// a source (or, when combining, some contribution) outside. A transfer into the set occupies a
// lane of a link or switch ingress port entering it for at least alpha + beta * b.
struct ChunkNeed {
  std::vector<int> pre;
  std::vector<int> post;
};

// Capacity resources of the topology, in bytes per microsecond, with their alpha.
struct Resources {
  struct Edge {
    int src;
    int dst;
    double bytes_per_us;
    double alpha_us;
  };
  struct Hub {
    std::vector<int> ranks;
    std::vector<std::vector<int>> ports;  // member ranks per port (Switch::port_members)
    double bytes_per_us;                  // one port, per direction
    double alpha_us;
  };
  std::vector<Edge> links;
  std::vector<Hub> switches;
};

Resources resources_of(const Topology& t, const BoundOptions& o) {
  Resources r;
  for (const Link& l : t.links) {
    r.links.push_back({l.src, l.dst, l.lanes * kBytesPerMb / (l.beta_us_per_mb * o.beta_factor),
                       l.alpha_us * o.alpha_factor});
  }
  for (const Switch& s : t.switches) {
    r.switches.push_back({s.ranks, s.port_members(),
                          kBytesPerMb / (s.port_beta_us_per_mb * o.beta_factor),
                          s.alpha_us * o.alpha_factor});
  }
  return r;
}

// The same resources at the rate a lane sustains when alpha is paid once per runtime call of at
// most `slot` bytes: b bytes hold a lane for at least b x (beta + alpha / slot), since a step of
// b bytes takes at least b / slot calls (sim::chunks_per_call). The alpha is in the rate, so no
// resource adds one. Only a lane held by one transfer at a time is held through its alpha: a
// switch port's alpha, and a shared link's (Topology::shared_links), run beside the other
// transfers' bytes, so their rates are unchanged.
Resources sustained_resources(const Topology& t, const BoundOptions& o) {
  Resources r = resources_of(t, o);
  for (auto& h : r.switches) h.alpha_us = 0.0;
  for (auto& e : r.links) e.alpha_us = 0.0;
  if (t.shared_links) return r;
  for (size_t i = 0; i < r.links.size(); ++i) {
    const Link& l = t.links[i];
    const double us_per_byte =
        l.beta_us_per_mb * o.beta_factor / kBytesPerMb + l.alpha_us * o.alpha_factor / o.slot_bytes;
    r.links[i].bytes_per_us = l.lanes / us_per_byte;
  }
  return r;
}

// Time to push `need` bytes into the set `inside` through the resources entering it: the lane
// that finishes last was busy for alpha + beta * (its bytes), so T >= min alpha + need / capacity.
double cut_time(const Resources& res, const std::vector<char>& inside, double need) {
  if (need <= 0.0) return 0.0;
  double capacity = 0.0;
  double alpha = kInf;
  for (const auto& e : res.links) {
    if (!inside[e.src] && inside[e.dst]) {
      capacity += e.bytes_per_us;
      alpha = std::min(alpha, e.alpha_us);
    }
  }
  for (const auto& h : res.switches) {
    // A transfer into the set holds the ingress of a port with a member inside and the egress
    // of a port with a member outside; a port shared by several ranks counts once.
    int in = 0, out = 0;
    for (const std::vector<int>& port : h.ports) {
      in += std::any_of(port.begin(), port.end(), [&](int r) { return inside[r] != 0; });
      out += std::any_of(port.begin(), port.end(), [&](int r) { return inside[r] == 0; });
    }
    const int ports = std::min(in, out);
    if (ports > 0) {
      capacity += ports * h.bytes_per_us;
      alpha = std::min(alpha, h.alpha_us);
    }
  }
  if (capacity <= 0.0) return kInf;
  return alpha + need / capacity;
}

double need_into(const std::vector<ChunkNeed>& chunks, const std::vector<char>& inside,
                 double chunk_bytes) {
  double need = 0.0;
  for (const ChunkNeed& c : chunks) {
    const bool dest_inside =
        std::any_of(c.post.begin(), c.post.end(), [&](int q) { return inside[q]; });
    if (!dest_inside) continue;
    const bool source_outside =
        std::any_of(c.pre.begin(), c.pre.end(), [&](int p) { return !inside[p]; });
    if (source_outside) need += chunk_bytes;
  }
  return need;
}

// The cut bound of `inside` with every resource set of `resources` (the bound is the largest).
double cut_bound(const std::vector<Resources>& resources, const std::vector<ChunkNeed>& chunks,
                 const std::vector<char>& inside, double chunk_bytes) {
  const double need = need_into(chunks, inside, chunk_bytes);
  double bound = 0.0;
  for (const Resources& res : resources) bound = std::max(bound, cut_time(res, inside, need));
  return bound;
}

// Max-flow (Dinic) on ranks plus one hub node per switch (and an egress and an ingress node per
// shared port); used to find tight cuts on large topologies. Returns the source side of a
// minimum s-t cut (ranks only).
class MaxFlow {
 public:
  explicit MaxFlow(int nodes) : graph_(nodes), level_(nodes), next_(nodes) {}
  void add(int u, int v, double cap) {
    graph_[u].push_back({v, cap, static_cast<int>(graph_[v].size())});
    graph_[v].push_back({u, 0.0, static_cast<int>(graph_[u].size()) - 1});
  }
  std::vector<char> min_cut_source_side(int s, int t, int ranks) {
    while (bfs(s, t)) {
      std::fill(next_.begin(), next_.end(), 0);
      while (dfs(s, t, kInf) > 1e-12) {
      }
    }
    std::vector<char> side(ranks, 0);
    for (int v = 0; v < ranks; ++v) side[v] = level_[v] >= 0 ? 1 : 0;
    return side;
  }

 private:
  struct Arc {
    int to;
    double cap;
    int rev;
  };
  // Dinic's level graph: hop distances from s over arcs with capacity left; false when t is
  // out of reach.
  bool bfs(int s, int t) {
    auto for_each_residual_neighbor = [this](int u, auto&& visit) {
      for (const Arc& a : graph_[u]) {
        if (a.cap > 1e-12) visit(a.to);
      }
    };
    level_ = breadth_first_search(static_cast<int>(graph_.size()), {s}, for_each_residual_neighbor)
                 .distance;
    return level_[t] >= 0;
  }
  double dfs(int u, int t, double pushed) {
    if (u == t) return pushed;
    for (int& i = next_[u]; i < static_cast<int>(graph_[u].size()); ++i) {
      Arc& a = graph_[u][i];
      if (a.cap <= 1e-12 || level_[a.to] != level_[u] + 1) continue;
      const double got = dfs(a.to, t, std::min(pushed, a.cap));
      if (got > 1e-12) {
        a.cap -= got;
        graph_[a.to][a.rev].cap += got;
        return got;
      }
    }
    return 0.0;
  }
  std::vector<std::vector<Arc>> graph_;
  std::vector<int> level_;
  std::vector<int> next_;
};

MaxFlow flow_network(const Topology& t, const Resources& res) {
  constexpr double kUnbounded = 1e18;  // member -> shared port node: the port is the limit
  int nodes = t.num_ranks + static_cast<int>(res.switches.size());
  for (const auto& h : res.switches) {
    for (const auto& port : h.ports) nodes += port.size() > 1 ? 2 : 0;
  }
  MaxFlow flow(nodes);
  for (const auto& e : res.links) flow.add(e.src, e.dst, e.bytes_per_us);
  int next = t.num_ranks + static_cast<int>(res.switches.size());
  for (size_t s = 0; s < res.switches.size(); ++s) {
    const int hub = t.num_ranks + static_cast<int>(s);
    const double cap = res.switches[s].bytes_per_us;
    for (const auto& port : res.switches[s].ports) {
      if (port.size() == 1) {
        flow.add(port[0], hub, cap);  // egress port
        flow.add(hub, port[0], cap);  // ingress port
        continue;
      }
      const int egress = next++, ingress = next++;
      flow.add(egress, hub, cap);
      flow.add(hub, ingress, cap);
      for (int r : port) {
        flow.add(r, egress, kUnbounded);
        flow.add(ingress, r, kUnbounded);
      }
    }
  }
  return flow;
}

// Hop distances from `src` (BFS over links and switches; a switch is one hop between any two of
// its ranks). Topology::hop_distances_from expands switches pairwise, too slow for 1000s of ranks.
std::vector<int> hops_from(const Topology& t, int src) {
  const int n = t.num_ranks;
  std::vector<std::vector<int>> links_from(n), switches_of(n);
  for (const Link& l : t.links) links_from[l.src].push_back(l.dst);
  for (size_t s = 0; s < t.switches.size(); ++s) {
    for (int r : t.switches[s].ranks) switches_of[r].push_back(static_cast<int>(s));
  }
  std::vector<char> switch_done(t.switches.size(), 0);
  auto for_each_neighbor = [&](int u, auto&& visit) {
    for (int v : links_from[u]) visit(v);
    for (int s : switches_of[u]) {
      if (switch_done[s]) continue;  // its ranks were all reached from an earlier rank
      switch_done[s] = 1;
      for (int v : t.switches[s].ranks) visit(v);
    }
  };
  return breadth_first_search(n, {src}, for_each_neighbor).distance;
}

// Candidate cuts for topologies too large to enumerate: node groups, the ranks sharing a switch
// port (their port counts once), contiguous halves and minimum cuts between far-apart ranks.
std::vector<std::vector<char>> candidate_cuts(const Topology& t, const Resources& res) {
  const int n = t.num_ranks;
  std::vector<std::vector<char>> cuts;
  for (const auto& node : t.nodes) {
    std::vector<char> in(n, 0);
    for (int r : node) in[r] = 1;
    cuts.push_back(in);
  }
  std::vector<std::vector<int>> shared;
  for (const auto& h : res.switches) {
    for (const auto& port : h.ports) {
      if (port.size() > 1) shared.push_back(port);
    }
  }
  std::sort(shared.begin(), shared.end());
  shared.erase(std::unique(shared.begin(), shared.end()), shared.end());
  for (const auto& port : shared) {
    std::vector<char> in(n, 0);
    for (int r : port) in[r] = 1;
    cuts.push_back(in);
  }
  for (int offset : {0, n / 4}) {
    std::vector<char> in(n, 0);
    for (int i = 0; i < n / 2; ++i) in[(offset + i) % n] = 1;
    cuts.push_back(in);
  }
  for (int s : {0, n / 4, n / 2, 3 * n / 4}) {
    const std::vector<int> dist = hops_from(t, s);
    const int far = static_cast<int>(std::max_element(dist.begin(), dist.end()) - dist.begin());
    if (far == s) continue;
    for (auto [a, b] : {std::pair{s, far}, std::pair{far, s}}) {
      MaxFlow flow = flow_network(t, res);
      cuts.push_back(flow.min_cut_source_side(a, b, n));
    }
  }
  // Every cut also counts in the other direction.
  const size_t count = cuts.size();
  for (size_t i = 0; i < count; ++i) {
    std::vector<char> complement(n);
    for (int r = 0; r < n; ++r) complement[r] = cuts[i][r] ? 0 : 1;
    cuts.push_back(complement);
  }
  return cuts;
}

using Adjacency = std::vector<std::vector<std::pair<int, double>>>;  // (to, alpha) per node

// The one alpha every edge of `adj` has, or nullopt where they differ or there is no edge.
std::optional<double> uniform_alpha(const Adjacency& adj) {
  std::optional<double> out;
  for (const auto& edges : adj) {
    for (const auto& [v, w] : edges) {
      if (out && *out != w) return std::nullopt;
      out = w;
    }
  }
  return out;
}

// Alpha distances from `src` into `d` (kInf: unreachable), Dijkstra.
void dijkstra(const Adjacency& adj, int src, std::vector<double>& d) {
  using Item = std::pair<double, int>;
  std::fill(d.begin(), d.end(), kInf);
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> queue;
  d[src] = 0.0;
  queue.push({0.0, src});
  while (!queue.empty()) {
    const auto [du, u] = queue.top();
    queue.pop();
    if (du > d[u]) continue;
    for (const auto& [v, w] : adj[u]) {
      if (du + w < d[v]) {
        d[v] = du + w;
        queue.push({d[v], v});
      }
    }
  }
}

// dijkstra() where every edge weighs `alpha`, breadth first: a node k hops away gets
// ((0 + alpha) + alpha) ... k times, the sum Dijkstra forms along any of its shortest paths
// (they all have k hops), so the distances are the same doubles, in O(edges) instead of
// O(edges log edges) per source (the 4096-rank mesh's bound took 2 s, nearly all of it here).
void breadth_first(const Adjacency& adj, int src, double alpha, std::vector<double>& d,
                   std::vector<int>& queue) {
  std::fill(d.begin(), d.end(), kInf);
  queue.clear();
  d[src] = 0.0;
  queue.push_back(src);
  for (size_t head = 0; head < queue.size(); ++head) {
    const int u = queue[head];
    for (const auto& [v, w] : adj[u]) {
      if (d[v] != kInf) continue;
      d[v] = d[u] + alpha;
      queue.push_back(v);
    }
  }
}

// Shortest alpha distance between all pairs (a switch is a hub reached for its alpha): Dijkstra
// from every rank, or breadth first where every edge has the same alpha (breadth_first).
std::vector<std::vector<double>> alpha_distances(const Topology& t, const Resources& res) {
  const int n = t.num_ranks;
  const int nodes = n + static_cast<int>(res.switches.size());
  Adjacency adj(nodes);
  for (const auto& e : res.links) adj[e.src].push_back({e.dst, e.alpha_us});
  for (size_t s = 0; s < res.switches.size(); ++s) {
    for (int r : res.switches[s].ranks) {
      adj[r].push_back({n + static_cast<int>(s), res.switches[s].alpha_us});
      adj[n + static_cast<int>(s)].push_back({r, 0.0});
    }
  }
  const std::optional<double> alpha = uniform_alpha(adj);
  std::vector<std::vector<double>> dist(n);
  std::vector<double> d(nodes);
  std::vector<int> queue;
  for (int src = 0; src < n; ++src) {
    if (alpha) {
      breadth_first(adj, src, *alpha, d, queue);
    } else {
      dijkstra(adj, src, d);
    }
    dist[src].assign(d.begin(), d.begin() + n);
  }
  return dist;
}

// Latency bound: every destination of a chunk is at least the alpha distance away from its
// source (from every contributor, when combining). Chunks sharing a contributor set share the
// per-destination maximum, so allreduce costs O(R^2), not O(R^3).
double latency_bound(const Collective& c, const std::vector<ChunkNeed>& chunks,
                     const std::vector<std::vector<double>>& dist) {
  const int n = static_cast<int>(dist.size());
  std::map<std::vector<int>, std::vector<double>> farthest;  // contributors -> max over them
  double bound = 0.0;
  for (const ChunkNeed& chunk : chunks) {
    if (chunk.pre.empty()) continue;
    if (!c.combining || chunk.pre.size() == 1) {
      for (int q : chunk.post) {
        double need = kInf;
        for (int p : chunk.pre) need = std::min(need, dist[p][q]);
        bound = std::max(bound, need);
      }
      continue;
    }
    auto [it, inserted] = farthest.try_emplace(chunk.pre);
    if (inserted) {
      it->second.assign(n, 0.0);
      for (int p : chunk.pre) {
        for (int q = 0; q < n; ++q) it->second[q] = std::max(it->second[q], dist[p][q]);
      }
    }
    for (int q : chunk.post) bound = std::max(bound, it->second[q]);
  }
  return bound;
}

// The cuts around single ranks, all at once in O(sum of chunk sizes): ingress of r (the set
// {r}) and egress of r (everything but r). A rank alone may use the whole of a shared port;
// the ranks sharing a port are bounded together.
double single_rank_bound(const Topology& t, const Resources& res,
                         const std::vector<ChunkNeed>& chunks, double chunk_bytes) {
  const int n = t.num_ranks;
  std::vector<double> need_in(n, 0.0), need_out(n, 0.0), cap_in(n, 0.0), cap_out(n, 0.0);
  std::vector<double> alpha_in(n, kInf), alpha_out(n, kInf);
  for (const ChunkNeed& c : chunks) {
    if (c.pre.empty() || c.post.empty()) continue;
    // {r} needs the chunk if r is a destination and some source is not r.
    const bool many_pre = c.pre.size() > 1;
    for (int q : c.post) {
      if (many_pre || c.pre[0] != q) need_in[q] += chunk_bytes;
    }
    // V \ {r} needs it if r is a source and some destination is not r.
    const bool many_post = c.post.size() > 1;
    for (int p : c.pre) {
      if (many_post || c.post[0] != p) need_out[p] += chunk_bytes;
    }
  }
  for (const auto& e : res.links) {
    cap_in[e.dst] += e.bytes_per_us;
    alpha_in[e.dst] = std::min(alpha_in[e.dst], e.alpha_us);
    cap_out[e.src] += e.bytes_per_us;
    alpha_out[e.src] = std::min(alpha_out[e.src], e.alpha_us);
  }
  for (const auto& h : res.switches) {
    for (int r : h.ranks) {
      cap_in[r] += h.bytes_per_us;
      alpha_in[r] = std::min(alpha_in[r], h.alpha_us);
      cap_out[r] += h.bytes_per_us;
      alpha_out[r] = std::min(alpha_out[r], h.alpha_us);
    }
  }
  double bound = 0.0;
  auto term = [](double need, double cap, double alpha) {
    if (need <= 0.0) return 0.0;
    return cap > 0.0 ? alpha + need / cap : kInf;
  };
  for (int r = 0; r < n; ++r) {
    bound = std::max({bound, term(need_in[r], cap_in[r], alpha_in[r]),
                      term(need_out[r], cap_out[r], alpha_out[r])});
  }
  // Ranks M sharing a switch port: every rank of M receives its own transfers (distinct ones
  // for distinct ranks) through its own resources, the shared port's ingress counted once for
  // all of M; likewise egress. Sum of need <= T * (sum of their capacities - (|M|-1) port).
  for (const auto& h : res.switches) {
    for (const std::vector<int>& port : h.ports) {
      if (port.size() < 2) continue;
      const double shared = h.bytes_per_us * static_cast<double>(port.size() - 1);
      double in = 0.0, out = 0.0, c_in = -shared, c_out = -shared, a_in = kInf, a_out = kInf;
      for (int r : port) {
        in += need_in[r];
        out += need_out[r];
        c_in += cap_in[r];
        c_out += cap_out[r];
        a_in = std::min(a_in, alpha_in[r]);
        a_out = std::min(a_out, alpha_out[r]);
      }
      bound = std::max({bound, term(in, c_in, a_in), term(out, c_out, a_out)});
    }
  }
  return bound;
}

// Ranks grouped into parts: part[r] is rank r's part. Every rank alone (the total-traffic
// bound) or the topology's nodes (the node-traffic bound, intra-node transfers free).
std::vector<int> each_rank_alone(int num_ranks) {
  std::vector<int> part(num_ranks);
  for (int r = 0; r < num_ranks; ++r) part[r] = r;
  return part;
}

std::vector<int> node_parts(const Topology& t) {
  std::vector<int> part(t.num_ranks, 0);
  for (size_t node = 0; node < t.nodes.size(); ++node) {
    for (int r : t.nodes[node]) part[r] = static_cast<int>(node);
  }
  return part;
}

std::vector<int> parts_of(const std::vector<int>& ranks, const std::vector<int>& part) {
  std::vector<int> out;
  out.reserve(ranks.size());
  for (int r : ranks) out.push_back(part[r]);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The fewest transfers between different parts that move one chunk (per byte), on the
// quotient graph: a part is one vertex that knows what any of its ranks knows, and the
// transfers between parts, ordered by when each byte leaves, are a one-way gossip sequence.
// Non-combining: one into every part with a destination and no source. Combining with the same
// parts P contributing and receiving (allreduce): 2(|P|-1): up to the transfer after which a
// first part A holds the full reduction, each of the other |P|-1 parts' contributions has left
// it, and each of those parts completes only by receiving a later transfer (Patarasuk and
// Yuan's allreduce bound when every rank is its own part). Other combining chunks: |parts of contributors U destinations| - 1 (they
// must be connected by transfers).
double transfers_between_parts(const ChunkNeed& c, const std::vector<int>& part, bool combining) {
  const std::vector<int> sources = parts_of(c.pre, part);
  const std::vector<int> destinations = parts_of(c.post, part);
  if (!combining) {
    return static_cast<double>(std::count_if(destinations.begin(), destinations.end(), [&](int q) {
      return !std::binary_search(sources.begin(), sources.end(), q);
    }));
  }
  std::vector<int> all;
  std::set_union(sources.begin(), sources.end(), destinations.begin(), destinations.end(),
                 std::back_inserter(all));
  if (all.size() < 2) return 0.0;
  const double k = static_cast<double>(all.size());
  return sources == destinations ? 2.0 * (k - 1.0) : k - 1.0;
}

// Every transfer between parts holds a link lane from one part to another, or the ingress port
// of its receiver on a switch spanning two or more parts (then every port of it can receive
// from another part; a shared port once).
struct Capacity {
  double bytes_per_us = 0.0;
  double alpha_us = kInf;
  void add(double bytes, double alpha) {
    bytes_per_us += bytes;
    alpha_us = std::min(alpha_us, alpha);
  }
};

Capacity capacity_between_parts(const Resources& res, const std::vector<int>& part) {
  Capacity out;
  for (const auto& e : res.links) {
    if (part[e.src] != part[e.dst]) out.add(e.bytes_per_us, e.alpha_us);
  }
  for (const auto& h : res.switches) {
    const bool spans_parts = std::any_of(h.ranks.begin(), h.ranks.end(),
                                         [&](int r) { return part[r] != part[h.ranks[0]]; });
    if (spans_parts) out.add(h.bytes_per_us * static_cast<double>(h.ports.size()), h.alpha_us);
  }
  return out;
}

// Traffic bound over a partition: T >= alpha_min + c x (transfers between parts) / (capacity
// between parts). With every rank alone it is the total-traffic bound; with the nodes, the
// node-traffic bound (2(N-1) inter-node transfers per allreduce chunk over the NICs).
double traffic_bound(const std::vector<ChunkNeed>& chunks, const std::vector<Resources>& resources,
                     const std::vector<int>& part, bool combining, double chunk_bytes) {
  double transfers = 0.0;
  for (const ChunkNeed& c : chunks) transfers += transfers_between_parts(c, part, combining);
  if (transfers <= 0.0) return 0.0;
  double bound = 0.0;
  for (const Resources& res : resources) {
    const Capacity capacity = capacity_between_parts(res, part);
    if (capacity.bytes_per_us <= 0.0) return kInf;
    bound = std::max(bound, capacity.alpha_us + transfers * chunk_bytes / capacity.bytes_per_us);
  }
  return bound;
}

// `t` with its host switches counted as switches: routed sends may use them (simulate's
// Network), so the bound of a routed program must too to stay below its simulation.
Topology with_host_switches(const Topology& t) {
  Topology out = t;
  out.switches.insert(out.switches.end(), t.host_switches.begin(), t.host_switches.end());
  out.host_switches.clear();
  return out;
}

}  // namespace

BoundOptions bound_options_for(const Topology& topology, Protocol protocol, bool routed,
                               const SimOptions& sim) {
  const ProtocolCost& cost = protocol_cost(topology, protocol);
  BoundOptions out;
  out.alpha_factor = cost.alpha_factor;
  out.beta_factor = cost.beta_factor;
  out.host_switches = routed;
  const bool runtime_slicing = sim.pipelining && sim.num_slices <= 0;
  out.slot_bytes = runtime_slicing ? static_cast<double>(sim.params(protocol).slice_bytes) : 0.0;
  return out;
}

LowerBound lower_bound(const Topology& given, const Collective& collective, int64_t bytes,
                       const BoundOptions& options) {
  std::optional<Topology> merged;
  if (options.host_switches && !given.host_switches.empty()) merged = with_host_switches(given);
  const Topology& topology = merged ? *merged : given;
  if (topology.num_ranks != collective.num_ranks) {
    throw UserError("", "collective",
                    "collective has " + std::to_string(collective.num_ranks) +
                        " ranks but topology '" + topology.name + "' has " +
                        std::to_string(topology.num_ranks));
  }
  if (bytes < 0) throw UserError("", "size", "size must be >= 0");
  const int n = topology.num_ranks;
  const double chunk_bytes = static_cast<double>(bytes) / std::max(1, collective.input_chunks);
  const Resources res = resources_of(topology, options);
  // The bandwidth bounds hold with both: alpha + b x beta per transfer, and b x (beta + alpha /
  // slot) per lane where the runtime pays alpha per call.
  std::vector<Resources> resources{res};
  if (options.slot_bytes > 0.0) resources.push_back(sustained_resources(topology, options));

  std::vector<ChunkNeed> chunks;
  chunks.reserve(collective.chunks.size());
  for (int c = 0; c < collective.num_chunks(); ++c) {
    chunks.push_back({collective.pre_ranks(c), collective.post_ranks(c)});
  }

  LowerBound out;
  const auto dist = alpha_distances(topology, res);
  out.latency_us = latency_bound(collective, chunks, dist);
  if (!std::isfinite(out.latency_us)) {
    throw UserError("", "topology", "some destination is unreachable in '" + topology.name + "'");
  }

  // Per-rank ingress ({r}) and egress (everything but r) are the cuts around one rank.
  for (const Resources& r : resources) {
    out.ingress_egress_us =
        std::max(out.ingress_egress_us, single_rank_bound(topology, r, chunks, chunk_bytes));
  }
  std::vector<char> inside(n, 0);
  if (n <= options.exact_cut_max_ranks) {
    for (uint32_t mask = 1; mask + 1 < (1u << n); ++mask) {
      for (int r = 0; r < n; ++r) inside[r] = (mask >> r) & 1u;
      out.cut_us = std::max(out.cut_us, cut_bound(resources, chunks, inside, chunk_bytes));
    }
  } else {
    for (const auto& cut : candidate_cuts(topology, res)) {
      out.cut_us = std::max(out.cut_us, cut_bound(resources, chunks, cut, chunk_bytes));
    }
  }
  out.total_traffic_us =
      traffic_bound(chunks, resources, each_rank_alone(n), collective.combining, chunk_bytes);
  // Intra-node transfers free: the same count over the nodes (nothing new with one node).
  if (topology.nodes.size() >= 2) {
    out.node_traffic_us =
        traffic_bound(chunks, resources, node_parts(topology), collective.combining, chunk_bytes);
  }
  out.bandwidth_us =
      std::max({out.ingress_egress_us, out.cut_us, out.total_traffic_us, out.node_traffic_us});
  // Every collective call pays the launch overhead once before any transfer (simulate.h).
  out.launch_us = topology.launch_us;
  out.lower_bound_us = out.launch_us + std::max(out.latency_us, out.bandwidth_us);
  return out;
}

double lower_bound_any_protocol_us(const Topology& topology, const Collective& collective,
                                   int64_t bytes) {
  double bound = std::numeric_limits<double>::infinity();
  for (const Protocol protocol : {Protocol::kSimple, Protocol::kLL128, Protocol::kLL}) {
    const BoundOptions options = bound_options_for(topology, protocol);
    bound = std::min(bound, lower_bound(topology, collective, bytes, options).lower_bound_us);
  }
  return bound;
}

}  // namespace ccsynth::sim
