// TACOS collectives on top of the matching engine: the time-to-step mapping, combining
// collectives by inversion on the transposed TEN (sec. IV.H), allreduce = reducescatter then
// allgather, and best-of-N seeds.

#include <algorithm>
#include <exception>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ccsynth/core/error.h"
#include "ccsynth/synth/tacos.h"

namespace ccsynth::synth {

namespace {

constexpr double kTicksPerUs = TenSchedule::kTicksPerUs;

// An op with exact tick times, before steps are assigned.
struct TimedOp {
  int64_t start = 0;
  int64_t end = 0;
  int chunk = 0;
  int src = 0;
  int dst = 0;
  OpKind kind = OpKind::kCopy;
};

// Steps from times (core/algorithm.h semantics): step = number of distinct end times <= start.
// An op reading a chunk that arrived at time a <= start has every op delivering it end at a, so
// the writer's step counts no end >= a while the reader's counts a: the writer's step is lower.
std::vector<ChunkOp> timed_to_ops(std::vector<TimedOp> timed) {
  std::stable_sort(timed.begin(), timed.end(),
                   [](const TimedOp& a, const TimedOp& b) { return a.start < b.start; });
  std::vector<int64_t> ends;
  ends.reserve(timed.size());
  for (const TimedOp& t : timed) ends.push_back(t.end);
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  std::vector<ChunkOp> ops;
  ops.reserve(timed.size());
  for (const TimedOp& t : timed) {
    const int step =
        static_cast<int>(std::upper_bound(ends.begin(), ends.end(), t.start) - ends.begin());
    ops.push_back({t.chunk, t.src, t.dst, t.kind, step, t.start / kTicksPerUs, 1, -1});
  }
  return ops;
}

// The schedule's transfers as timed ops shifted by `offset` ticks.
void append_forward(const TenSchedule& s, int64_t offset, std::vector<TimedOp>& out) {
  for (size_t i = 0; i < s.chunk.size(); ++i) {
    if (s.chunk[i] < 0) continue;
    const TenLink& l = s.links[s.link[i]];
    out.push_back({offset + s.start_ticks(i), offset + s.end_ticks(i), s.chunk[i], l.src, l.dst,
                   OpKind::kCopy});
  }
}

// The inverse (sec. IV.H, Fig. 14) of a schedule found on the transposed TEN: a copy u -> v over
// [start, end) becomes a reduce v -> u over [T - end, T - start), T the makespan, on the
// original link v -> u. A rank's partial sum leaves only after all its subtree's reductions
// arrived, because in the forward schedule it held the chunk before forwarding it.
void append_inverse(const TenSchedule& s, int64_t offset, std::vector<TimedOp>& out) {
  const int64_t t = s.makespan_ticks;
  for (size_t i = 0; i < s.chunk.size(); ++i) {
    if (s.chunk[i] < 0) continue;
    const TenLink& l = s.links[s.link[i]];
    out.push_back({offset + t - s.end_ticks(i), offset + t - s.start_ticks(i), s.chunk[i], l.dst,
                   l.src, OpKind::kReduce});
  }
}

std::vector<TenLink> transposed(std::vector<TenLink> links) {
  for (TenLink& l : links) std::swap(l.src, l.dst);
  return links;
}

// Best of `trials` seeds (lowest makespan, first seed on ties). Up to `o.threads` trials run at
// once, in batches taken in seed order, so at most that many schedules are held beside the best.
TenSchedule best_schedule(const std::vector<TenLink>& links, const Collective& c,
                          const TacosOptions& o) {
  auto trial = [&](int i) {
    return ten_synthesize(
        links, c,
        TenOptions{o.seed + static_cast<uint64_t>(i), o.chunk_replacement, o.pick_window});
  };
  TenSchedule best;
  const int batch = std::clamp(o.threads, 1, o.trials);
  for (int first = 0; first < o.trials; first += batch) {
    const int count = std::min(batch, o.trials - first);
    std::vector<TenSchedule> found(count);
    std::vector<std::exception_ptr> errors(count);
    std::vector<std::thread> helpers;
    auto run = [&](int k) {
      try {
        found[k] = trial(first + k);
      } catch (...) {
        errors[k] = std::current_exception();
      }
    };
    for (int k = 1; k < count; ++k) helpers.emplace_back(run, k);
    run(0);
    for (std::thread& t : helpers) t.join();
    for (int k = 0; k < count; ++k) {
      if (errors[k]) std::rethrow_exception(errors[k]);
      if (first + k == 0 || found[k].makespan_ticks < best.makespan_ticks)
        best = std::move(found[k]);
    }
  }
  return best;
}

void validate_options(const Topology& topology, const Collective& c, const TacosOptions& o) {
  if (topology.num_ranks != c.num_ranks) {
    throw UserError("", "collective",
                    "collective has " + std::to_string(c.num_ranks) + " ranks but topology " +
                        topology.name + " has " + std::to_string(topology.num_ranks));
  }
  if (o.bytes <= 0) throw UserError("", "size", "must be positive");
  if (o.trials < 1 || o.trials > kMaxTacosTrials) {
    throw UserError("", "trials",
                    "must be 1.." + std::to_string(kMaxTacosTrials) + ", got " +
                        std::to_string(o.trials) + " (TACOS takes no time limit)");
  }
  if (o.pick_window < 1) throw UserError("", "pick_window", "must be >= 1");
  if (c.input_chunks < 1) throw UserError("", "collective", "has no input chunks");
}

void record(TacosResult& r, const TenSchedule& s) {
  r.phase_time_us.push_back(s.time_us());
  r.phase_seed.push_back(s.seed);
  r.replacements += s.replacements;
  r.substitutions += s.substitutions;
}

// Names an algorithm whose ops were built from timed inverse / forward phases after the
// collective it implements.
void adopt_collective(Algorithm& algorithm, Collective&& collective, const std::string& topology) {
  algorithm.name = "tacos_" + collective.name;
  algorithm.topology = topology;
  algorithm.collective = std::move(collective);
}

}  // namespace

Algorithm schedule_to_algorithm(const TenSchedule& s, Collective collective,
                                const std::string& topology_name) {
  Algorithm a;
  a.name = "tacos_" + collective.name;
  a.topology = topology_name;
  a.collective = std::move(collective);
  // Fast path (allgather of 10^8 ops): transfers are already in start order; the step of event
  // i is the number of events <= i with an arrival.
  std::vector<int> step_of_event(s.event_ticks.size());
  int arrivals = 0;
  for (size_t i = 0; i < s.event_ticks.size(); ++i) {
    arrivals += s.event_arrivals[i];
    step_of_event[i] = arrivals;
  }
  a.ops.reserve(static_cast<size_t>(s.num_transfers()));
  for (size_t i = 0; i < s.chunk.size(); ++i) {
    if (s.chunk[i] < 0) continue;
    const TenLink& l = s.links[s.link[i]];
    a.ops.push_back({s.chunk[i], l.src, l.dst, OpKind::kCopy, step_of_event[s.start_event[i]],
                     s.start_ticks(i) / kTicksPerUs, 1, -1});
  }
  return a;
}

TacosResult synthesize_tacos(const Topology& topology, Collective c, const TacosOptions& o) {
  validate_options(topology, c, o);
  const double chunk_bytes = static_cast<double>(o.bytes) / c.input_chunks;
  const std::vector<TenLink> links = ten_links(topology, chunk_bytes, o.switch_degree);
  TacosResult r;
  r.num_ten_links = static_cast<int>(links.size());
  const int ranks = c.num_ranks;
  const int per_rank = c.chunks_per_rank;
  switch (c.kind) {
    case CollectiveKind::kAllGather:
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kCustom: {
      const TenSchedule s = best_schedule(links, c, o);
      record(r, s);
      r.algorithm = schedule_to_algorithm(s, std::move(c), topology.name);
      break;
    }
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kReduce: {
      // sec. IV.H: the inverse of an allgather (broadcast) found on the transposed TEN.
      const CollectiveKind forward = c.kind == CollectiveKind::kReduce ? CollectiveKind::kBroadcast
                                                                       : CollectiveKind::kAllGather;
      const TenSchedule s =
          best_schedule(transposed(links), make_collective(forward, ranks, per_rank, c.root), o);
      record(r, s);
      std::vector<TimedOp> timed;
      append_inverse(s, 0, timed);
      r.algorithm.ops = timed_to_ops(std::move(timed));
      adopt_collective(r.algorithm, std::move(c), topology.name);
      break;
    }
    case CollectiveKind::kAllReduce: {
      // Reducescatter (inverse allgather) then allgather; chunk j is owned by rank j / C in
      // both, matching make_collective's allreduce numbering.
      const Collective ag = make_collective(CollectiveKind::kAllGather, ranks, per_rank);
      const TenSchedule rs = best_schedule(transposed(links), ag, o);
      const TenSchedule fw = best_schedule(links, ag, o);
      record(r, rs);
      record(r, fw);
      std::vector<TimedOp> timed;
      append_inverse(rs, 0, timed);
      append_forward(fw, rs.makespan_ticks, timed);
      r.algorithm.ops = timed_to_ops(std::move(timed));
      adopt_collective(r.algorithm, std::move(c), topology.name);
      break;
    }
    default:
      throw UserError("", "collective",
                      "TACOS synthesizes allgather, broadcast, reducescatter, reduce and "
                      "allreduce (and custom non-combining collectives), not " +
                          c.name);
  }
  for (double t : r.phase_time_us) r.time_us += t;
  r.transfers = static_cast<int64_t>(r.algorithm.ops.size());
  return r;
}

int default_trials(int num_ranks) { return std::clamp(2048 / std::max(num_ranks, 1), 1, 8); }

}  // namespace ccsynth::synth
