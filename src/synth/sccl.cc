// SCCL instances, bounds, combining collectives and the Pareto search (SCCL sec. 3.2, 3.5,
// 3.7). The encoding itself is in sccl_encoding.cc.

#include "ccsynth/synth/sccl.h"
#include "ccsynth/core/timing.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "ccsynth/core/error.h"
#include "ccsynth/core/graph.h"
#include "ccsynth/synth/combine.h"

namespace ccsynth::synth {

namespace {

using Clock = std::chrono::steady_clock;

// The non-combining collective whose algorithms (on the reversed model for inversions) give
// `kind`'s (SCCL sec. 3.5); `kind` itself when it is non-combining.
CollectiveKind synthesis_kind(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllReduce: return CollectiveKind::kAllGather;
    case CollectiveKind::kReduce: return CollectiveKind::kBroadcast;
    default: return kind;
  }
}

bool inverted(CollectiveKind kind) {
  return kind == CollectiveKind::kReduceScatter || kind == CollectiveKind::kReduce;
}

void check_kind(CollectiveKind kind) {
  if (kind == CollectiveKind::kCustom) {
    throw UserError("", "collective", "SCCL synthesis needs a built-in collective");
  }
}

// Whether (C, S, R) is a shape synthesize_sccl() accepts for `kind` (without throwing).
bool valid_shape(CollectiveKind kind, int num_ranks, int chunks, int steps, int rounds) {
  if (chunks < 1 || steps < 1 || rounds < steps) return false;
  if (chunks % sccl_chunk_unit(kind, num_ranks) != 0) return false;
  if (kind == CollectiveKind::kAllReduce && (steps % 2 != 0 || rounds % 2 != 0)) return false;
  return true;
}

int64_t gcd64(int64_t a, int64_t b) { return std::gcd(a, b); }

// Chunks per round that can enter rank set `in_set` (a valid upper bound: per crossing edge the
// smallest b of a constraint containing it, capped per receiving rank by constraints covering
// all of its incoming edges and per sending rank likewise).
int64_t capacity_into(const BandwidthModel& model, const std::vector<std::pair<int, int>>& edges,
                      const std::map<std::pair<int, int>, int>& edge_cap,
                      const std::vector<int>& in_cap, const std::vector<int>& out_cap,
                      const std::vector<uint8_t>& in_set) {
  int64_t by_edges = 0;
  std::vector<int64_t> into(model.num_ranks, 0), from(model.num_ranks, 0);
  for (const auto& e : edges) {
    if (in_set[e.first] || !in_set[e.second]) continue;
    const int cap = edge_cap.at(e);
    by_edges += cap;
    into[e.second] += cap;
    from[e.first] += cap;
  }
  int64_t by_ranks_in = 0, by_ranks_out = 0;
  for (int r = 0; r < model.num_ranks; ++r) {
    by_ranks_in += std::min<int64_t>(into[r], in_cap[r]);
    by_ranks_out += std::min<int64_t>(from[r], out_cap[r]);
  }
  return std::min({by_edges, by_ranks_in, by_ranks_out});
}

}  // namespace

std::vector<std::pair<int, int>> BandwidthModel::edges() const {
  std::set<std::pair<int, int>> all, blocked;
  for (const BandwidthConstraint& c : constraints) {
    for (const auto& e : c.edges) (c.chunks_per_round > 0 ? all : blocked).insert(e);
  }
  std::vector<std::pair<int, int>> out;
  for (const auto& e : all) {
    if (!blocked.count(e) && e.first != e.second) out.push_back(e);
  }
  return out;
}

std::vector<int> BandwidthModel::hop_distances_from(int src) const {
  std::vector<std::vector<int>> adj(num_ranks);
  for (const auto& [a, b] : edges()) adj[a].push_back(b);
  return bfs_hop_distances(adj, src);
}

