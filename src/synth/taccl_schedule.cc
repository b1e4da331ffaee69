// Stages 2 and 3 of TACCL (appendix B.2-B.3): heuristic ordering by greedy list scheduling and
// the contiguity / exact scheduling MILP, plus the conversion of a schedule into an Algorithm.

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>

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
  std::vector<int> slot_base;                    // link -> first slot
  std::vector<int> slot_link;                    // slot -> link
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
         link.alpha_us >=
             options.merge_min_alpha_share * transfer_us(link.beta_us_per_mb, chunk_bytes);
}

// The precedence structure stage 2 fixes: per transfer its lane neighbours, the transfers of
// other links just before it on a switch port it uses, and whether its lane may merge sends.
struct OrderGraph {
  std::vector<int> lane_prev, lane_next;
  std::vector<std::vector<int>> port_prev;
  std::vector<char> merge_lane;          // on a mergeable lane with at least two transfers
  std::vector<char> may_join;            // may join its lane predecessor's group
  std::vector<double> alpha, beta, lat;  // lat = alpha + beta (one chunk, group of one)

  OrderGraph(const std::vector<Transfer>& transfers, const LogicalTopology& lt, double chunk_bytes,
             const TacclOptions& options, const Ordering& ordering) {
    const int n = static_cast<int>(transfers.size());
    lane_prev.assign(n, -1);
    lane_next.assign(n, -1);
    port_prev.resize(n);
    merge_lane.assign(n, 0);
    may_join.assign(n, 0);
    alpha.resize(n);
    beta.resize(n);
    lat.resize(n);
    for (int t = 0; t < n; ++t) {
      const LogicalLink& link = lt.links[transfers[t].link];
      alpha[t] = link.alpha_us;
      beta[t] = transfer_us(link.beta_us_per_mb, chunk_bytes);
      lat[t] = link.lat_us(chunk_bytes);
    }
    for (size_t slot = 0; slot < ordering.lane_order.size(); ++slot) {
      const auto& order = ordering.lane_order[slot];
      const bool can = order.size() >= 2 &&
                       mergeable(lt.links[ordering.lane_slot_link[slot]], chunk_bytes, options);
      for (size_t i = 0; i < order.size(); ++i) {
        merge_lane[order[i]] = can;
        if (i == 0) continue;
        lane_prev[order[i]] = order[i - 1];
        lane_next[order[i - 1]] = order[i];
      }
    }
    std::vector<int> adjacent(n, 0);  // port orders in which the lane predecessor is adjacent
    for (const auto* orders : {&ordering.port_send_order, &ordering.port_recv_order}) {
      for (const auto& order : *orders) {
        for (size_t i = 1; i < order.size(); ++i) {
          const int x = order[i - 1], y = order[i];
          if (transfers[x].link != transfers[y].link) port_prev[y].push_back(x);
          if (lane_prev[y] == x) ++adjacent[y];
        }
      }
    }
    for (int t = 0; t < n; ++t) {
      // On a switch port another link's send between the two would split the group.
      const bool ported = lt.links[transfers[t].link].port >= 0;
      may_join[t] = merge_lane[t] && lane_prev[t] >= 0 && (!ported || adjacent[t] == 2);
    }
  }
};

// Bounds on every time variable of stage 3 that hold for every merge choice with makespan at
// most `horizon`: earliest times by a forward pass in which a mergeable lane's successor may
// leave with its predecessor, latest times by the backward pass. They replace the single big-M
// of eq. 16-19 by a per-row one and tighten the LP relaxation.
struct TimeWindows {
  std::vector<double> send_lo, send_hi, part_lo, part_hi, finish_hi;
  double makespan_lo = 0.0;  // a lower bound on the optimal makespan

