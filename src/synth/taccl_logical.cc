// The logical topology of a sketch (TACCL sec. 3.1-3.3): the physical connections the sketch
// keeps, their costs, switch-hyperedge policies and the rank symmetry group.

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>

#include "ccsynth/core/error.h"
#include "ccsynth/core/graph.h"
#include "ccsynth/core/units.h"
#include "ccsynth/synth/sketch.h"

namespace ccsynth::synth {

double LogicalLink::lat_us(double chunk_bytes) const {
  return alpha_us + transfer_us(beta_us_per_mb, chunk_bytes);
}

int LogicalTopology::find(int src, int dst) const {
  for (size_t i = 0; i < links.size(); ++i) {
    if (links[i].src == src && links[i].dst == dst) return static_cast<int>(i);
  }
  return -1;
}

bool LogicalTopology::allows(const Sketch& sketch, int source, int link) const {
  const LogicalLink& l = links[link];
  // Relay restrictions apply to the hop that takes a chunk out of its source's node.
  if (!l.internode || node_of[l.src] != node_of[source]) return true;
  return sketch.may_relay(local_of[reversed ? l.dst : l.src], local_of[source]);
}

namespace {

// Whether an inter-node connection from local GPU `from` to local GPU `to` is in the sketch.
bool internode_kept(const InternodeSketch& in, int from, int to) {
  if (!in.present) return true;
  switch (in.conn) {
    case InternodeConn::kFullyConnected: return true;
    case InternodeConn::kDirectMap: return from == to;
    case InternodeConn::kMap: {
      auto it = in.conn_map.find(from);
      return it != in.conn_map.end() &&
             std::find(it->second.begin(), it->second.end(), to) != it->second.end();
    }
  }
  return false;
}

// Hyperedge index of an intra-node pair (or -1 without a policy); false when dropped.
bool intranode_kept(const IntranodeSketch& in, int a, int b, int& hyperedge) {
  hyperedge = -1;
  switch (in.strategy) {
    case IntranodeStrategy::kNone: return true;
    case IntranodeStrategy::kMinMax:
    case IntranodeStrategy::kMaxMin: hyperedge = 0; return true;
    case IntranodeStrategy::kSwitch:
      for (size_t i = 0; i < in.switches.size(); ++i) {
        const auto& sw = in.switches[i];
        if (std::count(sw.begin(), sw.end(), a) && std::count(sw.begin(), sw.end(), b)) {
          hyperedge = static_cast<int>(i);
          return true;
        }
      }
      return false;
  }
  return false;
}

std::vector<std::vector<int>> symmetry_group(const Sketch& sketch, int num_ranks) {
  std::vector<int> identity(num_ranks);
  for (int r = 0; r < num_ranks; ++r) identity[r] = r;
  std::vector<std::vector<int>> generators;
  for (auto [offset, group] : sketch.symmetry_offsets) {
    // TACCL's rotation: r -> (r % g + o) % g + (r / g) * g (sketch README).
    std::vector<int> p(num_ranks);
    for (int r = 0; r < num_ranks; ++r) p[r] = (r % group + offset) % group + (r / group) * group;
    generators.push_back(std::move(p));
  }
  std::set<std::vector<int>> seen = {identity};
  std::deque<std::vector<int>> todo = {identity};
  while (!todo.empty()) {
    const std::vector<int> p = todo.front();
    todo.pop_front();
    for (const auto& g : generators) {
      std::vector<int> q(num_ranks);
      for (int r = 0; r < num_ranks; ++r) q[r] = g[p[r]];
      if (seen.insert(q).second) todo.push_back(std::move(q));
    }
    CCSYNTH_CHECK(seen.size() <= 100000) << "symmetry group too large";
  }
  return {seen.begin(), seen.end()};
}

void check_connected(const LogicalTopology& lt, const Sketch& sketch) {
  std::vector<std::vector<int>> out(lt.num_ranks);
  for (const LogicalLink& l : lt.links) out[l.src].push_back(l.dst);
  for (int s = 0; s < lt.num_ranks; ++s) {
    const BfsResult search = breadth_first_search(out, {s});
    for (int d = 0; d < lt.num_ranks; ++d) {
      if (!search.reached(d)) {
        throw UserError(sketch.file, "internode_sketch",
                        "the logical topology has no path from rank " + std::to_string(s) +
                            " to rank " + std::to_string(d));
      }
    }
  }
}

bool same_cost(const LogicalLink& a, const LogicalLink& b) {
  auto close = [](double x, double y) {
    return std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(x));
  };
  return close(a.alpha_us, b.alpha_us) && close(a.beta_us_per_mb, b.beta_us_per_mb) &&
         a.lanes == b.lanes && a.internode == b.internode;
}

void check_symmetry(const LogicalTopology& lt, const Sketch& sketch) {
  auto policy = [&](const LogicalLink& l) {
    return l.hyperedge < 0 ? SwitchPolicy::kFree : lt.policies[l.hyperedge];
  };
  for (const auto& g : lt.group) {
    for (size_t i = 0; i < lt.links.size(); ++i) {
      const LogicalLink& l = lt.links[i];
      const int j = lt.find(g[l.src], g[l.dst]);
      if (j < 0 || !same_cost(l, lt.links[j]) || policy(l) != policy(lt.links[j])) {
        throw UserError(
            sketch.file, "symmetry_offsets",
            "not a symmetry of the logical topology: link " + std::to_string(l.src) + "->" +
                std::to_string(l.dst) + " maps to " + std::to_string(g[l.src]) + "->" +
                std::to_string(g[l.dst]) +
                (j < 0 ? ", which the sketch does not keep" : ", which costs differently"));
      }
      if (!l.internode) continue;
      for (int s = 0; s < lt.num_ranks; ++s) {
        if (lt.allows(sketch, s, static_cast<int>(i)) != lt.allows(sketch, g[s], j)) {
          throw UserError(sketch.file, "symmetry_offsets",
                          "not a symmetry of the relay map: rank " + std::to_string(s) +
                              "'s chunks and link " + std::to_string(l.src) + "->" +
                              std::to_string(l.dst) + " are treated differently from their images");
        }
      }
    }
  }
}

}  // namespace