BandwidthModel bandwidth_model(const Topology& topology) {
  BandwidthModel model;
  model.name = topology.name;
  model.num_ranks = topology.num_ranks;
  // Switch ports: one egress and one ingress constraint per port (per member rank, or per
  // group of ranks sharing a port, Switch::port_group), over the pairs whose chosen connection
  // is that switch.
  std::map<std::pair<int, int>, BandwidthConstraint> ports;  // (switch, +/-port) -> constraint
  for (const Connection& c : topology.connections()) {
    if (c.link_index >= 0) {
      const Link& link = topology.links[c.link_index];
      model.constraints.push_back({{{c.src, c.dst}},
                                   link.lanes,
                                   "link " + std::to_string(c.src) + "->" + std::to_string(c.dst)});
    } else if (c.switch_index >= 0) {
      const Switch& sw = topology.switches[c.switch_index];
      // A shared port is labelled by its first member rank, as the simulator reports it.
      auto port_label = [&sw](int rank) {
        const int port = sw.port_of_rank(rank);
        return sw.has_shared_ports() ? "port " + std::to_string(port) + " (rank " +
                                           std::to_string(sw.port_members()[port].front()) + ")"
                                     : std::to_string(rank);
      };
      BandwidthConstraint& out = ports[{c.switch_index, sw.port_of_rank(c.src) + 1}];
      out.edges.push_back({c.src, c.dst});
      out.chunks_per_round = 1;
      out.label = "switch " + sw.name + " egress " + port_label(c.src);
      BandwidthConstraint& in = ports[{c.switch_index, -(sw.port_of_rank(c.dst) + 1)}];
      in.edges.push_back({c.src, c.dst});
      in.chunks_per_round = 1;
      in.label = "switch " + sw.name + " ingress " + port_label(c.dst);
    }
  }
  for (auto& [key, constraint] : ports) model.constraints.push_back(std::move(constraint));
  return model;
}

BandwidthModel reversed(const BandwidthModel& model) {
  BandwidthModel out = model;
  for (BandwidthConstraint& c : out.constraints) {
    for (auto& e : c.edges) std::swap(e.first, e.second);
  }
  return out;
}

Topology amd_z52_ring_topology() {
  Topology t;
  t.name = "amdz52-ring";
  t.num_ranks = 8;
  t.nodes = {{0, 1, 2, 3, 4, 5, 6, 7}};
  const std::vector<int> ring = {1, 3, 0, 2, 5, 7, 4, 6};
  for (size_t i = 0; i < ring.size(); ++i) {
    const int a = ring[i], b = ring[(i + 1) % ring.size()];
    // PCIe 4.0 x16 (~27 GB/s) joins the islands at 1-3 and 5-7, xGMI (~33 GB/s) elsewhere;
    // SCCL gives both the same beta (sec. 5.2.2).
    const bool pcie =
        std::min(a, b) * 10 + std::max(a, b) == 13 || std::min(a, b) * 10 + std::max(a, b) == 57;
    for (auto [s, d] : {std::pair{a, b}, std::pair{b, a}}) {
      Link link;
      link.src = s;
      link.dst = d;
      link.lanes = 1;
      link.alpha_us = pcie ? 1.5 : 1.0;
      link.beta_us_per_mb = pcie ? 1e6 / 27e3 : 1e6 / 33e3;
      link.kind = pcie ? "pcie" : "xgmi";
      t.links.push_back(link);
    }
  }
  return t;
}

BandwidthModel paper_bandwidth_model(const Topology& topology) {
  if (topology.name != "amdz52") return bandwidth_model(topology);
  BandwidthModel model = bandwidth_model(amd_z52_ring_topology());
  model.name = topology.name;
  return model;
}

int sccl_chunk_unit(CollectiveKind kind, int num_ranks) {
  return (kind == CollectiveKind::kAllToAll || kind == CollectiveKind::kAllReduce) ? num_ranks : 1;
}

Collective sccl_collective(CollectiveKind kind, int num_ranks, int chunks, int root) {
  check_kind(kind);
  const int unit = sccl_chunk_unit(kind, num_ranks);
  if (chunks < 1 || chunks % unit != 0) {
    throw UserError("", "chunks",
                    "SCCL's C for " + to_string(kind) + " on " + std::to_string(num_ranks) +
                        " ranks must be a positive multiple of " + std::to_string(unit) + ", got " +
                        std::to_string(chunks));
  }
  return make_collective(kind, num_ranks, chunks / unit, root);
}

