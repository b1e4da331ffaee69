// The TACOS matching engine (sec. IV.E-G): event-driven greedy link-chunk matching.
//
// Data structures are sized for 10^4 ranks x 10^4 chunks: two bitsets over (rank, chunk)
// (`claimed`: held or on its way, `held`: arrived), a per-rank log of chunks in arrival order,
// and per TEN link a cursor into its source's log. Every entry before the cursor is claimed at
// the link's destination, so a link finds the oldest chunk its destination still needs in
// amortized O(1); the cursors advance at most (links x chunks) times over the whole run.
// Events (transfer completions) sit in an ordered map of buckets keyed by their exact integer
// time; at each event only ranks whose in-links freed or whose in-neighbours received a chunk
// are revisited.

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/synth/tacos.h"

namespace ccsynth::synth {

namespace {

// splitmix64: a small deterministic generator, so results do not depend on the standard
// library's distributions or shuffle.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (n small; the modulo bias is irrelevant for tie-breaking).
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }

 private:
  uint64_t state_;
};

// A rows x cols bit matrix, one row per rank so a link's lookups stay in one row.
class BitMatrix {
 public:
  BitMatrix(int rows, int cols, bool value)
      : words_((static_cast<size_t>(cols) + 63) / 64),
        bits_(static_cast<size_t>(rows) * words_, value ? ~0ULL : 0ULL) {}
  bool get(int row, int col) const {
    return (bits_[row * words_ + (col >> 6)] >> (col & 63)) & 1ULL;
  }
  void set(int row, int col) { bits_[row * words_ + (col >> 6)] |= 1ULL << (col & 63); }
  void clear(int row, int col) { bits_[row * words_ + (col >> 6)] &= ~(1ULL << (col & 63)); }

 private:
  size_t words_;
  std::vector<uint64_t> bits_;
};

// Compressed adjacency: for every rank the indices of links into (or out of) it.
struct Adjacency {
  std::vector<int> start;  // size ranks + 1
  std::vector<int> links;

  int begin(int rank) const { return start[rank]; }
  int end(int rank) const { return start[rank + 1]; }
};

Adjacency build_adjacency(int ranks, const std::vector<TenLink>& links, bool incoming,
                          const std::vector<int64_t>& ticks) {
  Adjacency adj;
  adj.start.assign(ranks + 1, 0);
  for (const TenLink& l : links) ++adj.start[(incoming ? l.dst : l.src) + 1];
  for (int r = 0; r < ranks; ++r) adj.start[r + 1] += adj.start[r];
  adj.links.resize(links.size());
  std::vector<int> fill(adj.start.begin(), adj.start.end() - 1);
  for (size_t e = 0; e < links.size(); ++e) {
    const int r = incoming ? links[e].dst : links[e].src;
    adj.links[fill[r]++] = static_cast<int>(e);
  }
  // Lower-cost links first (sec. IV.F); ties by index, shuffled per event later.
  for (int r = 0; r < ranks; ++r) {
    std::stable_sort(adj.links.begin() + adj.start[r], adj.links.begin() + adj.start[r + 1],
                     [&](int a, int b) { return ticks[a] < ticks[b]; });
  }
  return adj;
}

class Engine {
 public:
  Engine(const std::vector<TenLink>& links, const Collective& c, const TenOptions& options)
      : ranks_(c.num_ranks),
        chunks_(c.num_chunks()),
        rng_(options.seed),
        claimed_(c.num_ranks, c.num_chunks(), true),
        held_(c.num_ranks, c.num_chunks(), false) {
    s_.num_ranks = ranks_;
    s_.num_chunks = chunks_;
    s_.links = links;
    s_.seed = options.seed;
    window_ = std::max(1, options.pick_window);
    for (const TenLink& l : links) {
      CCSYNTH_CHECK(l.src >= 0 && l.src < ranks_ && l.dst >= 0 && l.dst < ranks_ &&
                    l.src != l.dst && l.lanes >= 1)
          << "bad TEN link " << l.src << "->" << l.dst;
      const double ticks = std::llround(l.cost_us * TenSchedule::kTicksPerUs);
      s_.link_ticks.push_back(std::max<int64_t>(1, static_cast<int64_t>(ticks)));
      free_lanes_.push_back(l.lanes);
    }
    in_ = build_adjacency(ranks_, links, true, s_.link_ticks);
    out_ = build_adjacency(ranks_, links, false, s_.link_ticks);
    cursor_.assign(links.size(), 0);
    replacement_ = options.chunk_replacement && has_heterogeneous_ingress();
    init_state(c);
  }

