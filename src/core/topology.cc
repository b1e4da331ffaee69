#include "ccsynth/core/topology.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <utility>

#include "ccsynth/core/error.h"

namespace ccsynth {

double Connection::cost_us(double bytes) const {
  return alpha_us + beta_us_per_mb * bytes / (1024.0 * 1024.0);
}

int Switch::num_ports() const {
  if (port_group.empty()) return static_cast<int>(ranks.size());
  return *std::max_element(port_group.begin(), port_group.end()) + 1;
}

int Switch::port_of_member(size_t member) const {
  return port_group.empty() ? static_cast<int>(member) : port_group[member];
}

int Switch::port_of_rank(int rank) const {
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == rank) return port_of_member(i);
  }
  return -1;
}

int Switch::num_sockets() const {
  if (port_socket.empty()) return 1;
  return *std::max_element(port_socket.begin(), port_socket.end()) + 1;
}

int Switch::socket_of_port(int port) const {
  if (port_socket.empty() || port < 0 || port >= static_cast<int>(port_socket.size())) return 0;
  return port_socket[port];
}

std::vector<std::vector<int>> Switch::port_members() const {
  std::vector<std::vector<int>> out(std::max(0, num_ports()));
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int p = port_of_member(i);
    if (p >= 0 && p < static_cast<int>(out.size())) out[p].push_back(ranks[i]);
  }
  return out;
}

bool Switch::has_shared_ports() const { return num_ports() < static_cast<int>(ranks.size()); }

int Topology::node_of(int rank) const {
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (std::find(nodes[n].begin(), nodes[n].end(), rank) != nodes[n].end()) {
      return static_cast<int>(n);
    }
  }
  return 0;
}

const Link* Topology::find_link(int src, int dst) const {
  for (const Link& link : links) {
    if (link.src == src && link.dst == dst) return &link;
  }
  return nullptr;
}

namespace {
// Map (src, dst) -> best connection; links first, switches replace them only when cheaper.
std::map<std::pair<int, int>, Connection> best_connections(const Topology& t) {
  std::map<std::pair<int, int>, Connection> best;
  auto offer = [&best](const Connection& c) {
    auto [it, inserted] = best.emplace(std::make_pair(c.src, c.dst), c);
    if (!inserted && c.beta_us_per_mb < it->second.beta_us_per_mb) it->second = c;
  };
  for (size_t i = 0; i < t.links.size(); ++i) {
    const Link& l = t.links[i];
    offer({l.src, l.dst, l.alpha_us, l.beta_us_per_mb, l.lanes, static_cast<int>(i), -1});
  }
  for (size_t s = 0; s < t.switches.size(); ++s) {
    const Switch& sw = t.switches[s];
    for (int a : sw.ranks) {
      for (int b : sw.ranks) {
        if (a != b) offer({a, b, sw.alpha_us, sw.port_beta_us_per_mb, 1, -1, static_cast<int>(s)});
      }
    }
  }
  return best;
}
}  // namespace

std::optional<Connection> Topology::connection(int src, int dst) const {
  std::optional<Connection> best;
  for (size_t i = 0; i < links.size(); ++i) {
    const Link& l = links[i];
    if (l.src == src && l.dst == dst) {
      best = Connection{src, dst, l.alpha_us, l.beta_us_per_mb, l.lanes, static_cast<int>(i), -1};
    }
  }
  for (size_t s = 0; s < switches.size(); ++s) {
    const Switch& sw = switches[s];
    const bool has_src = std::find(sw.ranks.begin(), sw.ranks.end(), src) != sw.ranks.end();
    const bool has_dst = std::find(sw.ranks.begin(), sw.ranks.end(), dst) != sw.ranks.end();
    if (src == dst || !has_src || !has_dst) continue;
    if (!best || sw.port_beta_us_per_mb < best->beta_us_per_mb) {
      best = Connection{src, dst, sw.alpha_us, sw.port_beta_us_per_mb, 1, -1, static_cast<int>(s)};
    }
  }
  return best;
}

std::vector<Connection> Topology::connections() const {
  std::vector<Connection> out;
  for (auto& [key, c] : best_connections(*this)) out.push_back(c);
  return out;
}