InstanceResult synthesize_sccl(CollectiveKind kind, const BandwidthModel& model, int chunks,
                               int steps, int rounds, int root, const SolveOptions& options) {
  check_kind(kind);
  const int P = model.num_ranks;
  sccl_collective(kind, P, chunks, root);  // validates C
  if (kind == CollectiveKind::kAllReduce) {
    if (steps % 2 != 0 || rounds % 2 != 0) {
      throw UserError("", "steps",
                      "allreduce is reducescatter + allgather with S/2 steps and R/2 rounds each: "
                      "steps and rounds must be even");
    }
    // SCCL sec. 3.5: allreduce = invert(allgather on reversed links) then allgather.
    const int c = chunks / P;
    InstanceResult rs = synthesize_sccl(CollectiveKind::kReduceScatter, model, c, steps / 2,
                                        rounds / 2, root, options);
    if (!rs.algorithm) return rs;
    InstanceResult ag =
        synthesize_sccl(CollectiveKind::kAllGather, model, c, steps / 2, rounds / 2, root, options);
    ag.encode_s += rs.encode_s;
    ag.solve_s += rs.solve_s;
    ag.variables += rs.variables;
    ag.constraints += rs.constraints;
    if (ag.algorithm) {
      ag.algorithm = allreduce_from(*rs.algorithm, *ag.algorithm);
      ag.algorithm->name = "sccl_allreduce_c" + std::to_string(chunks) + "_s" +
                           std::to_string(steps) + "_r" + std::to_string(rounds);
      ag.algorithm->topology = model.name;
    }
    return ag;
  }
  // Shapes below algorithm 1's bounds are UNSAT without asking the solver.
  if (steps < sccl_latency_lower_bound(kind, model, root) ||
      make_ratio(rounds, chunks) < sccl_bandwidth_lower_bound(kind, model, root)) {
    return InstanceResult{};
  }
  const CollectiveKind base = synthesis_kind(kind);
  SyncollInstance instance;
  instance.collective = sccl_collective(base, P, chunks, root);
  instance.bandwidth = inverted(kind) ? reversed(model) : model;
  instance.steps = steps;
  instance.rounds = rounds;
  InstanceResult result = solve_sccl_instance(instance, options);
  if (result.algorithm) {
    if (inverted(kind)) result.algorithm = invert(*result.algorithm);
    result.algorithm->name = "sccl_" + to_string(kind) + "_c" + std::to_string(chunks) + "_s" +
                             std::to_string(steps) + "_r" + std::to_string(rounds);
    result.algorithm->topology = model.name;
  }
  return result;
}

Ratio make_ratio(int64_t num, int64_t den) {
  CCSYNTH_CHECK(den > 0) << "ratio with denominator " << den;
  const int64_t g = std::max<int64_t>(1, gcd64(num < 0 ? -num : num, den));
  return {num / g, den / g};
}

bool operator<(const Ratio& a, const Ratio& b) { return a.num * b.den < b.num * a.den; }

int sccl_latency_lower_bound(CollectiveKind kind, const BandwidthModel& model, int root) {
  check_kind(kind);
  const CollectiveKind base = synthesis_kind(kind);
  const BandwidthModel m = inverted(kind) ? reversed(model) : model;
  const Collective c = make_collective(base, model.num_ranks, 1, root);
  std::vector<std::vector<int>> dist(model.num_ranks);
  for (int r = 0; r < model.num_ranks; ++r) dist[r] = m.hop_distances_from(r);
  int bound = 0;
  for (int k = 0; k < c.num_chunks(); ++k) {
    const std::vector<int> pre = c.pre_ranks(k);
    for (int p : c.post_ranks(k)) {
      int nearest = -1;
      for (int q : pre) {
        if (dist[q][p] >= 0 && (nearest < 0 || dist[q][p] < nearest)) nearest = dist[q][p];
      }
      if (nearest < 0) {
        throw UserError("", "topology",
                        "rank " + std::to_string(p) + " cannot be reached by chunk " +
                            std::to_string(k) + " in " + model.name);
      }
      bound = std::max(bound, nearest);
    }
  }
  return kind == CollectiveKind::kAllReduce ? 2 * bound : bound;
}

