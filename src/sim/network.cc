#include "network.h"

#include <algorithm>
#include <limits>

#include "ccsynth/core/error.h"
#include "ccsynth/core/graph.h"
#include "ccsynth/core/units.h"

namespace ccsynth::sim {

Network::Network(const Topology& topology)
    : topology_(topology),
      switches_(topology.switches),
      num_fabric_switches_(topology.switches.size()) {
  switches_.insert(switches_.end(), topology.host_switches.begin(), topology.host_switches.end());
  if (topology.threadblock_gbps > 0.0) {
    threadblock_us_per_byte_ = 1.0 / (topology.threadblock_gbps * 1e3);  // GB/s = 1e3 B/us
  }
  links_from_.resize(topology.num_ranks);
  switches_of_.resize(topology.num_ranks);
  for (size_t i = 0; i < topology.links.size(); ++i) {
    const Link& link = topology.links[i];
    if (link.src >= 0 && link.src < topology.num_ranks) {
      links_from_[link.src].push_back(static_cast<int>(i));
    }
    const int lanes = std::max(1, link.lanes);
    const double beta = link.beta_us_per_mb / kBytesPerMb;
    if (topology.shared_links) {  // any number of transfers split the lanes' bandwidth
      add_group(std::numeric_limits<int>::max(), 1, beta / lanes, true);
    } else {
      add_group(lanes, lanes, beta, false);
    }
  }
  switch_egress_group_.resize(switches_.size());
  for (size_t s = 0; s < switches_.size(); ++s) {
    // One egress and one ingress group per port; ranks sharing a port share both.
    const Switch& sw = switches_[s];
    switch_egress_group_[s].assign(topology.num_ranks, -1);
    std::vector<int> port_egress(std::max(0, sw.num_ports()), -1);
    for (size_t i = 0; i < sw.ranks.size(); ++i) {
      const int r = sw.ranks[i];
      if (r < 0 || r >= topology.num_ranks) continue;
      int& egress = port_egress[sw.port_of_member(i)];
      if (egress < 0) {
        const int capacity = sw.port_lanes > 0 ? sw.port_lanes : std::numeric_limits<int>::max();
        const double beta = sw.port_beta_us_per_mb / kBytesPerMb;
        egress = add_group(capacity, 1, beta, true);
        add_group(capacity, 1, beta, true);  // ingress
      }
      switches_of_[r].push_back(static_cast<int>(s));
      switch_egress_group_[s][r] = egress;
    }
    add_socket_groups(s);
  }
}

void Network::add_socket_groups(size_t s) {
  // One egress and one ingress group per socket: the socket interconnect's two directions at
  // that socket, shared by every transfer between ports of different sockets.
  const Switch& sw = switches_[s];
  switch_rank_socket_.emplace_back(topology_.num_ranks, 0);
  switch_socket_egress_.emplace_back();
  if (sw.num_sockets() <= 1 || sw.socket_beta_us_per_mb <= 0.0) return;
  const int capacity = sw.port_lanes > 0 ? sw.port_lanes : std::numeric_limits<int>::max();
  for (int socket = 0; socket < sw.num_sockets(); ++socket) {
    switch_socket_egress_[s].push_back(
        add_group(capacity, 1, sw.socket_beta_us_per_mb / kBytesPerMb, true));
    add_group(capacity, 1, sw.socket_beta_us_per_mb / kBytesPerMb, true);  // ingress
  }
  for (size_t i = 0; i < sw.ranks.size(); ++i) {
    const int r = sw.ranks[i];
    if (r >= 0 && r < topology_.num_ranks) {
      switch_rank_socket_[s][r] = sw.socket_of_port(sw.port_of_member(i));
    }
  }
}

int Network::add_group(int capacity, int lanes, double beta_us_per_byte, bool shared) {
  const int group = static_cast<int>(group_capacity_.size());
  group_capacity_.push_back(capacity);
  group_active_.push_back(0);
  group_lanes_.push_back(lanes);
  group_beta_.push_back(beta_us_per_byte);
  group_shared_.push_back(shared ? 1 : 0);
  group_busy_.push_back(0.0);
  group_since_.push_back(0.0);
  flows_.emplace_back();
  shared_us_per_byte_.push_back(beta_us_per_byte);
  queues_.emplace_back();
  queue_head_.push_back(0);
  return group;
}

std::vector<int> Network::hops_of(const Connection& c) const {
  if (c.link_index >= 0) return {c.link_index};
  const int egress = switch_egress_group_[c.switch_index][c.src];
  const int ingress = switch_egress_group_[c.switch_index][c.dst] + 1;
  const std::vector<int>& sockets = switch_socket_egress_[c.switch_index];
  const int from = switch_rank_socket_[c.switch_index][c.src];
  const int to = switch_rank_socket_[c.switch_index][c.dst];
  if (sockets.empty() || from == to) return {egress, ingress};
  // Between sockets: out of the source socket and into the destination socket as well.
  return {egress, sockets[from], sockets[to] + 1, ingress};
}

int Network::route(int src, int dst) {
  const auto key = std::make_pair(src, dst);
  if (auto it = route_index_.find(key); it != route_index_.end()) return it->second;
  const int n = topology_.num_ranks;
  if (src < 0 || src >= n || dst < 0 || dst >= n) {
    throw UserError("", "peer",
                    "rank " + std::to_string(src) + " -> " + std::to_string(dst) +
                        " is outside topology '" + topology_.name + "'");
  }
  const std::vector<Connection> path = shortest_path(src, dst);
  if (path.empty()) {
    throw UserError("", "peer",
                    "rank " + std::to_string(dst) + " is unreachable from rank " +
                        std::to_string(src) + " in topology '" + topology_.name + "'");
  }
  Route route;
  for (const Connection& c : path) {
    const std::vector<int> hops = hops_of(c);
    route.groups.insert(route.groups.end(), hops.begin(), hops.end());
    for (int g : hops) {
      if (group_shared_[g]) route_shared_.push_back(g);
    }
    route.alpha_us += c.alpha_us;
    route.beta_us_per_byte = std::max(route.beta_us_per_byte, c.beta_us_per_mb / kBytesPerMb);
    for (int g : hops) route.beta_us_per_byte = std::max(route.beta_us_per_byte, group_beta_[g]);
  }
  route.beta_us_per_byte = std::max(route.beta_us_per_byte, threadblock_us_per_byte_);
  double fixed = threadblock_us_per_byte_;
  for (int g : route.groups) {
    if (!group_shared_[g]) fixed = std::max(fixed, group_beta_[g]);
  }
  route_fixed_us_per_byte_.push_back(fixed);
  route_shared_begin_.push_back(static_cast<int>(route_shared_.size()));
  routes_.push_back(std::move(route));
  route_index_.emplace(key, static_cast<int>(routes_.size()) - 1);
  return static_cast<int>(routes_.size()) - 1;
}

std::optional<Connection> Network::direct(int src, int dst) const {
  std::optional<Connection> best;
  for (int i : links_from_[src]) {
    const Link& l = topology_.links[i];
    if (l.dst == dst) best = Connection{src, dst, l.alpha_us, l.beta_us_per_mb, l.lanes, i, -1};
  }
  for (int s : switches_of_[src]) {
    const Switch& sw = switches_[s];
    if (switch_egress_group_[s][dst] < 0) continue;  // dst is not on this switch
    // A host switch only where nothing else connects the pair (switches_of_ lists it last).
    if (static_cast<size_t>(s) >= num_fabric_switches_ && best) break;
    if (!best || sw.port_beta_us_per_mb < best->beta_us_per_mb) {
      best = Connection{src, dst, sw.alpha_us, sw.port_beta_us_per_mb, 1, -1, s};
    }
  }
  return best;
}

std::vector<Connection> Network::shortest_path(int src, int dst) const {
  if (src == dst) return {};
  if (auto c = direct(src, dst)) return {*c};
  // BFS over ranks: the first path found is a shortest one in hops; each hop then uses the
  // connection direct() picks.
  const int n = topology_.num_ranks;
  auto for_each_neighbor = [this, n](int u, auto&& visit) {
    auto visit_rank = [&visit, n](int v) {
      if (v >= 0 && v < n) visit(v);
    };
    for (int i : links_from_[u]) visit_rank(topology_.links[i].dst);
    for (int s : switches_of_[u]) {
      for (int v : switches_[s].ranks) visit_rank(v);
    }
  };
  const std::vector<int> ranks =
      breadth_first_search(n, {src}, for_each_neighbor, dst).path_to(dst);
  std::vector<Connection> path;
  for (size_t i = 1; i < ranks.size(); ++i) path.push_back(*direct(ranks[i - 1], ranks[i]));
  return path;
}

bool Network::acquire(int route, double now, int* blocked_group) {
  const std::vector<int>& groups = routes_[route].groups;
  for (int group : groups) {
    if (group_active_[group] >= group_capacity_[group]) {
      *blocked_group = group;
      return false;
    }
  }
  for (int group : groups) {
    if (group_active_[group]++ == 0) group_since_[group] = now;
  }
  return true;
}

void Network::release(int route, double transfer_us, double now, std::vector<int>* freed_groups) {
  for (int group : routes_[route].groups) {
    if (!group_shared_[group]) {
      group_busy_[group] += transfer_us;
    }
    if (--group_active_[group] == 0 && group_shared_[group]) {
      group_busy_[group] += now - group_since_[group];
    }
    freed_groups->push_back(group);
  }
}

int Network::pop_waiter(int group) {
  std::vector<int>& queue = queues_[group];
  size_t& head = queue_head_[group];
  if (group_active_[group] >= group_capacity_[group] || head >= queue.size()) return -1;
  const int tb = queue[head++];
  if (head == queue.size()) {
    queue.clear();
    head = 0;
  }
  return tb;
}

void Network::join(int route, int flow) {
  for (int group : shared_groups(route)) {
    flows_[group].push_back(flow);
    shared_us_per_byte_[group] =
        group_beta_[group] * std::max<double>(1.0, static_cast<double>(flows_[group].size()));
  }
}

void Network::leave(int route, int flow) {
  for (int group : shared_groups(route)) {
    std::vector<int>& flows = flows_[group];
    const auto it = std::find(flows.begin(), flows.end(), flow);
    if (it != flows.end()) {
      *it = flows.back();
      flows.pop_back();
    }
    shared_us_per_byte_[group] =
        group_beta_[group] * std::max<double>(1.0, static_cast<double>(flows.size()));
  }
}

template <typename Visit>
void Network::for_each_reported_group(Visit&& visit) const {
  for (size_t i = 0; i < topology_.links.size(); ++i) {
    visit(topology_.links[i].src, topology_.links[i].dst, static_cast<int>(i));
  }
  for (size_t s = 0; s < switches_.size(); ++s) {
    for (const std::vector<int>& port : switches_[s].port_members()) {
      const int r = port.empty() ? -1 : port.front();  // a shared port once, as its first rank
      if (r < 0 || r >= topology_.num_ranks) continue;
      visit(r, -1, switch_egress_group_[s][r]);
      visit(-1, r, switch_egress_group_[s][r] + 1);
    }
  }
}

std::vector<LinkUsage> Network::usage(double time_us) const {
  std::vector<LinkUsage> out;
  for_each_reported_group([&](int src, int dst, int group) {
    double busy = group_busy_[group];
    // A port still held at the end (cannot happen after a full run) counts until time_us.
    if (group_shared_[group] && group_active_[group] > 0) busy += time_us - group_since_[group];
    const double capacity = time_us * group_lanes_[group];
    out.push_back(LinkUsage{src, dst, busy, capacity > 0.0 ? busy / capacity : 0.0});
  });
  return out;
}

std::vector<int> Network::usage_index() const {
  std::vector<int> index(group_capacity_.size(), -1);
  int next = 0;
  for_each_reported_group([&](int, int, int group) { index[group] = next++; });
  return index;
}

}  // namespace ccsynth::sim
