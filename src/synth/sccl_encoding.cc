// The SMT encoding of a SYNCOLL instance (SCCL sec. 3.4) as a Boolean model of the solvers
// module (solvers/smt.h), decided by Z3.
//
// SCCL encodes time_{c,n} (the step chunk c reaches rank n) as an integer and snd_{n,c,n'} as a
// Boolean, and then needs the products snd_{n,c,n'} AND time_{c,n'} = s inside the per-step
// bandwidth sums (C5). We expand that product once: x_{c,n,n',s} = snd_{n,c,n'} AND
// time_{c,n'} = s, i.e. "rank n sends chunk c to n' in step s" (1-based s, arriving at its end).
// Then, with all sums being cardinality / pseudo-Boolean constraints over Booleans, Z3's SAT core
// with native cardinality reasoning (SmtEngine::kSatCore) decides the instance:
//   C1  pre: no variable ever delivers c to a pre rank of c (it holds c at time 0);
//   C2+C3  every post rank not in pre receives c exactly once, every other rank at most once
//       (SCCL's "does not redundantly receive the chunk more than once");
//   C4  x_{c,n,n',s} -> n received c in a step t < s (or n is a pre rank of c);
//   C5  per step s and (L, b) in B: sum of x_{c,n,n',s} over c and (n,n') in L <= b * r_s, with
//       r_s = 1 + (number of true e_{s,j}), e_{s,1} >= e_{s,2} >= ... (unary rounds);
//   C6  sum_s r_s = R, i.e. sum of all e_{s,j} = R - S.
// Pruning that keeps satisfiability (removing useless sends from a solution keeps it valid):
// x_{c,n,n',s} exists only if n can hold c by step s-1 (hop distance from c's pre ranks) and n'
// can still pass c on to a post rank missing it within S - s steps; a relay that is no post rank
// must forward what it receives.

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "ccsynth/core/error.h"
#include "ccsynth/core/graph.h"
#include "ccsynth/core/timing.h"
#include "ccsynth/solvers/smt.h"
#include "ccsynth/synth/sccl.h"

namespace ccsynth::synth {

namespace {

using solvers::Lit;
using solvers::SmtModel;
using Clock = std::chrono::steady_clock;

constexpr int kFar = 1 << 20;

// Multi-source hop distances over directed edges (forward or backward); kFar where
// unreachable.
std::vector<int> bfs(int num_ranks, const std::vector<std::vector<int>>& adjacency,
                     const std::vector<int>& sources) {
  std::vector<int> dist = breadth_first_search(adjacency, sources).distance;
  dist.resize(num_ranks, -1);
  for (int& d : dist) {
    if (d < 0) d = kFar;
  }
  return dist;
}

// The Boolean encoding of one instance into an SmtModel; send variables are indexed
// (chunk, edge, step).
class Encoding {
 public:
  Encoding(const SyncollInstance& instance, const SolveOptions& options, SmtModel& model)
      : in_(instance), options_(options), model_(model) {
    P_ = in_.collective.num_ranks;
    G_ = in_.collective.num_chunks();
    S_ = in_.steps;
    edges_ = in_.bandwidth.edges();
    E_ = static_cast<int>(edges_.size());
    out_edges_.assign(P_, {});
    in_edges_.assign(P_, {});
    std::vector<std::vector<int>> fwd(P_), bwd(P_);
    for (int e = 0; e < E_; ++e) {
      out_edges_[edges_[e].first].push_back(e);
      in_edges_[edges_[e].second].push_back(e);
      fwd[edges_[e].first].push_back(edges_[e].second);
      bwd[edges_[e].second].push_back(edges_[e].first);
    }
    fwd_ = std::move(fwd);
    bwd_ = std::move(bwd);
  }

  // Builds every constraint into the model; false when the instance is trivially UNSAT (a post
  // rank no variable can reach).
  bool build() {
    make_send_variables();
    if (!add_receive_constraints()) return false;
    add_causality_constraints();
    make_round_variables();
    add_bandwidth_constraints();
    add_ingress_bounds();
    if (options_.break_symmetry) add_symmetry_breaking();
    return true;
  }

