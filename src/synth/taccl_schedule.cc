// Stages 2 and 3 of TACCL (appendix B.2-B.3): heuristic ordering by greedy list scheduling and
// the contiguity / exact scheduling MILP, plus the conversion of a schedule into an Algorithm.

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/solvers/milp.h"
#include "ccsynth/synth/taccl.h"
#include "taccl_detail.h"

namespace ccsynth::synth {

namespace {

// Topological order of the transfer DAG (preds first).
std::vector<int> topological_order(const std::vector<Transfer>& transfers) {
  const int n = static_cast<int>(transfers.size());
  std::vector<int> indegree(n, 0);
  std::vector<std::vector<int>> succ(n);
  for (int t = 0; t < n; ++t) {
    for (int p : transfers[t].preds) {
      succ[p].push_back(t);
      ++indegree[t];
    }
  }
  std::vector<int> order;
  for (int t = 0; t < n; ++t) {
    if (indegree[t] == 0) order.push_back(t);
  }
  for (size_t i = 0; i < order.size(); ++i) {
    for (int s : succ[order[i]]) {
      if (--indegree[s] == 0) order.push_back(s);
    }
  }
  CCSYNTH_CHECK(static_cast<int>(order.size()) == n) << "transfer dependencies form a cycle";
  return order;
}

// Resource indices of a transfer: its link's lane slots and its switch ports.
struct Resources {
  std::vector<int> slot_base;                   // link -> first slot
  std::vector<int> slot_link;                   // slot -> link
  std::map<std::pair<int, int>, int> send_port;  // (switch, port) -> index; ranks sharing a
                                                 // port share its index
  std::map<std::pair<int, int>, int> recv_port;