  TimeWindows(const std::vector<Transfer>& transfers, const OrderGraph& g, double horizon) {
    const int n = static_cast<int>(transfers.size());
    const std::vector<double>& lat = g.lat;
    std::vector<std::vector<int>> succ(n);  // dependency and port successors
    for (int t = 0; t < n; ++t) {
      for (int p : transfers[t].preds) succ[p].push_back(t);
      for (int q : g.port_prev[t]) succ[q].push_back(t);
    }
    const std::vector<int> order = precedence_order(transfers, g, succ);
    send_lo.assign(n, 0.0);
    part_lo.assign(n, 0.0);
    std::vector<double> release(n, 0.0);  // from dependencies and ports only
    for (int t : order) {
      for (int p : transfers[t].preds) release[t] = std::max(release[t], part_lo[p]);
      for (int q : g.port_prev[t]) release[t] = std::max(release[t], part_lo[q]);
      send_lo[t] = release[t];
      const int a = g.lane_prev[t];
      part_lo[t] = send_lo[t] + lat[t];
      if (a < 0) continue;
      if (g.merge_lane[t]) {
        send_lo[t] = std::max(send_lo[t], send_lo[a]);
        part_lo[t] = std::max({send_lo[t] + lat[t], part_lo[a] + g.beta[t],
                               earliest_group_end(g, t, release, part_lo)});
      } else {
        send_lo[t] = std::max(send_lo[t], part_lo[a]);
        part_lo[t] = send_lo[t] + lat[t];
      }
    }
    finish_hi.assign(n, horizon);
    part_hi.assign(n, horizon);
    send_hi.assign(n, horizon);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const int t = *it;
      for (int x : succ[t]) finish_hi[t] = std::min(finish_hi[t], send_hi[x]);
      const int b = g.lane_next[t];
      part_hi[t] = finish_hi[t];
      if (b >= 0 && !g.merge_lane[t]) part_hi[t] = std::min(part_hi[t], send_hi[b]);
      if (b >= 0 && g.merge_lane[t]) part_hi[t] = std::min(part_hi[t], part_hi[b] - g.beta[b]);
      send_hi[t] = part_hi[t] - lat[t];
      if (b >= 0 && g.merge_lane[t]) send_hi[t] = std::min(send_hi[t], send_hi[b]);
    }
    makespan_lo = *std::max_element(part_lo.begin(), part_lo.end());
    const std::vector<double> after = time_after_arrival(g, succ, order);
    for (int t = 0; t < n; ++t) {
      if (g.merge_lane[t] && g.lane_prev[t] < 0) {
        makespan_lo = std::max(makespan_lo, lane_bound(g, t, release, after));
      }
    }
  }

 private:
  // The earliest a mergeable lane's group ending with t can arrive, over all groupings of the
  // lane up to t (part_lo of the earlier lane transfers holds the same bound for them).
  static double earliest_group_end(const OrderGraph& g, int t, const std::vector<double>& release,
                                   const std::vector<double>& part_lo) {
    constexpr int kMaxGroup = 256;  // longer groups: the plain chain bound stands for them
    double best = std::numeric_limits<double>::infinity(), ready = 0.0;
    int size = 0;
    for (int first = t; first >= 0 && size < kMaxGroup; first = g.lane_prev[first]) {
      ++size;
      ready = std::max(ready, release[first]);
      const int before = g.lane_prev[first];
      const double lane_free = before >= 0 ? part_lo[before] : 0.0;
      best = std::min(best, std::max(ready, lane_free) + g.alpha[t] + g.beta[t] * size);
      if (before < 0) return best;
    }
    return 0.0;
  }

  // Per transfer a lower bound on makespan - arrival through its dependency and port
  // successors (whatever the merges): a successor leaves after the arrival and takes at least
  // its latency; on a mergeable lane the next transfer still arrives one beta after it.
  static std::vector<double> time_after_arrival(const OrderGraph& g,
                                                const std::vector<std::vector<int>>& succ,
                                                const std::vector<int>& order) {
    const size_t n = g.lat.size();
    std::vector<double> after(n, 0.0), from_send(n, 0.0), from_part(n, 0.0);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const int t = *it;
      for (int x : succ[t]) after[t] = std::max(after[t], from_send[x]);
      const int b = g.lane_next[t];
      from_part[t] = after[t];
      if (b >= 0 && g.merge_lane[t])
        from_part[t] = std::max(from_part[t], g.beta[b] + from_part[b]);
      if (b >= 0 && !g.merge_lane[t]) from_part[t] = std::max(from_part[t], from_send[b]);
      from_send[t] = g.lat[t] + from_part[t];
    }
    return after;
  }

  // The best makespan a mergeable lane starting at `head` allows on its own: its transfers
  // become ready at `release`, groups of consecutive transfers leave when ready and the lane
  // is free, and each transfer's `after` follows its group's arrival. Exact over all
  // partitions of the lane into groups (dynamic program, bisection on the makespan).
  static double lane_bound(const OrderGraph& g, int head, const std::vector<double>& release,
                           const std::vector<double>& after) {
    std::vector<int> lane;
    for (int t = head; t >= 0; t = g.lane_next[t]) lane.push_back(t);
    const size_t k = lane.size();
    constexpr size_t kMaxLane = 512;  // O(k^2) per bisection step
    if (k > kMaxLane) return 0.0;
    const double alpha = g.alpha[head], beta = g.beta[head];
    constexpr double kNever = std::numeric_limits<double>::infinity();
    // Earliest finish of the lane's first j transfers with every member done by `limit`.
    auto fits = [&](double limit) {
      std::vector<double> finish(k + 1, kNever);
      finish[0] = 0.0;
      for (size_t j = 1; j <= k; ++j) {
        double ready = 0.0, tail = 0.0;
        for (size_t i = j; i >= 1; --i) {  // group lane[i-1 .. j-1]
          ready = std::max(ready, release[lane[i - 1]]);
          tail = std::max(tail, after[lane[i - 1]]);
          if (finish[i - 1] == kNever) continue;
          const double f = std::max(ready, finish[i - 1]) + alpha + beta * double(j - i + 1);
          if (f + tail <= limit) finish[j] = std::min(finish[j], f);
        }
      }
      return finish[k] < kNever;
    };
    double lo = 0.0, hi = 0.0;
    for (int t : lane) hi = std::max(hi, release[t] + after[t]);
    hi += (alpha + beta) * double(k);  // every transfer apart, each when the lane is free
    for (int step = 0; step < 50 && hi - lo > 1e-9 * std::max(1.0, hi); ++step) {
      const double mid = 0.5 * (lo + hi);
      (fits(mid) ? hi : lo) = mid;
    }
    return lo;
  }

  // Topological order of dependencies, port chains and lane orders.
  static std::vector<int> precedence_order(const std::vector<Transfer>& transfers,
                                           const OrderGraph& g,
                                           const std::vector<std::vector<int>>& succ) {
    const int n = static_cast<int>(transfers.size());
    std::vector<int> missing(n, 0), order;
    for (int t = 0; t < n; ++t) {
      missing[t] = static_cast<int>(transfers[t].preds.size() + g.port_prev[t].size()) +
                   (g.lane_prev[t] >= 0 ? 1 : 0);
      if (missing[t] == 0) order.push_back(t);
    }
    for (size_t i = 0; i < order.size(); ++i) {
      const int t = order[i];
      for (int x : succ[t]) {
        if (--missing[x] == 0) order.push_back(x);
      }
      if (g.lane_next[t] >= 0 && --missing[g.lane_next[t]] == 0) order.push_back(g.lane_next[t]);
    }
    CCSYNTH_CHECK(static_cast<int>(order.size()) == n) << "stage 2 orders form a cycle";
    return order;
  }
};

