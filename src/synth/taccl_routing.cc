// Stage 1 of TACCL (appendix B.1): the bandwidth-relaxed routing MILP.
//
// Tightening over the paper's encoding (docs/taccl.md): a chunk may only use links on shortest
// (alpha-beta) paths from its source to one of its destinations in the logical topology, so the
// candidate links of a chunk form a DAG and every chunk's arrival time at a rank is fixed by its
// distance. The start/send variables and the big-M indicator of eq. 5 then drop out: eq. 2-5
// collapse into the constant bound time >= max distance, and the model keeps only the is_sent
// tree variables, the relaxed bandwidth rows (eq. 6-8) and the switch-hyperedge utilization
// (eq. 9-11). Symmetry (eq. 12-14) is applied by giving every orbit of (chunk, link) under the
// sketch's rank group one variable.

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "ccsynth/core/error.h"
#include "ccsynth/core/graph.h"
#include "ccsynth/solvers/milp.h"
#include "ccsynth/synth/taccl.h"
#include "taccl_detail.h"

namespace ccsynth::synth {

namespace detail {

int chunk_image(const Collective& c, const std::vector<int>& g, int k) {
  const int chunks = c.chunks_per_rank;
  switch (c.kind) {
    case CollectiveKind::kAllGather: return g[k / chunks] * chunks + k % chunks;
    case CollectiveKind::kAllToAll: {
      const int pair = k / chunks, s = pair / c.num_ranks, d = pair % c.num_ranks;
      return (g[s] * c.num_ranks + g[d]) * chunks + k % chunks;
    }
    default: return -1;
  }
}

}  // namespace detail

namespace {

constexpr double kUnreachable = std::numeric_limits<double>::infinity();

bool close_to(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

// All-pairs alpha-beta distances over the links a chunk from `source` may use.
std::vector<std::vector<double>> distances(const LogicalTopology& lt, const Sketch& sketch,
                                           int source, double chunk_bytes) {
  const int n = lt.num_ranks;
  std::vector<std::vector<double>> d(n, std::vector<double>(n, kUnreachable));
  for (int r = 0; r < n; ++r) d[r][r] = 0.0;
  for (size_t l = 0; l < lt.links.size(); ++l) {
    if (!lt.allows(sketch, source, static_cast<int>(l))) continue;
    const LogicalLink& link = lt.links[l];
    d[link.src][link.dst] = std::min(d[link.src][link.dst], link.lat_us(chunk_bytes));
  }
  for (int k = 0; k < n; ++k) {
    for (int i = 0; i < n; ++i) {
      if (d[i][k] == kUnreachable) continue;
      for (int j = 0; j < n; ++j) d[i][j] = std::min(d[i][j], d[i][k] + d[k][j]);
    }
  }
  return d;
}

struct ChunkInfo {
  int source = 0;
  std::vector<int> dests;       // post ranks other than the source
  std::vector<int> candidates;  // link indices on shortest paths
  std::vector<int> relays;      // intra-node relay links off the shortest paths (see relays())
};

// Shortest-path candidates and relays together.
std::vector<int> all_links(const ChunkInfo& info) {
  std::vector<int> out = info.candidates;
  out.insert(out.end(), info.relays.begin(), info.relays.end());
  return out;
}

class LoadRows;

// The shared state of building the routing model.
class RoutingModel {
 public:
  RoutingModel(const LogicalTopology& lt, const Sketch& sketch, const Collective& c,
               double chunk_bytes, bool relays)
      : lt_(lt), sketch_(sketch), c_(c), bytes_(chunk_bytes), use_relays_(relays) {
    build_group();
    build_chunks();
  }

  Routing solve(const TacclOptions& options, StageReport* report);

 private:
  // Per link lane and switch port, the folded is_sent variables with their latency weights.
  struct Loads {
    std::vector<std::map<int, double>> link;
    std::map<std::pair<int, int>, std::map<int, double>> send_port, recv_port;
  };

  void build_group();
  void build_chunks();
  void add_relays(ChunkInfo& info, const std::vector<std::vector<double>>& d);
  int var_of(int chunk, int link);
  std::vector<bool> representative_chunks() const;
  void add_tree_rows(int chunk);
  Loads collect_loads();
  void add_bandwidth_rows(int time);
  void add_relay_arrival_rows(LoadRows& rows);
  void add_switch_utilization();
  std::vector<std::vector<int>> greedy_trees() const;
  std::vector<double> mip_start(const std::vector<std::vector<int>>& greedy,
                                const std::vector<bool>& rep, int time);
  double makespan_of(const std::vector<double>& start, int time) const;
  std::vector<std::vector<int>> chosen_trees(const solvers::MilpResult& result);
  Routing extract(const std::vector<std::vector<int>>& trees) const;

  const LogicalTopology& lt_;
  const Sketch& sketch_;
  const Collective& c_;
  double bytes_;
  bool use_relays_;
  std::vector<std::vector<int>> group_;      // usable rank permutations
  std::vector<std::vector<int>> chunk_img_;  // [g][chunk]
  std::vector<std::vector<int>> link_img_;   // [g][link]
  std::vector<ChunkInfo> chunks_;
  double latency_bound_ = 0.0;
  std::map<int, std::vector<std::vector<double>>> dist_;  // source -> all-pairs distances
  solvers::MilpModel model_;
  std::map<std::pair<int, int>, int> vars_;  // canonical (chunk, link) -> variable
  std::map<int, std::set<int>> util_sent_;   // canonical hyperedge link -> its is_sent variables
  std::map<int, int> util_;                  // canonical hyperedge link -> utilization variable
};

void RoutingModel::build_group() {
  std::map<std::pair<int, int>, int> index;
  for (size_t l = 0; l < lt_.links.size(); ++l) {
    index[{lt_.links[l].src, lt_.links[l].dst}] = static_cast<int>(l);
  }
  for (const auto& g : lt_.group) {
    std::vector<int> ci(c_.num_chunks());
    bool ok = true;
    for (int k = 0; k < c_.num_chunks() && ok; ++k) {
      ci[k] = detail::chunk_image(c_, g, k);
      ok = ci[k] >= 0;
    }
    if (!ok) continue;  // no folding for this collective: keep the identity only
    std::vector<int> li(lt_.links.size());
    for (size_t l = 0; l < lt_.links.size(); ++l) {
      li[l] = index.at({g[lt_.links[l].src], g[lt_.links[l].dst]});
    }
    group_.push_back(g);
    chunk_img_.push_back(std::move(ci));
    link_img_.push_back(std::move(li));
  }
  if (group_.empty()) {  // the identity always applies
    std::vector<int> id(lt_.num_ranks), ci(c_.num_chunks()), li(lt_.links.size());
    for (int r = 0; r < lt_.num_ranks; ++r) id[r] = r;
    for (int k = 0; k < c_.num_chunks(); ++k) ci[k] = k;
    for (size_t l = 0; l < li.size(); ++l) li[l] = static_cast<int>(l);
    group_.push_back(id);
    chunk_img_.push_back(ci);
    link_img_.push_back(li);
  }
}

void RoutingModel::build_chunks() {
  std::map<int, std::vector<std::vector<double>>>& dist_by_source = dist_;
  chunks_.resize(c_.num_chunks());
  for (int k = 0; k < c_.num_chunks(); ++k) {
    const std::vector<int> pre = c_.pre_ranks(k);
    if (pre.size() != 1) {
      throw UserError("", "collective",
                      "TACCL routing needs one source per chunk; chunk " + std::to_string(k) +
                          " has " + std::to_string(pre.size()));
    }
    ChunkInfo& info = chunks_[k];
    info.source = pre[0];
    for (int r : c_.post_ranks(k)) {
      if (r != info.source) info.dests.push_back(r);
    }
    auto it = dist_by_source.find(info.source);
    if (it == dist_by_source.end()) {
      it = dist_by_source.emplace(info.source, distances(lt_, sketch_, info.source, bytes_)).first;
    }
    const auto& d = it->second;
    const int s = info.source;
    for (int dst : info.dests) {
      if (d[s][dst] == kUnreachable) {
        throw UserError(sketch_.file, "internode_sketch",
                        "the sketch leaves no path for rank " + std::to_string(s) +
                            "'s chunks to rank " + std::to_string(dst) +
                            " (check gpus_to_sender_rev_map)");
      }
      latency_bound_ = std::max(latency_bound_, d[s][dst]);
    }
    for (size_t l = 0; l < lt_.links.size(); ++l) {
      const LogicalLink& link = lt_.links[l];
      if (link.dst == s || d[s][link.src] == kUnreachable) continue;
      if (!lt_.allows(sketch_, s, static_cast<int>(l))) continue;
      const double via = d[s][link.src] + link.lat_us(bytes_);
      for (int dst : info.dests) {
        if (d[link.dst][dst] != kUnreachable && close_to(via + d[link.dst][dst], d[s][dst])) {
          info.candidates.push_back(static_cast<int>(l));
          break;
        }
      }
    }
    if (use_relays_) add_relays(info, d);
  }
}

// Intra-node relays off the shortest paths (docs/taccl.md "Intra-node relays"): in a node other
// than the source's, a destination u that got the chunk over a shortest-path link may forward it
// through its switch port to another destination v of the same node with d(v) >= d(u), v then
// being a leaf. This spreads the fan-out of a rank that receives a node's inter-node traffic over
// the switch egress ports of its neighbours (eq. 7), which shortest paths alone cannot do. The
// leaf rule and d(v) >= d(u) keep every chosen edge set acyclic (shortest-path links strictly
// increase d, and no two relay links can be consecutive), so the tree rows stay exact; the
// extra hop's latency is a constant per link (time >= (d(u) + lat) x is_sent). The definition
// uses only distances, nodes and switch membership, so it is invariant under the symmetry group.
void RoutingModel::add_relays(ChunkInfo& info, const std::vector<std::vector<double>>& d) {
  const int s = info.source;
  if (info.dests.size() < 2) return;
  std::set<int> dests(info.dests.begin(), info.dests.end());
  std::set<int> shortest(info.candidates.begin(), info.candidates.end());
  for (size_t l = 0; l < lt_.links.size(); ++l) {
    const LogicalLink& link = lt_.links[l];
    if (link.internode || link.port < 0 || shortest.count(static_cast<int>(l))) continue;
    if (lt_.node_of[link.src] != lt_.node_of[link.dst]) continue;
    if (lt_.node_of[link.src] == lt_.node_of[s]) continue;
    if (!dests.count(link.src) || !dests.count(link.dst)) continue;
    if (!lt_.allows(sketch_, s, static_cast<int>(l))) continue;
    if (d[s][link.dst] + 1e-9 < d[s][link.src]) continue;
    info.relays.push_back(static_cast<int>(l));
  }
}

int RoutingModel::var_of(int chunk, int link) {
  std::pair<int, int> best{chunk, link};
  for (size_t g = 0; g < group_.size(); ++g) {
    best = std::min(best, std::pair(chunk_img_[g][chunk], link_img_[g][link]));
  }
  auto it = vars_.find(best);
  if (it != vars_.end()) return it->second;
  const int v = model_.add_binary(
      0.0, "sent_c" + std::to_string(best.first) + "_l" + std::to_string(best.second));
  vars_.emplace(best, v);
  return v;
}

// A feasible routing for the MIP start and as a fallback: every destination, farthest first,
// takes the least-loaded candidate in-link whose tail is (or becomes) part of the tree.
std::vector<std::vector<int>> RoutingModel::greedy_trees() const {
  std::vector<double> load(lt_.links.size(), 0.0);
  std::vector<std::vector<int>> trees(chunks_.size());
  for (size_t k = 0; k < chunks_.size(); ++k) {
    const ChunkInfo& info = chunks_[k];
    std::map<int, std::vector<int>> in_links;
    for (int l : info.candidates) in_links[lt_.links[l].dst].push_back(l);
    const auto d = distances(lt_, sketch_, info.source, bytes_);
    std::vector<int> need = info.dests;
    std::set<int> in_tree = {info.source};
    std::set<int> done;
    while (!need.empty()) {
      // Farthest first, so relays chosen for far ranks are reused by nearer ones.
      std::sort(need.begin(), need.end(),
                [&](int a, int b) { return d[info.source][a] < d[info.source][b]; });
      const int v = need.back();
      need.pop_back();
      if (done.count(v)) continue;
      done.insert(v);
      int best = -1;
      double best_key = kUnreachable;
      for (int l : in_links[v]) {
        const LogicalLink& link = lt_.links[l];
        const double key = load[l] / link.lanes - (in_tree.count(link.src) ? 1e6 : 0.0);
        if (best < 0 || key < best_key) best = l, best_key = key;
      }
      CCSYNTH_CHECK(best >= 0) << "no candidate in-link for chunk " << k << " at rank " << v;
      trees[k].push_back(best);
      load[best] += lt_.links[best].lat_us(bytes_);
      in_tree.insert(v);
      const int u = lt_.links[best].src;
      if (!in_tree.count(u)) {
        in_tree.insert(u);
        need.push_back(u);
      }
    }
  }
  return trees;
}

// Transfers in breadth-first order of every chunk's tree, with their predecessor.
Routing RoutingModel::extract(const std::vector<std::vector<int>>& trees) const {
  Routing routing;
  for (size_t k = 0; k < chunks_.size(); ++k) {
    const ChunkInfo& info = chunks_[k];
    std::map<int, int> delivered;  // rank -> transfer that brought the chunk
    // Expanding rank u records the transfers of the tree's links out of u, in tree order.
    auto for_each_tree_link_out = [&](int u, auto&& visit) {
      for (int l : trees[k]) {
        const LogicalLink& link = lt_.links[l];
        if (link.src != u) continue;
        CCSYNTH_CHECK(!delivered.count(link.dst) && link.dst != info.source)
            << "chunk " << k << " reaches rank " << link.dst << " twice";
        Transfer t;
        t.chunk = static_cast<int>(k);
        t.src = link.src;
        t.dst = link.dst;
        t.link = l;
        if (u != info.source) t.preds.push_back(delivered.at(u));
        delivered[link.dst] = static_cast<int>(routing.transfers.size());
        routing.transfers.push_back(std::move(t));
        visit(link.dst);
      }
    };
    breadth_first_search(lt_.num_ranks, {info.source}, for_each_tree_link_out);
    for (int d : info.dests) {
      CCSYNTH_CHECK(delivered.count(d)) << "routing misses chunk " << k << " at rank " << d;
    }
  }
  return routing;
}

// Whether chunk k is the smallest of its orbit under the symmetry group (its tree rows stand
// for the whole orbit's).
std::vector<bool> RoutingModel::representative_chunks() const {
  std::vector<bool> rep(chunks_.size(), true);
  for (size_t k = 0; k < chunks_.size(); ++k) {
    for (size_t g = 0; g < group_.size(); ++g) {
      rep[k] = rep[k] && chunk_img_[g][k] >= static_cast<int>(k);
    }
  }
  return rep;
}

// Tree constraints of chunk k: every destination receives it once, other ranks at most once,
// and a rank forwards only what arrived.
void RoutingModel::add_tree_rows(int k) {
  const ChunkInfo& info = chunks_[k];
  std::map<int, std::vector<solvers::Term>> in;   // every candidate in-link
  std::map<int, std::vector<solvers::Term>> fwd;  // shortest-path in-links (may forward)
  for (int l : info.candidates) {
    in[lt_.links[l].dst].push_back({var_of(k, l), 1.0});
    fwd[lt_.links[l].dst].push_back({var_of(k, l), 1.0});
  }
  for (int l : info.relays) in[lt_.links[l].dst].push_back({var_of(k, l), 1.0});
  for (int d : info.dests) {
    CCSYNTH_CHECK(in.count(d)) << "no candidate link into rank " << d;
    model_.add_eq(in[d], 1.0);  // each destination receives the chunk once
  }
  for (auto& [v, terms] : in) {
    if (!std::count(info.dests.begin(), info.dests.end(), v)) model_.add_le(terms, 1.0);
  }
  auto add_forward = [&](int l) {
    const int u = lt_.links[l].src;
    if (u == info.source) return;
    std::vector<solvers::Term> row = {{var_of(k, l), 1.0}};
    for (const auto& t : fwd[u]) row.push_back({t.var, -1.0});
    model_.add_le(row, 0.0);  // forward only what arrived (a relay's leaf never forwards)
  };
  for (int l : info.candidates) add_forward(l);
  for (int l : info.relays) add_forward(l);
}

// Rows time >= load, one per distinct folded load expression.
class LoadRows {
 public:
  LoadRows(solvers::MilpModel& model, int time) : model_(model), time_(time) {}

  void add(const std::map<int, double>& load) {
    if (load.empty()) return;
    std::vector<std::pair<int, double>> key(load.begin(), load.end());
    if (!seen_.insert(key).second) return;
    std::vector<solvers::Term> row = {{time_, 1.0}};
    for (auto [v, coef] : key) row.push_back({v, -coef});
    model_.add_ge(row, 0.0);
  }

 private:
  solvers::MilpModel& model_;
  int time_;
  std::set<std::vector<std::pair<int, double>>> seen_;
};

RoutingModel::Loads RoutingModel::collect_loads() {
  Loads loads;
  loads.link.resize(lt_.links.size());
  for (size_t k = 0; k < chunks_.size(); ++k) {
    for (int l : all_links(chunks_[k])) {
      const LogicalLink& link = lt_.links[l];
      const int v = var_of(k, l);
      const double lat = link.lat_us(bytes_);
      loads.link[l][v] += lat / link.lanes;
      if (link.port >= 0) {
        loads.send_port[{link.port, link.send_port}][v] += lat;  // a shared port's load is summed
        loads.recv_port[{link.port, link.recv_port}][v] += lat;
      }
    }
  }
  return loads;
}

// Relaxed bandwidth (eq. 6-8) of every link lane and switch port.
void RoutingModel::add_bandwidth_rows(int time) {
  LoadRows rows(model_, time);
  const Loads loads = collect_loads();
  for (const auto& load : loads.link) rows.add(load);
  add_relay_arrival_rows(rows);
  for (const auto& [key, load] : loads.send_port) rows.add(load);
  for (const auto& [key, load] : loads.recv_port) rows.add(load);
}

// A relay delays its leaf by one hop: the arrival there is a constant per relay link.
void RoutingModel::add_relay_arrival_rows(LoadRows& rows) {
  for (size_t k = 0; k < chunks_.size(); ++k) {
    const int s = chunks_[k].source;
    for (int l : chunks_[k].relays) {
      const LogicalLink& link = lt_.links[l];
      const double arrival = dist_.at(s)[s][link.src] + link.lat_us(bytes_);
      if (arrival > latency_bound_) rows.add({{var_of(static_cast<int>(k), l), arrival}});
    }
  }
}

// Switch-hyperedge policies (eq. 9-11): a small weight so makespan stays the first goal.
void RoutingModel::add_switch_utilization() {
  for (size_t k = 0; k < chunks_.size(); ++k) {
    for (int l : all_links(chunks_[k])) {
      const LogicalLink& link = lt_.links[l];
      if (link.hyperedge < 0 || lt_.policies[link.hyperedge] == SwitchPolicy::kFree) continue;
      int canon = l;
      for (size_t g = 0; g < group_.size(); ++g) canon = std::min(canon, link_img_[g][l]);
      util_sent_[canon].insert(var_of(k, l));
    }
  }
  const double gamma =
      1e-3 * std::max(latency_bound_, 1e-3) / std::max<size_t>(1, util_sent_.size());
  for (const auto& [l, sent] : util_sent_) {
    const SwitchPolicy p = lt_.policies[lt_.links[l].hyperedge];
    const int u =
        model_.add_binary(p == SwitchPolicy::kUcMin ? gamma : -gamma, "util_l" + std::to_string(l));
    util_[l] = u;
    std::vector<solvers::Term> upper = {{u, 1.0}};
    for (int v : sent) {
      model_.add_ge({{u, 1.0}, {v, -1.0}}, 0.0);  // eq. 9
      upper.push_back({v, -1.0});
    }
    model_.add_le(upper, 0.0);  // eq. 10
  }
}

// The MIP start of the greedy trees of the representative chunks; empty when two chunks of an
// orbit chose differently (their shared variables have no single value).
std::vector<double> RoutingModel::mip_start(const std::vector<std::vector<int>>& greedy,
                                            const std::vector<bool>& rep, int time) {
  std::vector<double> start(model_.num_vars(), 0.0);
  std::vector<int> fixed(model_.num_vars(), -1);
  for (size_t k = 0; k < chunks_.size(); ++k) {
    if (!rep[k]) continue;
    std::set<int> chosen(greedy[k].begin(), greedy[k].end());
    for (int l : chunks_[k].candidates) {
      const int v = var_of(k, l), value = chosen.count(l) ? 1 : 0;
      if (fixed[v] >= 0 && fixed[v] != value) return {};
      fixed[v] = value;
      start[v] = value;
    }
  }
  for (const auto& [l, sent] : util_sent_) {
    for (int v : sent) start[util_.at(l)] = std::max(start[util_.at(l)], start[v]);
  }
  start[time] = makespan_of(start, time);
  return start;
}

// The smallest time the rows time >= load allow for the values in `start`.
double RoutingModel::makespan_of(const std::vector<double>& start, int time) const {
  double t = latency_bound_;
  for (int r = 0; r < model_.num_rows(); ++r) {
    const auto& row = model_.row(r);
    if (row.empty() || row[0].var != time) continue;
    double sum = 0.0;
    for (size_t i = 1; i < row.size(); ++i) sum -= row[i].coef * start[row[i].var];
    t = std::max(t, sum);
  }
  return t;
}

// The links whose is_sent variable is set in the solution, per chunk.
std::vector<std::vector<int>> RoutingModel::chosen_trees(const solvers::MilpResult& r) {
  std::vector<std::vector<int>> trees(chunks_.size());
  for (size_t k = 0; k < chunks_.size(); ++k) {
    for (int l : all_links(chunks_[k])) {
      if (r.values[var_of(static_cast<int>(k), l)] > 0.5) trees[k].push_back(l);
    }
  }
  return trees;
}

Routing RoutingModel::solve(const TacclOptions& options, StageReport* report) {
  const int time = model_.add_var(latency_bound_, solvers::kInfinity, false, 1.0, "time");
  const std::vector<bool> rep = representative_chunks();
  // Tree constraints of every representative chunk (the rest are their images).
  for (size_t k = 0; k < chunks_.size(); ++k) {
    if (rep[k]) add_tree_rows(static_cast<int>(k));
  }
  add_bandwidth_rows(time);
  add_switch_utilization();
  const std::vector<std::vector<int>> greedy = greedy_trees();
  solvers::MilpOptions mo = detail::milp_options(options);
  mo.mip_start = mip_start(greedy, rep, time);
  const solvers::MilpResult r = solvers::solve_milp(model_, mo);
  detail::report_milp_stage(report, "routing", r, model_);
  // The objective adds the small switch-hyperedge terms to the makespan: its bound is not one
  // on the makespan alone.
  if (report) report->lower_bound_us = 0.0;
  if (!r.has_solution) {
    Routing fallback = extract(greedy);
    if (report) report->status += " (greedy routing used)";
    fallback.objective_us = mo.mip_start.empty() ? 0.0 : mo.mip_start[time];
    if (report) report->objective_us = fallback.objective_us;
    return fallback;
  }
  Routing routing = extract(chosen_trees(r));
  routing.objective_us = r.values[time];
  if (report) report->objective_us = routing.objective_us;
  return routing;
}

}  // namespace

Routing route(const LogicalTopology& logical, const Sketch& sketch, const Collective& collective,
              double chunk_bytes, const TacclOptions& options, StageReport* report) {
  RoutingModel model(logical, sketch, collective, chunk_bytes, options.intra_node_relays);
  return model.solve(options, report);
}

std::vector<Transfer> invert_transfers(const std::vector<Transfer>& transfers,
                                       const LogicalTopology& logical) {
  std::vector<Transfer> out(transfers.size());
  // into[(chunk, rank)]: inverted transfers arriving at rank (the original's sends from it).
  std::map<std::pair<int, int>, std::vector<int>> into;
  for (size_t i = 0; i < transfers.size(); ++i) {
    const Transfer& t = transfers[i];
    Transfer inv;
    inv.chunk = t.chunk;
    inv.src = t.dst;
    inv.dst = t.src;
    inv.link = logical.find(t.dst, t.src);
    if (inv.link < 0) {
      throw UserError("", "collective",
                      "reducescatter inverts the allgather, but the logical topology has no link " +
                          std::to_string(t.dst) + "->" + std::to_string(t.src));
    }
    inv.kind = OpKind::kReduce;
    out[i] = std::move(inv);
    into[{t.chunk, t.src}].push_back(static_cast<int>(i));
  }
  // A rank forwards its partial sum after every child's contribution has arrived.
  for (size_t i = 0; i < out.size(); ++i) {
    auto it = into.find({out[i].chunk, out[i].src});
    if (it != into.end()) out[i].preds = it->second;
  }
  return out;
}

}  // namespace ccsynth::synth