  explicit Resources(const LogicalTopology& lt) {
    for (size_t l = 0; l < lt.links.size(); ++l) {
      slot_base.push_back(static_cast<int>(slot_link.size()));
      for (int lane = 0; lane < lt.links[l].lanes; ++lane) slot_link.push_back(static_cast<int>(l));
      if (lt.links[l].port >= 0) {
        const LogicalLink& link = lt.links[l];
        send_port.try_emplace({link.port, link.send_port}, static_cast<int>(send_port.size()));
        recv_port.try_emplace({link.port, link.recv_port}, static_cast<int>(recv_port.size()));
      }
    }
  }
};

}  // namespace

namespace {

// Inter-node lanes where merging can pay off: alpha is not negligible next to a chunk's beta time.
bool mergeable(const LogicalLink& link, double chunk_bytes, const TacclOptions& options) {
  return options.contiguity && link.internode &&
         link.alpha_us >= options.merge_min_alpha_share *
                              transfer_us(link.beta_us_per_mb, chunk_bytes);
}

// Earliest times of a schedule with fixed lane/port orders and merge groups, processing groups
// in `sequence` (group leaders). Returns false when a group depends on one not yet timed.
bool retime(const std::vector<Transfer>& transfers, const LogicalTopology& lt, double chunk_bytes,
            const std::vector<int>& lane_prev, const std::vector<std::vector<int>>& port_prev,
            const std::vector<int>& sequence, const std::vector<std::vector<int>>& members,
            Schedule& s) {
  std::fill(s.arrive_us.begin(), s.arrive_us.end(), -1.0);
  s.makespan_us = 0.0;
  for (int leader : sequence) {
    const auto& group = members[leader];
    double send = 0.0;
    auto need = [&](int t) {
      if (t < 0) return true;
      if (s.arrive_us[t] < 0) return false;
      send = std::max(send, s.arrive_us[t]);
      return true;
    };
    for (int t : group) {
      for (int p : transfers[t].preds) {
        if (!need(p)) return false;
      }
      if (s.group[lane_prev[t] < 0 ? t : lane_prev[t]] != leader && !need(lane_prev[t])) return false;
      for (int q : port_prev[t]) {
        if (!need(q)) return false;
      }
    }
    const LogicalLink& link = lt.links[transfers[leader].link];
    const double finish = send + link.alpha_us +
                          transfer_us(link.beta_us_per_mb, chunk_bytes) * group.size();
    for (int t : group) {
      s.send_us[t] = send;
      s.arrive_us[t] = finish;
    }
    s.makespan_us = std::max(s.makespan_us, finish);
  }
  return true;
}

// Greedy contiguity: merges a transfer into the group of its lane predecessor when that keeps
// the makespan (TACCL's alpha saving, tried in stage 2 so that stage 3 starts from it).
void merge_greedily(const std::vector<Transfer>& transfers, const LogicalTopology& lt,
                    double chunk_bytes, const TacclOptions& options, Ordering& out) {
  const int n = static_cast<int>(transfers.size());
  std::vector<int> lane_prev(n, -1);
  std::vector<std::vector<int>> port_prev(n);
  std::vector<std::pair<int, int>> candidates;
  for (size_t slot = 0; slot < out.lane_order.size(); ++slot) {
    const auto& order = out.lane_order[slot];
    const bool can = mergeable(lt.links[out.lane_slot_link[slot]], chunk_bytes, options);
    for (size_t i = 1; i < order.size(); ++i) {
      lane_prev[order[i]] = order[i - 1];
      if (can) candidates.emplace_back(order[i - 1], order[i]);
    }
  }
  std::vector<int> adjacent(n, 0);  // port orders in which the lane predecessor is adjacent
  for (const auto* orders : {&out.port_send_order, &out.port_recv_order}) {
    for (const auto& order : *orders) {
      for (size_t i = 1; i < order.size(); ++i) {
        const int a = order[i - 1], b = order[i];
        if (transfers[a].link != transfers[b].link) port_prev[b].push_back(a);
        if (lane_prev[b] == a) ++adjacent[b];
      }
    }
  }
  if (candidates.empty()) return;
  Schedule& g = out.greedy;
  std::vector<int> sequence(n);
  std::iota(sequence.begin(), sequence.end(), 0);
  std::stable_sort(sequence.begin(), sequence.end(),
                   [&](int x, int y) { return g.send_us[x] < g.send_us[y]; });
  std::vector<std::vector<int>> members(n);
  for (int t = 0; t < n; ++t) members[t] = {t};
  Schedule trial = g;
  for (auto [a, b] : candidates) {
    const LogicalLink& link = lt.links[transfers[b].link];
    if (link.port >= 0 && adjacent[b] < 2) continue;  // another link's send sits in between
    const int leader = g.group[a];
    // Try b in a's group.
    trial.group = g.group;
    trial.group[b] = leader;
    auto trial_members = members[leader];
    trial_members.push_back(b);
    std::vector<int> trial_sequence;
    trial_sequence.reserve(n);
    for (int t : sequence) {
      if (t != b) trial_sequence.push_back(t);
    }
    std::swap(members[leader], trial_members);
    std::vector<int> saved_b = members[b];
    members[b].clear();
    const bool ok = retime(transfers, lt, chunk_bytes, lane_prev, port_prev, trial_sequence,
                           members, trial);
    if (ok && trial.makespan_us <= g.makespan_us * (1 + 1e-12)) {
      g = trial;
      sequence = std::move(trial_sequence);
    } else {
      std::swap(members[leader], trial_members);
      members[b] = saved_b;
    }
  }
}

}  // namespace

Ordering order_transfers(const std::vector<Transfer>& transfers, const LogicalTopology& lt,
                         const Sketch& sketch, double chunk_bytes, const TacclOptions& options) {
  const int n = static_cast<int>(transfers.size());
  const Resources res(lt);
  std::vector<double> lat(n);
  for (int t = 0; t < n; ++t) lat[t] = lt.links[transfers[t].link].lat_us(chunk_bytes);
  // B.2 heuristics: longest path still ahead (tail) and path already behind (head).
  const std::vector<int> topo = topological_order(transfers);
  std::vector<double> head(n, 0.0), tail(n, 0.0);
  std::vector<std::vector<int>> succ(n);
  for (int t : topo) {
    for (int p : transfers[t].preds) {
      head[t] = std::max(head[t], head[p] + lat[p]);
      succ[p].push_back(t);
    }
  }
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    double best = 0.0;
    for (int s : succ[*it]) best = std::max(best, tail[s]);
    tail[*it] = lat[*it] + best;
  }