  TenSchedule run() {
    s_.event_ticks.push_back(0);
    s_.event_arrivals.push_back(0);
    match_dirty(0);
    while (!pending_.empty()) {
      auto bucket = pending_.begin();
      const int64_t now = bucket->first;
      std::vector<int64_t> arrivals = std::move(bucket->second);
      pending_.erase(bucket);
      s_.event_ticks.push_back(now);
      s_.event_arrivals.push_back(0);
      for (int64_t id : arrivals) arrive(id, now);
      match_dirty(static_cast<int>(s_.event_ticks.size()) - 1);
    }
    if (unclaimed_total_ > 0) {
      throw UserError("", "collective",
                      "TACOS cannot satisfy " + std::to_string(unclaimed_total_) +
                          " (chunk, rank) pairs: a needed chunk can only reach them through "
                          "ranks that do not need it (greedy matching relays through ranks "
                          "that want the chunk), or the topology is disconnected");
    }
    return std::move(s_);
  }

 private:
  // True when some rank has in-links of different cost: only then can a later, faster
  // transfer overtake an earlier one (chunk replacement, sec. IV.F).
  bool has_heterogeneous_ingress() const {
    for (int v = 0; v < ranks_; ++v) {
      for (int i = in_.begin(v) + 1; i < in_.end(v); ++i) {
        if (s_.link_ticks[in_.links[i]] != s_.link_ticks[in_.links[in_.begin(v)]]) return true;
      }
    }
    return false;
  }

  // Precondition: pre ranks hold their chunks (log entries at event 0). Post pairs not held
  // are the unsatisfied ones; every other pair is marked claimed so no link ever sends it.
  void init_state(const Collective& c) {
    if (c.combining) {
      throw UserError("", "collective",
                      "the TACOS matcher takes a non-combining collective (" + c.name +
                          " is synthesized as the inverse of one)");
    }
    log_.assign(ranks_, {});
    if (replacement_) log_event_.assign(ranks_, {});
    unclaimed_.assign(ranks_, 0);
    inflight_into_.assign(replacement_ ? ranks_ : 0, {});
    dirty_flag_.assign(ranks_, 0);
    for (int k = 0; k < chunks_; ++k) {
      const auto& spec = c.chunks[k];
      if (spec.pre.size() != 1) {
        throw UserError("", "collective.chunks[" + std::to_string(k) + "].pre",
                        "TACOS needs exactly one source rank per chunk");
      }
      for (const Slot& s : spec.post) {
        if (claimed_.get(s.rank, k)) {
          claimed_.clear(s.rank, k);
          ++unclaimed_[s.rank];
          ++unclaimed_total_;
        }
      }
    }
    for (int k = 0; k < chunks_; ++k) ++unclaimed_[c.chunks[k].pre[0].rank];  // log sizes
    for (int r = 0; r < ranks_; ++r) log_[r].reserve(static_cast<size_t>(unclaimed_[r]));
    for (int k = 0; k < chunks_; ++k) --unclaimed_[c.chunks[k].pre[0].rank];
    s_.chunk.reserve(static_cast<size_t>(unclaimed_total_));
    s_.link.reserve(static_cast<size_t>(unclaimed_total_));
    s_.start_event.reserve(static_cast<size_t>(unclaimed_total_));
    for (int k = 0; k < chunks_; ++k) {
      const int r = c.chunks[k].pre[0].rank;
      if (!claimed_.get(r, k)) {
        --unclaimed_[r];
        --unclaimed_total_;
        claimed_.set(r, k);
      }
      held_.set(r, k);
      log_[r].push_back(k);
      if (replacement_) log_event_[r].push_back(0);
    }
    for (int r = 0; r < ranks_; ++r) mark_dirty(r);
  }