std::vector<std::vector<int>> Topology::out_neighbors() const {
  std::vector<std::set<int>> sets(num_ranks);
  for (const Link& l : links) {
    if (l.src >= 0 && l.src < num_ranks) sets[l.src].insert(l.dst);
  }
  for (const Switch& sw : switches) {
    for (int a : sw.ranks) {
      if (a < 0 || a >= num_ranks) continue;
      for (int b : sw.ranks) {
        if (a != b) sets[a].insert(b);
      }
    }
  }
  std::vector<std::vector<int>> out(num_ranks);
  for (int r = 0; r < num_ranks; ++r) out[r].assign(sets[r].begin(), sets[r].end());
  return out;
}

namespace {

// The topology as a graph whose vertices are the ranks and then one vertex per switch (a rank
// reaches its switches and a switch all its members), so that a switch of k ranks adds 2k
// edges instead of k(k-1) rank pairs. `reversed` flips every edge.
std::vector<std::vector<int>> rank_and_switch_graph(const Topology& t, bool reversed) {
  std::vector<std::vector<int>> graph(std::max(0, t.num_ranks) + t.switches.size());
  auto add = [&](int from, int to) { graph[reversed ? to : from].push_back(reversed ? from : to); };
  auto is_rank = [&](int r) { return r >= 0 && r < t.num_ranks; };  // validate() may not have run
  for (const Link& l : t.links) {
    if (is_rank(l.src) && is_rank(l.dst)) add(l.src, l.dst);
  }
  for (size_t s = 0; s < t.switches.size(); ++s) {
    const int hub = t.num_ranks + static_cast<int>(s);
    for (int r : t.switches[s].ranks) {
      if (!is_rank(r)) continue;
      add(r, hub);
      add(hub, r);
    }
  }
  return graph;
}

// Hop counts from rank `src` over rank_and_switch_graph(t, false), -1 where unreachable: a
// link is one hop and so is a switch (entering it costs the hop, leaving it is free), found by
// a 0-1 breadth-first search.
std::vector<int> hop_distances(const Topology& t, const std::vector<std::vector<int>>& graph,
                               int src) {
  std::vector<int> distance(graph.size(), -1);
  std::deque<int> queue = {src};
  distance[src] = 0;
  while (!queue.empty()) {
    const int u = queue.front();
    queue.pop_front();
    for (const int v : graph[u]) {
      const int weight = u >= t.num_ranks ? 0 : 1;  // leaving a switch is free
      if (distance[v] >= 0 && distance[v] <= distance[u] + weight) continue;
      distance[v] = distance[u] + weight;
      if (weight == 0) {
        queue.push_front(v);
      } else {
        queue.push_back(v);
      }
    }
  }
  distance.resize(t.num_ranks);
  return distance;
}

}  // namespace

std::vector<int> Topology::hop_distances_from(int src) const {
  return hop_distances(*this, rank_and_switch_graph(*this, false), src);
}

int Topology::diameter() const {
  const auto graph = rank_and_switch_graph(*this, false);
  int diameter = 0;
  for (int src = 0; src < num_ranks; ++src) {
    for (const int d : hop_distances(*this, graph, src)) {
      if (d < 0) return -1;
      diameter = std::max(diameter, d);
    }
  }
  return diameter;
}

namespace {

std::string at(const std::string& array, size_t index, const std::string& field = "") {
  std::string out = array + "[" + std::to_string(index) + "]";
  if (!field.empty()) out += "." + field;
  return out;
}

void validate_nodes(const Topology& t, const std::string& file) {
  std::vector<int> seen(t.num_ranks, 0);
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    if (t.nodes[n].empty()) throw UserError(file, at("nodes", n), "node has no ranks");
    for (int r : t.nodes[n]) {
      if (r < 0 || r >= t.num_ranks) {
        throw UserError(file, at("nodes", n),
                        "unknown rank " + std::to_string(r) + " (ranks are 0.." +
                            std::to_string(t.num_ranks - 1) + ")");
      }
      if (seen[r]++) {
        throw UserError(file, at("nodes", n), "rank " + std::to_string(r) + " is in two nodes");
      }
    }
  }
  if (!t.nodes.empty()) {
    for (int r = 0; r < t.num_ranks; ++r) {
      if (!seen[r]) throw UserError(file, "nodes", "rank " + std::to_string(r) + " is in no node");
    }
  }
}