  Ordering out;
  out.lane_order.resize(res.slot_link.size());
  out.lane_slot_link = res.slot_link;
  out.port_send_order.resize(res.send_port.size());
  out.port_recv_order.resize(res.recv_port.size());
  Schedule& g = out.greedy;
  g.send_us.assign(n, 0.0);
  g.arrive_us.assign(n, 0.0);
  g.lane.assign(n, 0);
  g.group.resize(n);
  std::iota(g.group.begin(), g.group.end(), 0);

  std::vector<double> slot_free(res.slot_link.size(), 0.0);
  std::vector<double> send_free(res.send_port.size(), 0.0), recv_free(res.recv_port.size(), 0.0);
  std::vector<int> missing(n, 0);
  std::vector<double> ready_at(n, 0.0);
  std::vector<int> ready;
  for (int t = 0; t < n; ++t) {
    missing[t] = static_cast<int>(transfers[t].preds.size());
    if (missing[t] == 0) ready.push_back(t);
  }
  auto port_of = [&](const std::map<std::pair<int, int>, int>& ports, int sw, int port) {
    return sw < 0 ? -1 : ports.at({sw, port});
  };
  std::vector<int> base_of(n), sport(n), rport(n);
  for (int t = 0; t < n; ++t) {
    const LogicalLink& link = lt.links[transfers[t].link];
    base_of[t] = res.slot_base[transfers[t].link];
    sport[t] = port_of(res.send_port, link.port, link.send_port);
    rport[t] = port_of(res.recv_port, link.port, link.recv_port);
  }
  for (int done = 0; done < n; ++done) {
    CCSYNTH_CHECK(!ready.empty()) << "no transfer ready";
    int pick = -1, pick_lane = 0;
    double pick_est = 0.0;
    for (size_t i = 0; i < ready.size(); ++i) {
      const int t = ready[i];
      const LogicalLink& link = lt.links[transfers[t].link];
      const int base = base_of[t];
      int lane = 0;
      for (int k = 1; k < link.lanes; ++k) {
        if (slot_free[base + k] < slot_free[base + lane]) lane = k;
      }
      double est = std::max(ready_at[t], slot_free[base + lane]);
      if (sport[t] >= 0) est = std::max({est, send_free[sport[t]], recv_free[rport[t]]});
      if (pick >= 0 && est > pick_est + 1e-9) continue;
      bool better = pick < 0 || est < pick_est - 1e-9;
      if (!better && est <= pick_est + 1e-9) {
        const int q = pick;
        if (std::abs(tail[t] - tail[q]) > 1e-9) {
          better = tail[t] > tail[q];
        } else if (std::abs(head[t] - head[q]) > 1e-9) {
          better = head[t] < head[q];
        } else if (sketch.internode.enforce_ordering && link.internode &&
                   transfers[t].chunk != transfers[q].chunk) {
          better = transfers[t].chunk < transfers[q].chunk;
        } else {
          better = t < q;
        }
      }
      if (better) pick = t, pick_lane = lane, pick_est = est;
    }
    const Transfer& tr = transfers[pick];
    const LogicalLink& link = lt.links[tr.link];
    const int slot = res.slot_base[tr.link] + pick_lane;
    g.send_us[pick] = pick_est;
    g.arrive_us[pick] = pick_est + lat[pick];
    g.lane[pick] = pick_lane;
    g.makespan_us = std::max(g.makespan_us, g.arrive_us[pick]);
    slot_free[slot] = g.arrive_us[pick];
    out.lane_order[slot].push_back(pick);
    if (link.port >= 0) {
      const int sp = sport[pick], rp = rport[pick];
      send_free[sp] = recv_free[rp] = g.arrive_us[pick];
      out.port_send_order[sp].push_back(pick);
      out.port_recv_order[rp].push_back(pick);
    }
    *std::find(ready.begin(), ready.end(), pick) = ready.back();
    ready.pop_back();
    for (int s : succ[pick]) {
      ready_at[s] = std::max(ready_at[s], g.arrive_us[pick]);
      if (--missing[s] == 0) ready.push_back(s);
    }
  }
  merge_greedily(transfers, lt, chunk_bytes, options, out);
  return out;
}