  void mark_dirty(int rank) {
    if (dirty_flag_[rank]) return;
    dirty_flag_[rank] = 1;
    dirty_.push_back(rank);
  }

  // A transfer completes: the destination holds the chunk, its link lane is free again, and the
  // destination and the ranks it feeds through idle links get another matching round.
  void arrive(int64_t id, int64_t now) {
    const int chunk = s_.chunk[id];
    if (chunk < 0) return;  // dropped by replacement; its lane was freed then
    const int e = s_.link[id];
    const int v = s_.links[e].dst;
    ++free_lanes_[e];
    log_[v].push_back(chunk);
    const int event = static_cast<int>(s_.event_ticks.size()) - 1;
    if (replacement_) {  // only replacement asks who holds what, and when
      held_.set(v, chunk);
      log_event_[v].push_back(event);
      remove_inflight(v, id);
    }
    s_.event_arrivals[event] = 1;
    s_.makespan_ticks = std::max(s_.makespan_ticks, now);
    mark_dirty(v);
    for (int i = out_.begin(v); i < out_.end(v); ++i) {
      const int f = out_.links[i];
      if (free_lanes_[f] > 0) mark_dirty(s_.links[f].dst);
    }
  }

  void remove_inflight(int v, int64_t id) {
    auto& list = inflight_into_[v];
    auto it = std::find(list.begin(), list.end(), id);
    if (it == list.end()) return;
    *it = list.back();
    list.pop_back();
  }

  void match_dirty(int event) {
    for (size_t i = 0; i < dirty_.size(); ++i) {
      const int v = dirty_[i];
      dirty_flag_[v] = 0;
      match_into(v, event);
    }
    dirty_.clear();
  }

  // Greedy matching for every idle lane into `v` at `event` (sec. IV.E): cheaper links first,
  // equal-cost links in random order (the seed), each taking the oldest chunk its source holds
  // that v still needs; with nothing new to send, a link may take over a chunk already coming
  // over a slower link (sec. IV.F).
  void match_into(int v, int event) {
    const bool can_replace = replacement_ && !inflight_into_[v].empty();
    if (unclaimed_[v] == 0 && !can_replace) return;
    bool again = true;
    while (again) {
      again = false;
      collect_idle_in_links(v);
      for (int e : candidates_) {
        while (free_lanes_[e] > 0) {
          const int chunk = pick_needed(e);
          if (chunk >= 0) {
            claim(v, chunk);
            start(chunk, e, event);
            continue;
          }
          if (!replacement_ || !take_over(e, event, again)) break;
        }
      }
    }
  }

  // The idle in-links of v, by cost; runs of equal cost are shuffled (Fisher-Yates).
  void collect_idle_in_links(int v) {
    candidates_.clear();
    for (int i = in_.begin(v); i < in_.end(v); ++i) {
      const int e = in_.links[i];
      if (free_lanes_[e] > 0) candidates_.push_back(e);
    }
    size_t run = 0;
    while (run < candidates_.size()) {
      size_t end = run + 1;
      const int64_t cost = s_.link_ticks[candidates_[run]];
      while (end < candidates_.size() && s_.link_ticks[candidates_[end]] == cost) ++end;
      for (size_t i = end - 1; i > run; --i) {
        std::swap(candidates_[i], candidates_[run + rng_.below(i - run + 1)]);
      }
      run = end;
    }
  }

  // The oldest chunk in the source's log that the destination still needs, or -1. Advances the
  // link's cursor past claimed entries (claims are permanent, so they never need a second look).
  int oldest_needed(int e) {
    const int u = s_.links[e].src;
    const int v = s_.links[e].dst;
    const std::vector<int32_t>& log = log_[u];
    size_t i = cursor_[e];
    while (i < log.size() && claimed_.get(v, log[i])) ++i;
    cursor_[e] = i;
    return i < log.size() ? log[i] : -1;
  }