  Algorithm extract(const solvers::SmtResult& model) const {
    Algorithm a;
    a.collective = in_.collective;
    a.topology = in_.bandwidth.name;
    a.name = "sccl_" + in_.collective.name + "_s" + std::to_string(S_) + "_r" +
             std::to_string(in_.rounds);
    for (int c = 0; c < G_; ++c) {
      for (int e = 0; e < E_; ++e) {
        for (int s = 1; s <= S_; ++s) {
          const int v = var(c, e, s);
          if (v < 0 || !model.value(vars_[v])) continue;
          ChunkOp op;
          op.chunk = c;
          op.src = edges_[e].first;
          op.dst = edges_[e].second;
          op.step = s - 1;
          a.ops.push_back(op);
        }
      }
    }
    for (int s = 0; s < S_; ++s) {
      int r = 1;
      for (Lit e : rounds_[s]) r += model.value(e) ? 1 : 0;
      a.rounds_per_step.push_back(r);
    }
    sort_ops(a);
    return a;
  }

 private:
  int var(int c, int e, int s) const {
    return index_[(static_cast<size_t>(c) * E_ + e) * S_ + (s - 1)];
  }

  void make_send_variables() {
    index_.assign(static_cast<size_t>(G_) * E_ * S_, -1);
    is_pre_.assign(static_cast<size_t>(G_) * P_, 0);
    is_post_.assign(static_cast<size_t>(G_) * P_, 0);
    for (int c = 0; c < G_; ++c) {
      const std::vector<int> pre = in_.collective.pre_ranks(c);
      const std::vector<int> post = in_.collective.post_ranks(c);
      for (int r : pre) is_pre_[c * P_ + r] = 1;
      std::vector<int> missing;  // post ranks that must receive c
      for (int r : post) {
        is_post_[c * P_ + r] = 1;
        if (!is_pre_[c * P_ + r]) missing.push_back(r);
      }
      if (missing.empty()) continue;
      const std::vector<int> from_pre = bfs(P_, fwd_, pre);
      const std::vector<int> to_missing = bfs(P_, bwd_, missing);
      for (int e = 0; e < E_; ++e) {
        const auto [n, m] = edges_[e];
        if (is_pre_[c * P_ + m]) continue;  // C1: pre ranks hold c from time 0
        for (int s = 1; s <= S_; ++s) {
          if (from_pre[n] > s - 1) continue;  // n cannot hold c before step s
          if (options_.prune_relays && to_missing[m] > S_ - s) continue;  // useless delivery
          index_[(static_cast<size_t>(c) * E_ + e) * S_ + (s - 1)] = static_cast<int>(vars_.size());
          vars_.push_back(model_.add_bool("x_" + std::to_string(c) + "_" + std::to_string(n) + "_" +
                                          std::to_string(m) + "_" + std::to_string(s)));
        }
      }
    }
  }

  std::vector<Lit> incoming(int c, int rank, int min_step, int max_step) const {
    std::vector<Lit> out;
    for (int e : in_edges_[rank]) {
      for (int s = std::max(1, min_step); s <= std::min(S_, max_step); ++s) {
        const int v = var(c, e, s);
        if (v >= 0) out.push_back(vars_[v]);
      }
    }
    return out;
  }

  std::vector<Lit> outgoing(int c, int rank, int min_step) const {
    std::vector<Lit> out;
    for (int e : out_edges_[rank]) {
      for (int s = std::max(1, min_step); s <= S_; ++s) {
        const int v = var(c, e, s);
        if (v >= 0) out.push_back(vars_[v]);
      }
    }
    return out;
  }

  // have(c, n, s): rank n holds c at the end of step s (s = 0: the precondition). An order
  // encoding of SCCL's integer time_{c,n}: have(c,n,s) <=> time_{c,n} <= s.
  Lit have(int c, int n, int s) const {
    if (is_pre_[c * P_ + n]) return Lit::constant(true);
    if (s <= 0) return Lit::constant(false);
    const int h = have_index_[(static_cast<size_t>(c) * P_ + n) * S_ + (s - 1)];
    return h < 0 ? Lit::constant(false) : haves_[h];
  }