Ratio sccl_bandwidth_lower_bound(CollectiveKind kind, const BandwidthModel& model, int root) {
  check_kind(kind);
  const int P = model.num_ranks;
  const CollectiveKind base = synthesis_kind(kind);
  const BandwidthModel m = inverted(kind) ? reversed(model) : model;
  const Collective c = make_collective(base, P, 1, root);  // sccl_chunk_unit(base) paper chunks
  const std::vector<std::pair<int, int>> edges = m.edges();
  // Per edge: the smallest b of the constraints containing it; per rank: the smallest b of a
  // constraint containing all of its incoming (outgoing) edges, else the sum of its edges.
  std::map<std::pair<int, int>, int> edge_cap;
  for (const auto& e : edges) edge_cap[e] = std::numeric_limits<int>::max();
  std::vector<int> in_cap(P, std::numeric_limits<int>::max()), out_cap = in_cap;
  for (const BandwidthConstraint& bc : m.constraints) {
    if (bc.chunks_per_round <= 0) continue;
    std::set<std::pair<int, int>> in_l(bc.edges.begin(), bc.edges.end());
    for (const auto& e : bc.edges) {
      auto it = edge_cap.find(e);
      if (it != edge_cap.end()) it->second = std::min(it->second, bc.chunks_per_round);
    }
    for (int r = 0; r < P; ++r) {
      bool all_in = true, all_out = true, any_in = false, any_out = false;
      for (const auto& e : edges) {
        const bool member = in_l.count(e) > 0;
        if (e.second == r) {
          any_in = any_in || member;
          all_in = all_in && member;
        }
        if (e.first == r) {
          any_out = any_out || member;
          all_out = all_out && member;
        }
      }
      if (all_in && any_in) in_cap[r] = std::min(in_cap[r], bc.chunks_per_round);
      if (all_out && any_out) out_cap[r] = std::min(out_cap[r], bc.chunks_per_round);
    }
  }
  // Rank sets X: all of them for small P, else singletons and their complements.
  std::vector<std::vector<uint8_t>> sets;
  if (P <= 16) {
    for (uint32_t mask = 1; mask + 1 < (1u << P); ++mask) {
      std::vector<uint8_t> s(P);
      for (int r = 0; r < P; ++r) s[r] = (mask >> r) & 1u;
      sets.push_back(std::move(s));
    }
  } else {
    for (int r = 0; r < P; ++r) {
      std::vector<uint8_t> s(P, 0);
      s[r] = 1;
      sets.push_back(s);
      for (auto& v : s) v = !v;
      sets.push_back(std::move(s));
    }
  }
  std::vector<std::vector<int>> pre(c.num_chunks()), post(c.num_chunks());
  for (int k = 0; k < c.num_chunks(); ++k) {
    pre[k] = c.pre_ranks(k);
    post[k] = c.post_ranks(k);
  }
  Ratio best = make_ratio(0, 1);
  for (const auto& in_set : sets) {
    int64_t need = 0;  // chunks with a post rank in X and no pre rank in X (SCCL sec. 2.4)
    for (int k = 0; k < c.num_chunks(); ++k) {
      const bool has_pre =
          std::any_of(pre[k].begin(), pre[k].end(), [&](int r) { return in_set[r]; });
      const bool needs =
          std::any_of(post[k].begin(), post[k].end(), [&](int r) { return in_set[r]; });
      if (needs && !has_pre) ++need;
    }
    if (need == 0) continue;
    const int64_t cap = capacity_into(m, edges, edge_cap, in_cap, out_cap, in_set);
    if (cap == 0) continue;  // unreachable: sccl_latency_lower_bound reports it
    // R >= need / cap rounds for sccl_chunk_unit(base) paper chunks: R/C >= need / (cap * unit).
    const Ratio r = make_ratio(need, cap * sccl_chunk_unit(base, P));
    if (best < r) best = r;
  }
  if (kind == CollectiveKind::kAllReduce) {
    // Two halves of R/2 rounds each over the allreduce's C = P * c chunks.
    best = make_ratio(best.num * 2, best.den * P);
  }
  return best;
}