// A stage 2 schedule under fixed lane and port orders whose only freedom left is which
// consecutive sends of a mergeable lane travel together (the binaries of eq. 16-19).
class MergeSearch {
 public:
  MergeSearch(const std::vector<Transfer>& transfers, const OrderGraph& graph,
              const Ordering& ordering)
      : transfers_(transfers),
        n_(static_cast<int>(transfers.size())),
        lane_orders_(ordering.lane_order),
        g_(graph) {
    for (int t = 0; t < n_; ++t) {
      if (graph.may_join[t]) candidates_.push_back(t);
    }
  }

  /// Transfers that may join the group of their lane predecessor.
  const std::vector<int>& candidates() const { return candidates_; }

  /// Earliest times when transfer t joins its lane predecessor's group iff joined[t]. Returns
  /// false when the merges make a group wait for its own arrival.
  bool evaluate(const std::vector<char>& joined, Schedule& s) const {
    s.group.resize(n_);
    for (int t = 0; t < n_; ++t) s.group[t] = t;
    for (const auto& order : lane_orders_) {
      for (int t : order) {
        if (joined[t]) s.group[t] = s.group[g_.lane_prev[t]];
      }
    }
    // Group DAG: a group is sent once every member's dependencies and port predecessors and
    // the previous group of its lane arrived.
    std::vector<std::vector<int>> succ(n_);
    std::vector<int> missing(n_, 0), size(n_, 0);
    auto edge = [&](int from, int to_group) {
      succ[s.group[from]].push_back(to_group);
      ++missing[to_group];
    };
    for (int t = 0; t < n_; ++t) {
      const int g = s.group[t];
      ++size[g];
      for (int p : transfers_[t].preds) {
        if (s.group[p] == g) return false;
        edge(p, g);
      }
      for (int q : g_.port_prev[t]) edge(q, g);
      if (g == t && g_.lane_prev[t] >= 0) edge(g_.lane_prev[t], g);
    }
    std::vector<double> send(n_, 0.0), finish(n_, 0.0);
    std::vector<int> ready;
    for (int g = 0; g < n_; ++g) {
      if (size[g] > 0 && missing[g] == 0) ready.push_back(g);
    }
    int timed = 0;
    s.makespan_us = 0.0;
    while (!ready.empty()) {
      const int g = ready.back();
      ready.pop_back();
      ++timed;
      finish[g] = send[g] + g_.alpha[g] + g_.beta[g] * size[g];
      s.makespan_us = std::max(s.makespan_us, finish[g]);
      for (int h : succ[g]) {
        send[h] = std::max(send[h], finish[g]);
        if (--missing[h] == 0) ready.push_back(h);
      }
    }
    if (timed != std::count_if(size.begin(), size.end(), [](int k) { return k > 0; })) {
      return false;
    }
    s.send_us.resize(n_);
    s.arrive_us.resize(n_);
    for (int t = 0; t < n_; ++t) {
      s.send_us[t] = send[s.group[t]];
      s.arrive_us[t] = finish[s.group[t]];
    }
    return true;
  }

 private:
  const std::vector<Transfer>& transfers_;
  int n_;
  const std::vector<std::vector<int>>& lane_orders_;
  const OrderGraph& g_;
  std::vector<int> candidates_;
};

// Sum of arrival times: the tie-breaker that lets the search move along makespan plateaus.
double total_arrival(const Schedule& s) {
  return std::accumulate(s.arrive_us.begin(), s.arrive_us.end(), 0.0);
}

// Sets of merge decisions flipped together: one per orbit of candidates under the symmetries
// (an orbit with a member that may not merge stays apart).
std::vector<std::vector<int>> merge_moves(const MergeSearch& search,
                                          const std::vector<std::vector<int>>& symmetries, int n) {
  std::vector<char> candidate(n, 0), seen(n, 0);
  for (int t : search.candidates()) candidate[t] = 1;
  std::vector<std::vector<int>> moves;
  for (int t : search.candidates()) {
    if (seen[t]) continue;
    std::vector<int> orbit = {t};
    for (const auto& perm : symmetries) {
      if (std::find(orbit.begin(), orbit.end(), perm[t]) == orbit.end()) orbit.push_back(perm[t]);
    }
    bool ok = true;
    for (int u : orbit) {
      ok = ok && candidate[u];
      seen[u] = 1;
    }
    if (ok) moves.push_back(std::move(orbit));
  }
  return moves;
}