void validate_rank(const Topology& t, const std::string& file, const std::string& field, int r) {
  if (r < 0 || r >= t.num_ranks) {
    throw UserError(file, field,
                    "unknown rank " + std::to_string(r) + " (ranks are 0.." +
                        std::to_string(t.num_ranks - 1) + ")");
  }
}

void validate_cost(const std::string& file, const std::string& field, double alpha_us,
                   double beta_us_per_mb) {
  if (!(alpha_us >= 0.0)) {
    throw UserError(file, field + ".alpha_us",
                    "latency must be >= 0, got " + std::to_string(alpha_us));
  }
  if (!(beta_us_per_mb > 0.0) || beta_us_per_mb > 1e300) {
    throw UserError(file, field,
                    "bandwidth must be positive and finite (beta " +
                        std::to_string(beta_us_per_mb) + " us/MB)");
  }
}

void validate_links(const Topology& t, const std::string& file) {
  std::set<std::pair<int, int>> seen;
  for (size_t i = 0; i < t.links.size(); ++i) {
    const Link& l = t.links[i];
    validate_rank(t, file, at("links", i, "src"), l.src);
    validate_rank(t, file, at("links", i, "dst"), l.dst);
    if (l.src == l.dst) throw UserError(file, at("links", i), "link from a rank to itself");
    if (l.lanes <= 0) {
      throw UserError(file, at("links", i, "lanes"),
                      "must be >= 1, got " + std::to_string(l.lanes));
    }
    validate_cost(file, at("links", i), l.alpha_us, l.beta_us_per_mb);
    if (!seen.insert({l.src, l.dst}).second) {
      throw UserError(file, at("links", i),
                      "duplicate link " + std::to_string(l.src) + " -> " + std::to_string(l.dst) +
                          " (use lanes for parallel links)");
    }
  }
}

// `ids` is empty or one id per item (`count` items, named `items` in messages), the ids being
// exactly 0..K-1 with no gap (port_group: a port id per rank; port_socket: a socket per port).
void validate_dense_ids(const std::vector<int>& ids, size_t count, const std::string& items,
                        const std::string& what, const std::string& file,
                        const std::string& field) {
  if (ids.empty()) return;
  if (ids.size() != count) {
    throw UserError(file, field,
                    "has " + std::to_string(ids.size()) + " " + what + "s for " +
                        std::to_string(count) + " " + items + " (one per " +
                        items.substr(0, items.size() - 1) + ")");
  }
  std::vector<char> used(count, 0);
  for (int p : ids) {
    if (p < 0 || p >= static_cast<int>(count)) {
      throw UserError(file, field,
                      what + " " + std::to_string(p) + " is out of range (ids are 0.." +
                          std::to_string(count - 1) + ")");
    }
    used[p] = 1;
  }
  const int num_ids = *std::max_element(ids.begin(), ids.end()) + 1;
  for (int p = 0; p < num_ids; ++p) {
    if (!used[p]) {
      throw UserError(file, field,
                      what + " " + std::to_string(p) + " is unused (ids must be 0.." +
                          std::to_string(num_ids - 1) + " with no gap)");
    }
  }
}

// Checks every switch of `switches`, named `key` in messages ("switches", "host_switches").
void validate_switch_list(const Topology& t, const std::vector<Switch>& switches,
                          const std::string& key, const std::string& file) {
  for (size_t s = 0; s < switches.size(); ++s) {
    const Switch& sw = switches[s];
    if (sw.ranks.size() < 2) {
      throw UserError(file, at(key, s, "ranks"), "a switch needs at least two ranks");
    }
    std::set<int> seen;
    for (int r : sw.ranks) {
      validate_rank(t, file, at(key, s, "ranks"), r);
      if (!seen.insert(r).second) {
        throw UserError(file, at(key, s, "ranks"), "rank " + std::to_string(r) + " listed twice");
      }
    }
    validate_cost(file, at(key, s), sw.alpha_us, sw.port_beta_us_per_mb);
    validate_dense_ids(sw.port_group, sw.ranks.size(), "ranks", "port id", file,
                       at(key, s, "port_group"));
    validate_dense_ids(sw.port_socket, static_cast<size_t>(sw.num_ports()), "ports", "socket id",
                       file, at(key, s, "port_socket"));
    if (!(sw.socket_beta_us_per_mb >= 0.0) || sw.socket_beta_us_per_mb > 1e300) {
      throw UserError(file, at(key, s, "socket_beta_us_per_mb"),
                      "must be >= 0 (0 = not limited) and finite, got " +
                          std::to_string(sw.socket_beta_us_per_mb));
    }
    if (sw.port_lanes < 0) {
      throw UserError(file, at(key, s, "port_lanes"),
                      "must be >= 0 (0 = unlimited), got " + std::to_string(sw.port_lanes));
    }
  }
}