namespace {

// An affine time expression var + constant (a transfer's finish time).
struct Affine {
  int var = -1;
  double constant = 0.0;
};

}  // namespace

Schedule schedule_transfers(const std::vector<Transfer>& transfers, const Ordering& ordering,
                            const LogicalTopology& lt, double chunk_bytes,
                            const TacclOptions& options, StageReport* report) {
  using solvers::Term;
  const int n = static_cast<int>(transfers.size());
  const Schedule& greedy = ordering.greedy;
  if (!options.contiguity) {
    for (int t = 0; t < n; ++t) {
      CCSYNTH_CHECK(greedy.group[t] == t) << "stage 2 merged sends although contiguity is off";
    }
  }
  const double ub = greedy.makespan_us * (1 + 1e-9) + 1e-9;  // no better schedule is later
  const double big_m = ub;
  solvers::MilpModel m;
  std::vector<double> start;  // MIP start, grown with the variables
  auto add_var = [&](double lb, double hi, bool integer, double obj, double initial) {
    const int v = m.add_var(lb, hi, integer, obj);
    start.push_back(initial);
    return v;
  };
  std::vector<double> lat(n), beta(n);
  std::vector<int> send(n);
  for (int t = 0; t < n; ++t) {
    const LogicalLink& link = lt.links[transfers[t].link];
    lat[t] = link.lat_us(chunk_bytes);
    beta[t] = transfer_us(link.beta_us_per_mb, chunk_bytes);
    send[t] = add_var(0.0, ub, false, 0.0, greedy.send_us[t]);
  }
  std::vector<Affine> finish(n);
  for (int t = 0; t < n; ++t) finish[t] = {send[t], lat[t]};
  // Contiguity (eq. 16-19) on inter-node lanes: y merges a transfer with its predecessor on the
  // lane; p is the running finish of the merged group, f the group's (shared) arrival.
  struct Merge {
    int slot, a, b, y;
  };
  std::vector<Merge> merges;
  std::vector<int> part(n, -1);
  for (size_t slot = 0; slot < ordering.lane_order.size(); ++slot) {
    const auto& order = ordering.lane_order[slot];
    const LogicalLink& link = lt.links[ordering.lane_slot_link[slot]];
    // Merging saves one alpha per chunk: skip lanes where alpha is negligible next to the
    // transfer time, which keeps the MILP small for large chunks.
    if (order.size() < 2 || !mergeable(link, chunk_bytes, options)) continue;
    for (size_t i = 0; i < order.size(); ++i) {
      const int t = order[i];
      // MIP start: the running finish inside the stage 2 merge group.
      int position = 1;
      for (size_t j = i; j > 0 && greedy.group[order[j - 1]] == greedy.group[t]; --j) ++position;
      part[t] = add_var(0.0, ub, false, 0.0,
                        greedy.send_us[t] + link.alpha_us +
                            transfer_us(link.beta_us_per_mb, chunk_bytes) * position);
      const int f = add_var(0.0, ub, false, 0.0, greedy.arrive_us[t]);
      m.add_ge({{part[t], 1.0}, {send[t], -1.0}}, lat[t]);  // eq. 17 for a group of one
      m.add_ge({{f, 1.0}, {part[t], -1.0}}, 0.0);           // eq. 18: arrival after the group
      finish[t] = {f, 0.0};
    }
    for (size_t i = 1; i < order.size(); ++i) {
      const bool together = greedy.group[order[i - 1]] == greedy.group[order[i]];
      merges.push_back({static_cast<int>(slot), order[i - 1], order[i],
                        add_var(0.0, 1.0, true, 0.0, together ? 1.0 : 0.0)});
    }
  }
  auto after = [&](int later, const Affine& earlier) {  // send[later] >= earlier
    m.add_ge({{send[later], 1.0}, {earlier.var, -1.0}}, earlier.constant);
  };
  // Dependencies: a chunk leaves a rank after it (and for reductions every part) arrived (eq. 4).
  for (int t = 0; t < n; ++t) {
    for (int p : transfers[t].preds) after(t, finish[p]);
  }
  // Strict bandwidth on every lane (eq. 19), with the contiguity alternative.
  std::map<std::pair<int, int>, int> merge_of;
  for (const Merge& mg : merges) merge_of[{mg.a, mg.b}] = mg.y;
  for (size_t slot = 0; slot < ordering.lane_order.size(); ++slot) {
    const auto& order = ordering.lane_order[slot];
    for (size_t i = 1; i < order.size(); ++i) {
      const int a = order[i - 1], b = order[i];
      auto it = merge_of.find({a, b});
      if (it == merge_of.end()) {
        after(b, finish[a]);
        continue;
      }
      const int y = it->second;
      const int fa = finish[a].var, fb = finish[b].var;
      m.add_ge({{send[b], 1.0}, {send[a], -1.0}}, 0.0);
      m.add_le({{send[b], 1.0}, {send[a], -1.0}, {y, big_m}}, big_m);        // eq. 16
      m.add_ge({{send[b], 1.0}, {part[a], -1.0}, {y, big_m}}, 0.0);          // eq. 19
      m.add_ge({{part[b], 1.0}, {part[a], -1.0}, {y, -big_m}}, beta[b] - big_m);  // eq. 17
      m.add_ge({{fa, 1.0}, {fb, -1.0}, {y, -big_m}}, -big_m);               // shared arrival
    }
  }
  // Valid inequalities that tighten the big-M relaxation of mergeable lanes: from the send of
  // its i-th transfer, a lane still needs one alpha per remaining group plus beta per remaining
  // chunk before its last transfer arrives (a group boundary is a merge variable at 0).
  std::map<int, int> merge_after;  // transfer -> y merging it with its lane successor
  for (const Merge& mg : merges) merge_after[mg.a] = mg.y;
  for (size_t slot = 0; slot < ordering.lane_order.size(); ++slot) {
    const auto& order = ordering.lane_order[slot];
    if (order.size() < 2 || !merge_after.count(order[0])) continue;
    const LogicalLink& link = lt.links[ordering.lane_slot_link[slot]];
    const int last = order.back();
    for (size_t i = 0; i + 1 < order.size(); ++i) {
      std::vector<Term> row = {{finish[last].var, 1.0}, {send[order[i]], -1.0}};
      double rhs = link.alpha_us + beta[last] * static_cast<double>(order.size() - i);
      for (size_t j = i; j + 1 < order.size(); ++j) {
        row.push_back({merge_after.at(order[j]), link.alpha_us});
        rhs += link.alpha_us;
      }
      m.add_ge(row, rhs);
    }
  }
  // One transfer at a time per switch port (eq. 20-21), in the stage 2 order.
  auto chain_ports = [&](const std::vector<std::vector<int>>& orders) {
    for (const auto& order : orders) {
      for (size_t i = 1; i < order.size(); ++i) {
        if (transfers[order[i - 1]].link == transfers[order[i]].link) continue;  // lane order
        after(order[i], finish[order[i - 1]]);
      }
    }
  };
  chain_ports(ordering.port_send_order);
  chain_ports(ordering.port_recv_order);
  // Objective (eq. 1-2): the last arrival.
  const int time = add_var(0.0, ub, false, 1.0, greedy.makespan_us);
  std::vector<bool> has_succ(n, false);
  for (const Transfer& t : transfers) {
    for (int p : t.preds) has_succ[p] = true;
  }
  for (int t = 0; t < n; ++t) {
    if (!has_succ[t]) m.add_ge({{time, 1.0}, {finish[t].var, -1.0}}, finish[t].constant);
  }

  solvers::MilpOptions mo;
  mo.time_limit_s = options.time_limit_s;
  mo.relative_gap = options.relative_gap;
  mo.stall_s = options.stall_s;
  mo.log_level = options.solver_log_level;
  mo.mip_start = start;
  const solvers::MilpResult r = solvers::solve_milp(m, mo);
  detail::report_milp_stage(report, "scheduling", r, m);
  if (!r.has_solution) {
    if (report) {
      report->status += " (greedy schedule used)";
      report->objective_us = greedy.makespan_us;
    }
    return greedy;
  }
  Schedule s;
  s.send_us.resize(n);
  s.arrive_us.resize(n);
  s.lane = greedy.lane;
  s.group.resize(n);
  std::iota(s.group.begin(), s.group.end(), 0);
  for (int t = 0; t < n; ++t) s.send_us[t] = r.values[send[t]];
  for (const Merge& mg : merges) {
    if (r.values[mg.y] > 0.5) s.group[mg.b] = s.group[mg.a];  // lane order: a is final already
  }
  for (int t = 0; t < n; ++t) {
    s.arrive_us[t] = r.values[finish[t].var] + finish[t].constant;
    s.makespan_us = std::max(s.makespan_us, s.arrive_us[t]);
  }
  // Members of a group share the send time of the group's first transfer.
  for (int t = 0; t < n; ++t) s.send_us[t] = s.send_us[s.group[t]];
  if (report) report->objective_us = s.makespan_us;
  return s;
}