  // C2 + C3: post ranks missing c receive it exactly once, other ranks at most once; have()
  // changes from false to true exactly in the step of that receive.
  bool add_receive_constraints() {
    have_index_.assign(static_cast<size_t>(G_) * P_ * S_, -1);
    for (int c = 0; c < G_; ++c) {
      for (int r = 0; r < P_; ++r) {
        if (is_pre_[c * P_ + r]) continue;
        const std::vector<Lit> in = incoming(c, r, 1, S_);
        if (is_post_[c * P_ + r] && in.empty()) return false;
        if (in.empty()) continue;
        if (in.size() > 1) model_.add_at_most(in, 1);
        for (int s = 1; s <= S_; ++s) {
          have_index_[(static_cast<size_t>(c) * P_ + r) * S_ + (s - 1)] =
              static_cast<int>(haves_.size());
          haves_.push_back(model_.add_bool("h_" + std::to_string(c) + "_" + std::to_string(r) +
                                           "_" + std::to_string(s)));
        }
        for (int s = 1; s <= S_; ++s) add_have_step(c, r, s);
        if (is_post_[c * P_ + r]) model_.add_clause({have(c, r, S_)});  // C2
      }
    }
    return true;
  }

  // have(c, r, s) is have(c, r, s - 1) or a receive in step s, and a receive in step s finds
  // have(c, r, s - 1) false.
  void add_have_step(int c, int r, int s) {
    const Lit before = have(c, r, s - 1);
    const Lit after = have(c, r, s);
    model_.add_implies(before, after);
    std::vector<Lit> cause = {~after, before};  // after -> (before or some receive now)
    for (Lit now : incoming(c, r, s, s)) {
      cause.push_back(now);
      model_.add_implies(now, after);
      model_.add_implies(now, ~before);
    }
    model_.add_clause(cause);
  }

  // C4 (a sender holds c before it sends) and, for non-post relays, forwarding.
  void add_causality_constraints() {
    for (int c = 0; c < G_; ++c) {
      for (int e = 0; e < E_; ++e) {
        const auto [n, m] = edges_[e];
        for (int s = 1; s <= S_; ++s) {
          const int v = var(c, e, s);
          if (v < 0) continue;
          const Lit x = vars_[v];
          if (!is_pre_[c * P_ + n]) model_.add_implies(x, have(c, n, s - 1));  // C4
          if (options_.prune_relays && !is_post_[c * P_ + m]) {
            std::vector<Lit> forward = outgoing(c, m, s + 1);  // x -> some later send by m
            forward.push_back(~x);
            model_.add_clause(forward);
          }
        }
      }
    }
  }

  // r_s = 1 + sum_j e_{s,j} (unary, ordered), C6: sum of all e_{s,j} = R - S.
  void make_round_variables() {
    const int extra = in_.rounds - S_;
    rounds_.assign(S_, {});
    std::vector<Lit> all;
    for (int s = 0; s < S_; ++s) {
      for (int j = 0; j < extra; ++j) {
        rounds_[s].push_back(model_.add_bool("r_" + std::to_string(s) + "_" + std::to_string(j)));
        all.push_back(rounds_[s].back());
        if (j > 0) model_.add_implies(rounds_[s][j], rounds_[s][j - 1]);
      }
    }
    if (extra > 0) {
      model_.add_at_most(all, extra);
      model_.add_at_least(all, extra);
    }
  }