void validate_switches(const Topology& t, const std::string& file) {
  validate_switch_list(t, t.switches, "switches", file);
  validate_switch_list(t, t.host_switches, "host_switches", file);
}

// A non-negative finite number, or a UserError naming `field`.
void validate_non_negative(double value, const std::string& field, const std::string& file) {
  if (!(value >= 0.0) || value > 1e300) {
    throw UserError(file, field, "must be >= 0 and finite, got " + std::to_string(value));
  }
}

void validate_reachability(const Topology& t, const std::string& file) {
  if (t.num_ranks <= 1) return;
  // Strong connectivity: everything reachable from 0 and 0 reachable from everything.
  for (const bool backward : {false, true}) {
    const BfsResult search = breadth_first_search(rank_and_switch_graph(t, backward), {0});
    for (int r = 0; r < t.num_ranks; ++r) {
      if (!search.reached(r)) {
        throw UserError(file, "links",
                        "rank " + std::to_string(r) +
                            (backward ? " cannot reach rank 0" : " is unreachable from rank 0"));
      }
    }
  }
}

}  // namespace

void validate(const Topology& t, const std::string& file) {
  if (t.num_ranks <= 0 || t.num_ranks > kMaxTopologyRanks) {
    throw UserError(
        file, "ranks",
        "must be 1.." + std::to_string(kMaxTopologyRanks) + ", got " + std::to_string(t.num_ranks));
  }
  validate_nodes(t, file);
  validate_links(t, file);
  validate_switches(t, file);
  validate_non_negative(t.memory_gbps, "memory_gbps", file);
  validate_non_negative(t.launch_us, "launch_us", file);
  validate_non_negative(t.threadblock_gbps, "threadblock_gbps", file);
  const std::pair<const char*, const ProtocolCost*> protocols[] = {
      {"Simple", &t.simple}, {"LL128", &t.ll128}, {"LL", &t.ll}};
  for (const auto& [name, cost] : protocols) {
    for (const auto& [key, value] : {std::pair{"alpha_factor", cost->alpha_factor},
                                     std::pair{"beta_factor", cost->beta_factor}}) {
      if (!(value > 0.0) || value > 1e300) {
        throw UserError(file, std::string("protocols.") + name + "." + key,
                        "must be positive and finite, got " + std::to_string(value));
      }
    }
  }
  validate_reachability(t, file);
}

std::ostream& operator<<(std::ostream& os, const Topology& t) {
  os << "Topology " << t.name << ": " << t.num_ranks << " ranks, " << t.nodes.size() << " nodes, "
     << t.links.size() << " links, " << t.switches.size() << " switches\n";
  for (const Link& l : t.links) {
    os << "  link " << l.src << " -> " << l.dst << " lanes=" << l.lanes << " alpha=" << l.alpha_us
       << "us beta=" << l.beta_us_per_mb << "us/MB " << l.kind << "\n";
  }
  for (const Switch& sw : t.switches) {
    os << "  switch " << sw.name << " (" << sw.kind << ") ranks=" << sw.ranks.size()
       << " alpha=" << sw.alpha_us << "us port_beta=" << sw.port_beta_us_per_mb << "us/MB";
    if (!sw.port_group.empty()) os << " ports=" << sw.num_ports();
    if (sw.port_lanes > 0) os << " port_lanes=" << sw.port_lanes;
    if (sw.num_sockets() > 1) {
      os << " sockets=" << sw.num_sockets() << " socket_beta=" << sw.socket_beta_us_per_mb
         << "us/MB";
    }
    os << "\n";
  }
  if (t.launch_us > 0.0) os << "  launch " << t.launch_us << "us\n";
  os << "  memory " << t.memory_gbps << " GB/s\n";
  if (t.threadblock_gbps > 0.0) os << "  threadblock " << t.threadblock_gbps << " GB/s\n";
  for (const Switch& sw : t.host_switches) {
    os << "  host switch " << sw.name << " over " << sw.ranks.size() << " ranks\n";
  }
  return os;
}

}  // namespace ccsynth