  // One of the `window_` oldest chunks in the source's log that the destination needs, at
  // random (the paper picks randomly among all; a small window keeps the pick O(1) while
  // breaking the lock-step that strict oldest-first causes on hypercubes).
  int pick_needed(int e) {
    const int first = oldest_needed(e);
    if (first < 0 || window_ <= 1) return first;
    const int u = s_.links[e].src;
    const int v = s_.links[e].dst;
    const std::vector<int32_t>& log = log_[u];
    int found = 0;
    int chosen = first;
    for (size_t i = cursor_[e]; i < log.size() && found < window_; ++i) {
      if (claimed_.get(v, log[i])) continue;
      ++found;
      if (rng_.below(found) == 0) chosen = log[i];
    }
    return chosen;
  }

  void claim(int v, int chunk) {
    claimed_.set(v, chunk);
    --unclaimed_[v];
    --unclaimed_total_;
  }

  int64_t start(int chunk, int e, int event) {
    const int64_t id = static_cast<int64_t>(s_.chunk.size());
    CCSYNTH_CHECK(id < INT32_MAX) << "too many TEN transfers";
    s_.chunk.push_back(chunk);
    s_.link.push_back(e);
    s_.start_event.push_back(event);
    --free_lanes_[e];
    pending_[s_.event_ticks[event] + s_.link_ticks[e]].push_back(id);
    if (replacement_) inflight_into_[s_.links[e].dst].push_back(id);
    return id;
  }

  // Chunk replacement (sec. IV.F): link e (idle at `event`) can deliver a chunk that is already
  // on its way to v over a slower link earlier than that transfer will. Link e takes the chunk
  // (the one that would arrive last); the slow transfer then carries the oldest chunk v still
  // needs among those its sender held when it STARTED (causality), or is dropped and its lane
  // freed now, in which case `lane_freed` asks the caller for another round.
  bool take_over(int e, int event, bool& lane_freed) {
    const int u = s_.links[e].src;
    const int v = s_.links[e].dst;
    const int64_t arrive_fast = s_.event_ticks[event] + s_.link_ticks[e];
    int64_t best = -1;
    int64_t best_end = arrive_fast;
    for (int64_t id : inflight_into_[v]) {
      const int chunk = s_.chunk[id];
      const int64_t end = s_.end_ticks(id);
      if (chunk >= 0 && end > best_end && held_.get(u, chunk)) {
        best = id;
        best_end = end;
      }
    }
    if (best < 0) return false;
    start(s_.chunk[best], e, event);
    ++s_.replacements;
    const int slow = s_.link[best];
    const int w = s_.links[slow].src;
    const int substitute = oldest_needed(slow);
    if (substitute >= 0 && log_event_[w][cursor_[slow]] <= s_.start_event[best]) {
      claim(v, substitute);
      s_.chunk[best] = substitute;
      ++s_.substitutions;
    } else {
      s_.chunk[best] = -1;
      remove_inflight(v, best);
      ++free_lanes_[slow];
      lane_freed = true;
    }
    return true;
  }

  int ranks_;
  int chunks_;
  Rng rng_;
  TenSchedule s_;
  Adjacency in_, out_;
  std::vector<int> free_lanes_;
  std::vector<size_t> cursor_;
  BitMatrix claimed_;
  BitMatrix held_;
  std::vector<std::vector<int32_t>> log_;
  std::vector<std::vector<int32_t>> log_event_;  // arrival event of each log entry (replacement)
  std::vector<int64_t> unclaimed_;
  int64_t unclaimed_total_ = 0;
  bool replacement_ = false;
  int window_ = 1;
  std::vector<std::vector<int64_t>> inflight_into_;
  std::map<int64_t, std::vector<int64_t>> pending_;  // completion time -> transfers
  std::vector<int> dirty_;
  std::vector<uint8_t> dirty_flag_;
  std::vector<int> candidates_;
};

}  // namespace

int64_t TenSchedule::num_transfers() const {
  return static_cast<int64_t>(
      std::count_if(chunk.begin(), chunk.end(), [](int32_t c) { return c >= 0; }));
}