// Contiguity by local search (TACCL's alpha saving, tried in stage 2 so that stage 3 starts
// from it): flips one move, then two moves, at a time while that lowers (makespan, total
// arrival), until no such flip does.
void merge_by_local_search(const std::vector<Transfer>& transfers, const LogicalTopology& lt,
                           double chunk_bytes, const TacclOptions& options, Ordering& out) {
  const int n = static_cast<int>(transfers.size());
  const OrderGraph graph(transfers, lt, chunk_bytes, options, out);
  const MergeSearch search(transfers, graph, out);
  const std::vector<std::vector<int>> moves = merge_moves(search, out.symmetries, n);
  if (moves.empty()) return;
  std::vector<char> joined(n, 0);
  Schedule best, trial;
  CCSYNTH_CHECK(search.evaluate(joined, best)) << "stage 2 schedule has a cycle";
  double best_total = total_arrival(best);
  auto flip = [&](size_t i) {
    for (int t : moves[i]) joined[t] ^= 1;
  };
  auto keep_if_better = [&]() {
    if (!search.evaluate(joined, trial)) return false;
    const double total = total_arrival(trial);
    const bool better = trial.makespan_us < best.makespan_us - 1e-9 ||
                        (trial.makespan_us <= best.makespan_us + 1e-9 && total < best_total - 1e-9);
    if (better) {
      std::swap(best, trial);
      best_total = total;
    }
    return better;
  };
  // No search once within the stopping gap of stage 3's lower bound.
  const double good_enough =
      TimeWindows(transfers, graph, best.makespan_us).makespan_lo * (1 + options.relative_gap);
  // Pair flips cost moves^2 evaluations of O(transfers) each: the work is capped so that stage 2
  // stays well under a second on large models (deterministically, unlike a clock).
  constexpr double kMaxWork = 1e7;
  const long max_evaluations = std::max(1L, static_cast<long>(kMaxWork / n));
  long evaluations = 0;
  for (bool improved = true;
       improved && evaluations < max_evaluations && best.makespan_us > good_enough;) {
    improved = false;
    for (size_t i = 0; i < moves.size(); ++i, ++evaluations) {
      flip(i);
      if (keep_if_better()) {
        improved = true;
      } else {
        flip(i);
      }
    }
    for (size_t i = 0; !improved && best.makespan_us > good_enough && i < moves.size(); ++i) {
      for (size_t j = i + 1; j < moves.size() && evaluations < max_evaluations; ++j) {
        ++evaluations;
        flip(i);
        flip(j);
        if (keep_if_better()) {
          improved = true;
        } else {
          flip(i);
          flip(j);
        }
      }
    }
  }
  best.lane = out.greedy.lane;
  out.greedy = std::move(best);
}

// Whether `perm` maps every lane order onto a whole lane order, position by position.
bool maps_lanes_onto_lanes(const std::vector<int>& perm, const Ordering& ordering) {
  std::vector<int> slot_of(perm.size(), -1), position(perm.size(), -1);
  for (size_t slot = 0; slot < ordering.lane_order.size(); ++slot) {
    const auto& order = ordering.lane_order[slot];
    for (size_t i = 0; i < order.size(); ++i) {
      slot_of[order[i]] = static_cast<int>(slot);
      position[order[i]] = static_cast<int>(i);
    }
  }
  for (const auto& order : ordering.lane_order) {
    if (order.empty()) continue;
    const int image_slot = slot_of[perm[order[0]]];
    if (ordering.lane_order[image_slot].size() != order.size()) return false;
    for (size_t i = 0; i < order.size(); ++i) {
      const int u = perm[order[i]];
      if (slot_of[u] != image_slot || position[u] != static_cast<int>(i)) return false;
    }
  }
  return true;
}

// The B.2 list-scheduling priorities of every transfer: the longest path still ahead of it
// (tail, itself included) and the path already behind it (head), over the dependencies.
struct PathLengths {
  std::vector<double> head, tail;
  std::vector<std::vector<int>> succ;  // dependency successors

  PathLengths(const std::vector<Transfer>& transfers, const std::vector<double>& lat) {
    const int n = static_cast<int>(transfers.size());
    const std::vector<int> topo = topological_order(transfers);
    head.assign(n, 0.0);
    tail.assign(n, 0.0);
    succ.resize(n);
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
  }
};

// An Ordering with empty orders for every lane slot and switch port, and a greedy schedule of
// `n` unmerged transfers at time 0.
Ordering empty_ordering(const Resources& res, int n) {
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
  return out;
}