  // C5 for every step and every (L, b) in B.
  void add_bandwidth_constraints() {
    std::vector<std::vector<int>> edge_index(P_, std::vector<int>(P_, -1));
    for (int e = 0; e < E_; ++e) edge_index[edges_[e].first][edges_[e].second] = e;
    const int extra = in_.rounds - S_;
    for (const BandwidthConstraint& bc : in_.bandwidth.constraints) {
      if (bc.chunks_per_round <= 0) continue;  // such edges are not in E: no variables
      std::vector<int> es;
      for (const auto& [a, b] : bc.edges) {
        if (a >= 0 && a < P_ && b >= 0 && b < P_ && edge_index[a][b] >= 0) {
          es.push_back(edge_index[a][b]);
        }
      }
      for (int s = 1; s <= S_; ++s) {
        std::vector<Lit> sends;
        for (int c = 0; c < G_; ++c) {
          for (int e : es) {
            const int v = var(c, e, s);
            if (v >= 0) sends.push_back(vars_[v]);
          }
        }
        const int b = bc.chunks_per_round;
        if (static_cast<int>(sends.size()) <= b) continue;  // r_s >= 1 makes it hold
        if (extra == 0) {
          model_.add_at_most(sends, b);
          continue;
        }
        // sum x + b * sum_j not(e_{s,j}) <= b * (1 + extra)  <=>  sum x <= b * r_s.
        std::vector<Lit> terms = sends;
        std::vector<int> coeffs(sends.size(), 1);
        for (Lit e : rounds_[s - 1]) {
          terms.push_back(~e);
          coeffs.push_back(b);
        }
        model_.add_pb_le(terms, coeffs, b * (1 + extra));
      }
    }
  }

  // Redundant per-rank ingress bounds that strengthen propagation: with cap(r) the chunks per
  // round r can receive (SCCL sec. 2.4's argument) and need(r) the chunks r must receive,
  // recv(r, s) <= cap * r_s and, since the other steps take at most cap * (R - r_s),
  // recv(r, s) >= need - cap * (R - r_s), i.e. recv + cap * sum_j !e_{s,j} >= need - cap*(S-1).
  void add_ingress_bounds() {
    std::map<std::pair<int, int>, int> edge_cap;
    for (const BandwidthConstraint& bc : in_.bandwidth.constraints) {
      for (const auto& e : bc.edges) {
        auto it = edge_cap.find(e);
        if (it == edge_cap.end()) {
          edge_cap[e] = bc.chunks_per_round;
        } else {
          it->second = std::min(it->second, bc.chunks_per_round);
        }
      }
    }
    const int extra = in_.rounds - S_;
    for (int r = 0; r < P_; ++r) {
      int64_t cap = 0;
      for (int e : in_edges_[r]) cap += edge_cap[edges_[e]];
      int64_t need = 0;
      for (int c = 0; c < G_; ++c) need += is_post_[c * P_ + r] && !is_pre_[c * P_ + r];
      if (cap <= 0) continue;
      for (int s = 1; s <= S_; ++s) {
        std::vector<Lit> terms;
        std::vector<int> coeffs;
        for (int c = 0; c < G_; ++c) {
          for (int e : in_edges_[r]) {
            const int v = var(c, e, s);
            if (v < 0) continue;
            terms.push_back(vars_[v]);
            coeffs.push_back(1);
          }
        }
        if (terms.empty()) continue;
        for (Lit e : rounds_[s - 1]) {
          terms.push_back(~e);
          coeffs.push_back(static_cast<int>(cap));
        }
        if (static_cast<int64_t>(terms.size()) - extra > cap) {
          model_.add_pb_le(terms, coeffs, static_cast<int>(cap * (1 + extra)));
        }
        const int64_t lower = need - cap * (S_ - 1);
        if (lower > 0) model_.add_pb_ge(terms, coeffs, static_cast<int>(lower));
      }
    }
  }

  // Chunks with the same pre and post relations are interchangeable: permuting them maps
  // solutions to solutions. So some solution has their send vectors (in (step, edge) order)
  // lexicographically non-increasing; we require it of consecutive equal chunks (lex-leader).
  void add_symmetry_breaking() {
    std::map<std::pair<std::vector<int>, std::vector<int>>, std::vector<int>> classes;
    for (int c = 0; c < G_; ++c) {
      classes[{in_.collective.pre_ranks(c), in_.collective.post_ranks(c)}].push_back(c);
    }
    for (const auto& [key, chunks] : classes) {
      for (size_t i = 0; i + 1 < chunks.size(); ++i) add_lex_geq(chunks[i], chunks[i + 1]);
    }
  }