LogicalTopology reversed(const LogicalTopology& logical) {
  LogicalTopology r = logical;
  r.reversed = true;
  for (LogicalLink& l : r.links) std::swap(l.src, l.dst);
  std::sort(r.links.begin(), r.links.end(), [](const LogicalLink& a, const LogicalLink& b) {
    return std::pair(a.src, a.dst) < std::pair(b.src, b.dst);
  });
  return r;
}

LogicalTopology make_logical_topology(const Sketch& sketch, const Topology& topology) {
  check_sketch_fits(sketch, topology);
  LogicalTopology lt;
  lt.num_ranks = topology.num_ranks;
  lt.node_of.assign(lt.num_ranks, 0);
  lt.local_of.resize(lt.num_ranks);
  for (int r = 0; r < lt.num_ranks; ++r) lt.local_of[r] = r;
  for (size_t n = 0; n < topology.nodes.size(); ++n) {
    for (size_t i = 0; i < topology.nodes[n].size(); ++i) {
      lt.node_of[topology.nodes[n][i]] = static_cast<int>(n);
      lt.local_of[topology.nodes[n][i]] = static_cast<int>(i);
    }
  }
  switch (sketch.intranode.strategy) {
    case IntranodeStrategy::kSwitch: lt.policies = sketch.intranode.policies; break;
    case IntranodeStrategy::kMinMax: lt.policies = {SwitchPolicy::kUcMin}; break;
    case IntranodeStrategy::kMaxMin: lt.policies = {SwitchPolicy::kUcMax}; break;
    case IntranodeStrategy::kNone: break;
  }
  for (const Connection& c : topology.connections()) {
    LogicalLink l;
    l.src = c.src;
    l.dst = c.dst;
    l.alpha_us = c.alpha_us;
    l.beta_us_per_mb = c.beta_us_per_mb;
    l.lanes = std::max(1, c.lanes);
    l.port = c.switch_index;
    if (l.port >= 0) {
      l.send_port = topology.switches[l.port].port_of_rank(c.src);
      l.recv_port = topology.switches[l.port].port_of_rank(c.dst);
    }
    const int a = lt.local_of[c.src], b = lt.local_of[c.dst];
    if (lt.node_of[c.src] == lt.node_of[c.dst]) {
      if (!intranode_kept(sketch.intranode, a, b, l.hyperedge)) continue;
    } else {
      if (!internode_kept(sketch.internode, a, b)) continue;
      l.internode = true;
      auto split = sketch.internode.beta_split.find(a);
      if (split != sketch.internode.beta_split.end()) l.beta_us_per_mb *= split->second;
    }
    lt.links.push_back(l);
  }
  check_connected(lt, sketch);
  lt.group = symmetry_group(sketch, lt.num_ranks);
  check_symmetry(lt, sketch);
  return lt;
}

}  // namespace ccsynth::synth