ParetoResult synthesize_sccl_pareto(CollectiveKind kind, const BandwidthModel& model,
                                    const ParetoOptions& options, int root,
                                    const std::function<void(const ParetoAttempt&)>& progress) {
  check_kind(kind);
  if (options.k < 0) throw UserError("", "k", "must be non-negative");
  const auto start = Clock::now();
  ParetoResult result;
  result.latency_bound = sccl_latency_lower_bound(kind, model, root);
  result.bandwidth_bound = sccl_bandwidth_lower_bound(kind, model, root);
  const Ratio bl = result.bandwidth_bound;
  const int P = model.num_ranks;
  const int unit = sccl_chunk_unit(kind, P);
  const int max_steps = options.max_steps > 0 ? options.max_steps : result.latency_bound + 16;
  std::optional<Ratio> best;
  bool timed_out = false;
  bool done = false;
  for (int S = std::max(1, result.latency_bound); S <= max_steps && !done; ++S) {
    // Candidates (R, C): S <= R <= S + k, b_l <= R/C < best (SCCL algorithm 1, line 6).
    std::vector<std::tuple<Ratio, int, int>> candidates;  // (R/C, C, R)
    for (int R = S; R <= S + options.k; ++R) {
      const int64_t max_c = bl.num > 0 ? (static_cast<int64_t>(R) * bl.den) / bl.num : R;
      for (int64_t C = unit; C <= max_c; C += unit) {
        if (options.max_chunks > 0 && C > options.max_chunks) break;
        if (!valid_shape(kind, P, static_cast<int>(C), S, R)) continue;
        const Ratio ratio = make_ratio(R, C);
        if (ratio < bl || (best && !(ratio < *best))) continue;
        candidates.emplace_back(ratio, static_cast<int>(C), R);
      }
    }
    std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
      if (std::get<0>(a) < std::get<0>(b)) return true;
      if (std::get<0>(b) < std::get<0>(a)) return false;
      return std::get<1>(a) < std::get<1>(b);
    });
    for (const auto& [ratio, C, R] : candidates) {
      SolveOptions solve = options.solve;
      if (options.time_limit_s > 0) {
        const double left = options.time_limit_s - seconds_since(start);
        if (left <= 0) {
          timed_out = true;
          done = true;
          break;
        }
        solve.time_limit_s = solve.time_limit_s > 0 ? std::min(solve.time_limit_s, left) : left;
      }
      const auto t = Clock::now();
      InstanceResult r = synthesize_sccl(kind, model, C, S, R, root, solve);
      ParetoAttempt attempt{C, S, R, r.status, seconds_since(t)};
      result.attempts.push_back(attempt);
      if (progress) progress(attempt);
      if (r.status == SynthStatus::kTimedOut) {
        timed_out = true;
        continue;
      }
      if (!r.algorithm) continue;
      ParetoPoint point;
      point.chunks = C;
      point.steps = S;
      point.rounds = R;
      point.latency_optimal = result.frontier.empty() && !timed_out;
      point.bandwidth_optimal = ratio == bl;
      point.seconds = attempt.seconds;
      point.algorithm = std::move(*r.algorithm);
      result.frontier.push_back(std::move(point));
      best = ratio;
      if (ratio == bl) done = true;  // algorithm 1, line 11
      break;
    }
  }
  result.seconds = seconds_since(start);
  if (best && *best == bl) {
    result.status = timed_out ? SynthStatus::kFeasible : SynthStatus::kOptimal;
  } else {
    result.status = timed_out ? SynthStatus::kTimedOut : SynthStatus::kFeasible;
  }
  return result;
}

InstanceResult synthesize_sccl_least_steps(
    CollectiveKind kind, const BandwidthModel& model, int chunks, int extra_rounds, int max_steps,
    int root, const SolveOptions& options,
    const std::function<void(int, const InstanceResult&)>& progress) {
  check_kind(kind);
  if (extra_rounds < 0) throw UserError("", "rounds", "extra rounds must be non-negative");
  sccl_collective(kind, model.num_ranks, chunks, root);  // validates C
  InstanceResult last;
  last.status = SynthStatus::kInfeasible;
  for (int S = std::max(1, sccl_latency_lower_bound(kind, model, root)); S <= max_steps; ++S) {
    if (!valid_shape(kind, model.num_ranks, chunks, S, S + extra_rounds)) continue;
    last = synthesize_sccl(kind, model, chunks, S, S + extra_rounds, root, options);
    if (progress) progress(S, last);
    if (last.algorithm || last.status == SynthStatus::kTimedOut) return last;
  }
  return last;
}

}  // namespace ccsynth::synth