  // vector(a) >=lex vector(b): eq_k says the first k entries agree.
  void add_lex_geq(int a, int b) {
    Lit eq = Lit::constant(true);
    int k = 0;
    for (int s = 1; s <= S_; ++s) {
      for (int e = 0; e < E_; ++e) {
        const int va = var(a, e, s), vb = var(b, e, s);
        if (va < 0 || vb < 0) continue;
        const Lit x = vars_[va];
        const Lit y = vars_[vb];
        model_.add_clause({~eq, x, ~y});  // eq -> (x >= y)
        const Lit next = model_.add_bool("q_" + std::to_string(a) + "_" + std::to_string(k++));
        add_equal_prefix(next, eq, x, y);
        eq = next;
      }
    }
  }

  // next <-> (eq and (x == y)), as clauses.
  void add_equal_prefix(Lit next, Lit eq, Lit x, Lit y) {
    model_.add_implies(next, eq);
    model_.add_clause({~next, ~x, y});
    model_.add_clause({~next, x, ~y});
    model_.add_clause({~eq, ~x, ~y, next});
    model_.add_clause({~eq, x, y, next});
  }

  const SyncollInstance& in_;
  const SolveOptions& options_;
  SmtModel& model_;
  int P_ = 0, G_ = 0, S_ = 0, E_ = 0;
  std::vector<std::pair<int, int>> edges_;
  std::vector<std::vector<int>> out_edges_, in_edges_, fwd_, bwd_;
  std::vector<uint8_t> is_pre_, is_post_;
  std::vector<int> index_;
  std::vector<Lit> vars_;  // send variables x_{c,n,n',s}
  std::vector<int> have_index_;
  std::vector<Lit> haves_;
  std::vector<std::vector<Lit>> rounds_;  // e_{s,j}
};

void check_instance(const SyncollInstance& in) {
  if (in.collective.combining) {
    throw UserError("", "collective",
                    "SCCL instances are non-combining; synthesize " + in.collective.name +
                        " through synthesize_sccl() (inversion, SCCL sec. 3.5)");
  }
  if (in.steps < 1) throw UserError("", "steps", "must be at least 1");
  if (in.rounds < in.steps) {
    throw UserError("", "rounds", "must be at least the number of steps (every step has a round)");
  }
  if (in.bandwidth.num_ranks != in.collective.num_ranks) {
    throw UserError("", "topology",
                    "has " + std::to_string(in.bandwidth.num_ranks) + " ranks, the collective " +
                        std::to_string(in.collective.num_ranks));
  }
}

}  // namespace

InstanceResult solve_sccl_instance(const SyncollInstance& instance, const SolveOptions& options) {
  check_instance(instance);
  InstanceResult result;
  const auto start = Clock::now();
  SmtModel model;
  Encoding encoding(instance, options, model);
  const bool possible = encoding.build();
  result.variables = model.num_vars();
  result.constraints = model.num_constraints();
  result.encode_s = seconds_since(start);
  if (!possible) {
    result.status = SynthStatus::kInfeasible;
    return result;
  }
  solvers::SmtOptions smt;
  smt.time_limit_s = options.time_limit_s;
  smt.engine = options.use_sat_core ? solvers::SmtEngine::kSatCore : solvers::SmtEngine::kSmtCore;
  const solvers::SmtResult answer = solvers::solve_smt(model, smt);
  result.encode_s += answer.build_s;  // building our model and handing it to the solver
  result.solve_s = answer.solve_s;
  if (answer.status == solvers::SmtStatus::kSat) {
    result.status = SynthStatus::kOptimal;
    result.algorithm = encoding.extract(answer);
  } else if (answer.status == solvers::SmtStatus::kUnsat) {
    result.status = SynthStatus::kInfeasible;
  } else {
    result.status = SynthStatus::kTimedOut;
  }
  return result;
}

}  // namespace ccsynth::synth