std::vector<TenLink> ten_links(const Topology& topology, double chunk_bytes, int switch_degree) {
  if (switch_degree < 0) {
    throw UserError("", "switch_degree", "must be >= 0 (0 = unwind to every peer)");
  }
  std::vector<TenLink> out;
  std::set<std::pair<int, int>> connected;
  for (const Link& l : topology.links) {
    out.push_back({l.src, l.dst, l.lanes, l.alpha_us + transfer_us(l.beta_us_per_mb, chunk_bytes)});
    connected.insert({l.src, l.dst});
  }
  // Cheapest switches first, so a pair on two switches (an NVSwitch inside an IB fabric) uses
  // the faster one, as Topology::connection does.
  std::vector<const Switch*> switches;
  for (const Switch& sw : topology.switches) switches.push_back(&sw);
  std::stable_sort(switches.begin(), switches.end(), [](const Switch* a, const Switch* b) {
    return a->port_beta_us_per_mb < b->port_beta_us_per_mb;
  });
  for (const Switch* sw : switches) {
    const int n = static_cast<int>(sw->ranks.size());
    // sec. IV.G: rank i links to ranks i+k for the first d offsets k = 1, 2, ... Offsets whose
    // pairs are all still unconnected come first, so that on an inter-node switch (pairs inside
    // a node already joined by links or a cheaper switch) d = 1 pairs rank i with the same
    // position in the next node rather than sending every rank to the same one.
    std::vector<int> offsets;
    std::vector<int> partial;
    for (int k = 1; k < n; ++k) {
      bool all_new = true;
      for (int i = 0; i < n && all_new; ++i) {
        all_new = !connected.count({sw->ranks[i], sw->ranks[(i + k) % n]});
      }
      (all_new ? offsets : partial).push_back(k);
    }
    // Degree 0 (auto): every offset that is new for all ranks, i.e. full unwinding of a
    // standalone switch, one link per other node for a switch spanning linked nodes.
    const int automatic = offsets.empty() ? n - 1 : static_cast<int>(offsets.size());
    const int d = switch_degree == 0 ? automatic : std::min(switch_degree, n - 1);
    offsets.insert(offsets.end(), partial.begin(), partial.end());
    std::vector<std::vector<int>> targets(n);
    std::vector<int> port_out(sw->num_ports(), 0), port_in(sw->num_ports(), 0);
    for (int i = 0; i < n; ++i) {
      const int src = sw->ranks[i];
      for (size_t o = 0; o < offsets.size() && static_cast<int>(targets[i].size()) < d; ++o) {
        const int j = (i + offsets[o]) % n;
        if (connected.count({src, sw->ranks[j]})) continue;
        targets[i].push_back(j);
        ++port_out[sw->port_of_member(i)];
        ++port_in[sw->port_of_member(j)];
      }
    }
    std::vector<std::pair<int, int>> added;
    for (int i = 0; i < n; ++i) {
      const int p = sw->port_of_member(i);
      for (int j : targets[i]) {
        // The links out of a port share its egress: each gets 1/(links out of the port) of it,
        // counting every rank on a shared port (Switch::port_group); a shared port's ingress is
        // split the same way.
        const int q = sw->port_of_member(j);
        const int share = sw->has_shared_ports() ? std::max(port_out[p], port_in[q])
                                                 : static_cast<int>(targets[i].size());
        const double beta = sw->port_beta_us_per_mb * static_cast<double>(share);
        out.push_back(
            {sw->ranks[i], sw->ranks[j], 1, sw->alpha_us + transfer_us(beta, chunk_bytes)});
        added.push_back({sw->ranks[i], sw->ranks[j]});
      }
    }
    connected.insert(added.begin(), added.end());
  }
  return out;
}

TenSchedule ten_synthesize(const std::vector<TenLink>& links, const Collective& collective,
                           const TenOptions& options) {
  Engine engine(links, collective, options);
  return engine.run();
}

}  // namespace ccsynth::synth