// Stage 2's greedy list scheduling (B.2): repeatedly places the ready transfer that can start
// earliest on its least-busy lane, ties broken by the longest path ahead, then the shortest
// path behind, then (with the sketch's enforce_ordering) the lower chunk on inter-node links.
class ListScheduler {
 public:
  ListScheduler(const std::vector<Transfer>& transfers, const LogicalTopology& lt,
                const Sketch& sketch, const Resources& res, const std::vector<double>& lat)
      : transfers_(transfers),
        lt_(lt),
        sketch_(sketch),
        res_(res),
        lat_(lat),
        paths_(transfers, lat),
        slot_free_(res.slot_link.size(), 0.0),
        send_free_(res.send_port.size(), 0.0),
        recv_free_(res.recv_port.size(), 0.0) {
    const int n = static_cast<int>(transfers.size());
    missing_.assign(n, 0);
    ready_at_.assign(n, 0.0);
    for (int t = 0; t < n; ++t) {
      missing_[t] = static_cast<int>(transfers[t].preds.size());
      if (missing_[t] == 0) ready_.push_back(t);
    }
    send_port_.resize(n);
    recv_port_.resize(n);
    for (int t = 0; t < n; ++t) {
      const LogicalLink& link = lt.links[transfers[t].link];
      send_port_[t] = port_index(res.send_port, link.port, link.send_port);
      recv_port_[t] = port_index(res.recv_port, link.port, link.recv_port);
    }
  }

  /// Places every transfer, recording lane and port orders and the greedy times in `out`.
  void run(Ordering& out) {
    for (size_t done = 0; done < transfers_.size(); ++done) {
      CCSYNTH_CHECK(!ready_.empty()) << "no transfer ready";
      place(pick(), out);
    }
  }

 private:
  // A transfer with the lane it would take and its earliest start there.
  struct Candidate {
    int transfer = -1;
    int lane = 0;
    double start = 0.0;
  };

  static int port_index(const std::map<std::pair<int, int>, int>& ports, int sw, int port) {
    return sw < 0 ? -1 : ports.at({sw, port});
  }

  Candidate earliest_start(int t) const {
    const LogicalLink& link = lt_.links[transfers_[t].link];
    const int base = res_.slot_base[transfers_[t].link];
    int lane = 0;
    for (int k = 1; k < link.lanes; ++k) {
      if (slot_free_[base + k] < slot_free_[base + lane]) lane = k;
    }
    double est = std::max(ready_at_[t], slot_free_[base + lane]);
    if (send_port_[t] >= 0) {
      est = std::max({est, send_free_[send_port_[t]], recv_free_[recv_port_[t]]});
    }
    return {t, lane, est};
  }

  // Whether t goes before q when both can start at the same time.
  bool breaks_tie(int t, int q) const {
    const std::vector<double>& tail = paths_.tail;
    const std::vector<double>& head = paths_.head;
    if (std::abs(tail[t] - tail[q]) > 1e-9) return tail[t] > tail[q];
    if (std::abs(head[t] - head[q]) > 1e-9) return head[t] < head[q];
    if (sketch_.internode.enforce_ordering && lt_.links[transfers_[t].link].internode &&
        transfers_[t].chunk != transfers_[q].chunk) {
      return transfers_[t].chunk < transfers_[q].chunk;
    }
    return t < q;
  }

  Candidate pick() const {
    Candidate best;
    for (int t : ready_) {
      const Candidate c = earliest_start(t);
      bool better;
      if (best.transfer < 0) {
        better = true;
      } else if (c.start > best.start + 1e-9) {
        better = false;
      } else if (c.start < best.start - 1e-9) {
        better = true;
      } else {
        better = breaks_tie(t, best.transfer);
      }
      if (better) best = c;
    }
    return best;
  }

  void place(const Candidate& c, Ordering& out) {
    const int pick = c.transfer;
    const Transfer& tr = transfers_[pick];
    const int slot = res_.slot_base[tr.link] + c.lane;
    Schedule& g = out.greedy;
    g.send_us[pick] = c.start;
    g.arrive_us[pick] = c.start + lat_[pick];
    g.lane[pick] = c.lane;
    g.makespan_us = std::max(g.makespan_us, g.arrive_us[pick]);
    slot_free_[slot] = g.arrive_us[pick];
    out.lane_order[slot].push_back(pick);
    if (lt_.links[tr.link].port >= 0) {
      const int sp = send_port_[pick], rp = recv_port_[pick];
      send_free_[sp] = recv_free_[rp] = g.arrive_us[pick];
      out.port_send_order[sp].push_back(pick);
      out.port_recv_order[rp].push_back(pick);
    }
    *std::find(ready_.begin(), ready_.end(), pick) = ready_.back();
    ready_.pop_back();
    for (int s : paths_.succ[pick]) {
      ready_at_[s] = std::max(ready_at_[s], g.arrive_us[pick]);
      if (--missing_[s] == 0) ready_.push_back(s);
    }
  }

  const std::vector<Transfer>& transfers_;
  const LogicalTopology& lt_;
  const Sketch& sketch_;
  const Resources& res_;
  const std::vector<double>& lat_;
  const PathLengths paths_;
  // When each lane slot, send port and receive port is free again.
  std::vector<double> slot_free_, send_free_, recv_free_;
  std::vector<int> missing_;                // dependencies not placed yet
  std::vector<double> ready_at_;            // latest arrival of the placed dependencies
  std::vector<int> ready_;                  // transfers whose dependencies are all placed
  std::vector<int> send_port_, recv_port_;  // port indices in res_, or -1
};

}  // namespace