Algorithm to_algorithm(const std::vector<Transfer>& transfers, const Schedule& schedule,
                       const Collective& collective, const std::string& name,
                       const std::string& topology_name) {
  const int n = static_cast<int>(transfers.size());
  Algorithm a;
  a.name = name;
  a.topology = topology_name;
  a.collective = collective;
  // Groups in send-time order; a group's step follows its members' dependencies and the order
  // of earlier groups on the same lane.
  std::map<int, std::vector<int>> groups;
  for (int t = 0; t < n; ++t) groups[schedule.group[t]].push_back(t);
  std::vector<int> group_ids;
  for (const auto& [id, members] : groups) group_ids.push_back(id);
  std::stable_sort(group_ids.begin(), group_ids.end(), [&](int x, int y) {
    return schedule.send_us[x] < schedule.send_us[y];
  });
  std::vector<int> step(n, -1);
  std::map<std::pair<int, int>, int> lane_step;  // (link, lane) -> last step used
  for (int id : group_ids) {
    const auto& members = groups[id];
    int s = 0;
    for (int t : members) {
      for (int p : transfers[t].preds) {
        CCSYNTH_CHECK(step[p] >= 0) << "transfer scheduled before its dependency";
        s = std::max(s, step[p] + 1);
      }
      auto it = lane_step.find({transfers[t].link, schedule.lane[t]});
      if (it != lane_step.end()) s = std::max(s, it->second);
    }
    for (int t : members) {
      step[t] = s;
      lane_step[{transfers[t].link, schedule.lane[t]}] = s;
    }
    // Consecutive chunk ids of a group become one op with a count.
    std::vector<int> sorted = members;
    std::sort(sorted.begin(), sorted.end(),
              [&](int x, int y) { return transfers[x].chunk < transfers[y].chunk; });
    for (size_t i = 0; i < sorted.size();) {
      const Transfer& first = transfers[sorted[i]];
      size_t j = i + 1;
      while (j < sorted.size() && transfers[sorted[j]].chunk == first.chunk + static_cast<int>(j - i)) ++j;
      ChunkOp op;
      op.chunk = first.chunk;
      op.src = first.src;
      op.dst = first.dst;
      op.kind = first.kind;
      op.step = s;
      op.start_us = schedule.send_us[sorted[i]];
      op.count = static_cast<int>(j - i);
      a.ops.push_back(op);
      i = j;
    }
  }
  sort_ops(a);
  return a;
}

}  // namespace ccsynth::synth