Ordering order_transfers(const std::vector<Transfer>& transfers, const LogicalTopology& lt,
                         const Sketch& sketch, double chunk_bytes, const TacclOptions& options,
                         const std::vector<std::vector<int>>& symmetries) {
  const int n = static_cast<int>(transfers.size());
  const Resources res(lt);
  std::vector<double> lat(n);
  for (int t = 0; t < n; ++t) lat[t] = lt.links[transfers[t].link].lat_us(chunk_bytes);
  Ordering out = empty_ordering(res, n);
  ListScheduler(transfers, lt, sketch, res, lat).run(out);
  for (const auto& perm : symmetries) {
    if (maps_lanes_onto_lanes(perm, out)) out.symmetries.push_back(perm);
  }
  merge_by_local_search(transfers, lt, chunk_bytes, options, out);
  return out;
}

std::vector<std::vector<int>> transfer_symmetries(const std::vector<Transfer>& transfers,
                                                  const LogicalTopology& lt,
                                                  const Collective& base) {
  const int n = static_cast<int>(transfers.size());
  std::map<std::tuple<int, int, int, OpKind>, int> index;
  for (int t = 0; t < n; ++t) {
    const Transfer& tr = transfers[t];
    if (!index.emplace(std::make_tuple(tr.chunk, tr.src, tr.dst, tr.kind), t).second) return {};
  }
  std::vector<std::vector<int>> out;
  for (const auto& g : lt.group) {
    std::vector<int> perm(n);
    bool identity = true, closed = true;
    for (int t = 0; t < n && closed; ++t) {
      const Transfer& tr = transfers[t];
      const int chunk = detail::chunk_image(base, g, tr.chunk);
      auto it = index.find(std::make_tuple(chunk, g[tr.src], g[tr.dst], tr.kind));
      closed = chunk >= 0 && it != index.end();
      if (closed) perm[t] = it->second;
      identity = identity && closed && perm[t] == t;
    }
    if (closed && !identity) out.push_back(std::move(perm));
  }
  return out;
}

namespace {

// An affine time expression var + constant (a transfer's finish time).
struct Affine {
  int var = -1;
  double constant = 0.0;
};

// A contiguity decision (eq. 16): y = 1 when transfer b joins the group of a, its predecessor
// on lane slot `slot`.
struct Merge {
  int slot, a, b, y;
};

// The stage 3 MILP (appendix B.3) over the lane and port orders of stage 2, with the stage 2
// schedule as its MIP start. The builders add variables and rows in a fixed order, so the
// model (and the solver's path through it) is the same on every run.
class ScheduleModel {
 public:
  ScheduleModel(const std::vector<Transfer>& transfers, const Ordering& ordering,
                const LogicalTopology& lt, double chunk_bytes, const TacclOptions& options)
      : transfers_(transfers),
        ordering_(ordering),
        lt_(lt),
        n_(static_cast<int>(transfers.size())),
        greedy_(ordering.greedy),
        ub_(greedy_.makespan_us * (1 + 1e-9) + 1e-9),  // no better schedule is later
        graph_(transfers, lt, chunk_bytes, options, ordering),
        windows_(transfers, graph_, ub_) {
    add_send_times();
    add_lane_groups();
    add_dependencies();
    index_merges();
    add_symmetric_merges();
    add_lane_bandwidth();
    add_lane_group_cuts();
    add_port_chains(ordering_.port_send_order);
    add_port_chains(ordering_.port_recv_order);
    add_makespan();
  }

  /// Solves the model; the stage 2 schedule when the solver finds none.
  Schedule solve(const TacclOptions& options, StageReport* report) const;

 private:
  // Keeps the MIP start inside the time windows despite rounding.
  static constexpr double kSlack = 1e-6;

  // A new variable with `initial` as its MIP start value.
  int add_var(double lb, double hi, bool integer, double initial, double objective = 0.0);
  void add_send_times();
  void add_lane_groups();
  void add_lane_group(size_t slot);
  void add_dependencies();
  void index_merges();
  void add_symmetric_merges();
  void add_lane_bandwidth();
  void add_merge_alternative(int a, int b, int y);
  void add_lane_group_cuts();
  void add_port_chains(const std::vector<std::vector<int>>& orders);
  void add_makespan();
  // send[later] >= earlier.
  void add_after(int later, const Affine& earlier);
  Schedule read_schedule(const solvers::MilpResult& result) const;

  const std::vector<Transfer>& transfers_;
  const Ordering& ordering_;
  const LogicalTopology& lt_;
  const int n_;
  const Schedule& greedy_;
  const double ub_;
  const OrderGraph graph_;
  const TimeWindows windows_;
  solvers::MilpModel m_;
  std::vector<double> start_;   // MIP start, grown with the variables
  std::vector<int> send_;       // transfer -> send time variable
  std::vector<Affine> finish_;  // transfer -> its finish (arrival) time
  std::vector<int> part_;       // transfer -> running finish of its merge group, or -1
  std::vector<Merge> merges_;
  std::map<std::pair<int, int>, int> merge_of_;  // (a, b) -> y
  std::map<int, int> merge_after_;               // transfer -> y merging it with its lane successor
  int time_ = -1;
};

int ScheduleModel::add_var(double lb, double hi, bool integer, double initial, double objective) {
  const int v = m_.add_var(lb, hi, integer, objective);
  start_.push_back(initial);
  return v;
}

void ScheduleModel::add_send_times() {
  send_.resize(n_);
  for (int t = 0; t < n_; ++t) {
    send_[t] =
        add_var(windows_.send_lo[t], windows_.send_hi[t] + kSlack, false, greedy_.send_us[t]);
  }
  finish_.resize(n_);
  for (int t = 0; t < n_; ++t) finish_[t] = {send_[t], graph_.lat[t]};
}

// Contiguity (eq. 16-19) on inter-node lanes: y merges a transfer with its predecessor on the
// lane; p is the running finish of the merged group, f the group's (shared) arrival.
void ScheduleModel::add_lane_groups() {
  part_.assign(n_, -1);
  for (size_t slot = 0; slot < ordering_.lane_order.size(); ++slot) add_lane_group(slot);
}

void ScheduleModel::add_lane_group(size_t slot) {
  const auto& order = ordering_.lane_order[slot];
  // Merging saves one alpha per chunk: skip lanes where alpha is negligible next to the
  // transfer time, which keeps the MILP small for large chunks (OrderGraph::merge_lane).
  if (order.empty() || !graph_.merge_lane[order[0]]) return;
  const TimeWindows& w = windows_;
  for (size_t i = 0; i < order.size(); ++i) {
    const int t = order[i];
    // MIP start: the running finish inside the stage 2 merge group.
    int position = 1;
    for (size_t j = i; j > 0 && greedy_.group[order[j - 1]] == greedy_.group[t]; --j) ++position;
    part_[t] = add_var(w.part_lo[t], w.part_hi[t] + kSlack, false,
                       greedy_.send_us[t] + graph_.alpha[t] + graph_.beta[t] * position);
    const int f = add_var(w.part_lo[t], w.finish_hi[t] + kSlack, false, greedy_.arrive_us[t]);
    m_.add_ge({{part_[t], 1.0}, {send_[t], -1.0}}, graph_.lat[t]);  // eq. 17 for a group of one
    m_.add_ge({{f, 1.0}, {part_[t], -1.0}}, 0.0);  // eq. 18: arrival after the group
    finish_[t] = {f, 0.0};
  }
  for (size_t i = 1; i < order.size(); ++i) {
    const bool together = greedy_.group[order[i - 1]] == greedy_.group[order[i]];
    merges_.push_back({static_cast<int>(slot), order[i - 1], order[i],
                       add_var(0.0, 1.0, true, together ? 1.0 : 0.0)});
  }
}

void ScheduleModel::add_after(int later, const Affine& earlier) {
  m_.add_ge({{send_[later], 1.0}, {earlier.var, -1.0}}, earlier.constant);
}

// Dependencies: a chunk leaves a rank after it (and for reductions every part) arrived (eq. 4).
void ScheduleModel::add_dependencies() {
  for (int t = 0; t < n_; ++t) {
    for (int p : transfers_[t].preds) add_after(t, finish_[p]);
  }
}

void ScheduleModel::index_merges() {
  for (const Merge& mg : merges_) merge_of_[{mg.a, mg.b}] = mg.y;
  for (const Merge& mg : merges_) merge_after_[mg.a] = mg.y;
}

// Symmetric merge decisions (the sketch's symmetry, TACCL eq. 12-14 applied to eq. 16).
void ScheduleModel::add_symmetric_merges() {
  for (const auto& perm : ordering_.symmetries) {
    for (const Merge& mg : merges_) {
      const int image = merge_of_.at({perm[mg.a], perm[mg.b]});
      if (image > mg.y) m_.add_eq({{mg.y, 1.0}, {image, -1.0}}, 0.0);
    }
  }
}

// Strict bandwidth on every lane (eq. 19), with the contiguity alternative.
void ScheduleModel::add_lane_bandwidth() {
  for (const auto& order : ordering_.lane_order) {
    for (size_t i = 1; i < order.size(); ++i) {
      const int a = order[i - 1], b = order[i];
      auto it = merge_of_.find({a, b});
      if (it == merge_of_.end()) {
        add_after(b, finish_[a]);
      } else {
        add_merge_alternative(a, b, it->second);
      }
    }
  }
}

// Lane successor b either joins a's group (y = 1: same send, shared arrival) or leaves after
// a's group finished (y = 0).
void ScheduleModel::add_merge_alternative(int a, int b, int y) {
  const TimeWindows& w = windows_;
  const int fa = finish_[a].var, fb = finish_[b].var;
  // Per-row big-Ms from the time windows.
  const double m16 = std::max(0.0, w.send_hi[b] - w.send_lo[a]) + kSlack;
  const double m19 = std::max(0.0, w.part_hi[a] - w.send_lo[b]) + kSlack;
  const double m_arrival = std::max(0.0, w.finish_hi[b] - w.part_lo[a]) + kSlack;
  m_.add_ge({{send_[b], 1.0}, {send_[a], -1.0}}, 0.0);
  m_.add_le({{send_[b], 1.0}, {send_[a], -1.0}, {y, m16}}, m16);  // eq. 16
  m_.add_ge({{send_[b], 1.0}, {part_[a], -1.0}, {y, m19}}, 0.0);  // eq. 19
  // Eq. 17 holds whether or not b joins a's group: apart, b leaves after part[a].
  m_.add_ge({{part_[b], 1.0}, {part_[a], -1.0}}, graph_.beta[b]);
  m_.add_ge({{fa, 1.0}, {fb, -1.0}, {y, -m_arrival}}, -m_arrival);  // shared arrival
}

// Valid inequalities that tighten the big-M relaxation of mergeable lanes: from the send of
// its i-th transfer, a lane still needs one alpha per remaining group plus beta per remaining
// chunk before its last transfer arrives (a group boundary is a merge variable at 0).
void ScheduleModel::add_lane_group_cuts() {
  for (size_t slot = 0; slot < ordering_.lane_order.size(); ++slot) {
    const auto& order = ordering_.lane_order[slot];
    if (order.size() < 2 || !merge_after_.count(order[0])) continue;
    const LogicalLink& link = lt_.links[ordering_.lane_slot_link[slot]];
    const int last = order.back();
    for (size_t i = 0; i + 1 < order.size(); ++i) {
      std::vector<solvers::Term> row = {{finish_[last].var, 1.0}, {send_[order[i]], -1.0}};
      double rhs = link.alpha_us + graph_.beta[last] * static_cast<double>(order.size() - i);
      for (size_t j = i; j + 1 < order.size(); ++j) {
        row.push_back({merge_after_.at(order[j]), link.alpha_us});
        rhs += link.alpha_us;
      }
      m_.add_ge(row, rhs);
    }
  }
}

// One transfer at a time per switch port (eq. 20-21), in the stage 2 order.
void ScheduleModel::add_port_chains(const std::vector<std::vector<int>>& orders) {
  for (const auto& order : orders) {
    for (size_t i = 1; i < order.size(); ++i) {
      if (transfers_[order[i - 1]].link == transfers_[order[i]].link) continue;  // lane order
      add_after(order[i], finish_[order[i - 1]]);
    }
  }
}

// Objective (eq. 1-2): the last arrival.
void ScheduleModel::add_makespan() {
  time_ = add_var(std::min(windows_.makespan_lo, ub_), ub_, false, greedy_.makespan_us, 1.0);
  std::vector<bool> has_succ(n_, false);
  for (const Transfer& t : transfers_) {
    for (int p : t.preds) has_succ[p] = true;
  }
  for (int t = 0; t < n_; ++t) {
    if (!has_succ[t]) m_.add_ge({{time_, 1.0}, {finish_[t].var, -1.0}}, finish_[t].constant);
  }
}

Schedule ScheduleModel::solve(const TacclOptions& options, StageReport* report) const {
  solvers::MilpOptions mo = detail::milp_options(options);
  mo.mip_start = start_;
  const solvers::MilpResult r = solvers::solve_milp(m_, mo);
  detail::report_milp_stage(report, "scheduling", r, m_);
  if (!r.has_solution) {
    if (report) {
      report->status += " (greedy schedule used)";
      report->objective_us = greedy_.makespan_us;
    }
    return greedy_;
  }
  Schedule s = read_schedule(r);
  if (report) report->objective_us = s.makespan_us;
  return s;
}

Schedule ScheduleModel::read_schedule(const solvers::MilpResult& r) const {
  Schedule s;
  s.send_us.resize(n_);
  s.arrive_us.resize(n_);
  s.lane = greedy_.lane;
  s.group.resize(n_);
  std::iota(s.group.begin(), s.group.end(), 0);
  for (int t = 0; t < n_; ++t) s.send_us[t] = r.values[send_[t]];
  for (const Merge& mg : merges_) {
    if (r.values[mg.y] > 0.5) s.group[mg.b] = s.group[mg.a];  // lane order: a is final already
  }
  for (int t = 0; t < n_; ++t) {
    s.arrive_us[t] = r.values[finish_[t].var] + finish_[t].constant;
    s.makespan_us = std::max(s.makespan_us, s.arrive_us[t]);
  }
  // Members of a group share the send time of the group's first transfer.
  for (int t = 0; t < n_; ++t) s.send_us[t] = s.send_us[s.group[t]];
  return s;
}

}  // namespace

Schedule schedule_transfers(const std::vector<Transfer>& transfers, const Ordering& ordering,
                            const LogicalTopology& lt, double chunk_bytes,
                            const TacclOptions& options, StageReport* report) {
  if (!options.contiguity) {
    for (size_t t = 0; t < transfers.size(); ++t) {
      CCSYNTH_CHECK(ordering.greedy.group[t] == static_cast<int>(t))
          << "stage 2 merged sends although contiguity is off";
    }
  }
  const ScheduleModel model(transfers, ordering, lt, chunk_bytes, options);
  return model.solve(options, report);
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
  std::stable_sort(group_ids.begin(), group_ids.end(),
                   [&](int x, int y) { return schedule.send_us[x] < schedule.send_us[y]; });
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
      while (j < sorted.size() &&
             transfers[sorted[j]].chunk == first.chunk + static_cast<int>(j - i))
        ++j;
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
