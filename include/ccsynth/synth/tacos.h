#pragma once
// TACOS (MICRO'24, sec. IV): greedy link-chunk matching on a time-expanded network (TEN).
//
// The TEN is never materialized: time advances from event to event (a transfer completing),
// and at every event each idle TEN link into a rank is matched with a chunk its source already
// holds and its destination still needs (sec. IV.E), lower-cost links first (sec. IV.F). Links
// have heterogeneous alpha-beta costs, so event times are arbitrary, not unit steps. A chunk
// already travelling on a slow link may be re-sent on a faster link that frees up later; the
// slow transfer then carries a substitute chunk that was at its sender when it started
// (causal chunk replacement, sec. IV.F), or is dropped. Switches are unwound into
// point-to-point links of degree d (sec. IV.G). Combining collectives are inverses of
// non-combining ones run on the transposed TEN (sec. IV.H); allreduce is reducescatter then
// allgather. docs/tacos.md describes the algorithm, its data structures and its limits.

#include <cstdint>
#include <vector>

#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/collective.h"
#include "ccsynth/core/topology.h"

namespace ccsynth::synth {

/// Options of the TACOS synthesizer.
/// The most seeds one synthesis tries (TacosOptions::trials): TACOS runs no solver and takes
/// no time limit, so its work is capped instead (docs/tacos.md).
inline constexpr int kMaxTacosTrials = 1024;

struct TacosOptions {
  int64_t bytes = 1 << 20;        // per-rank input size (chunk = bytes / collective.input_chunks)
  uint64_t seed = 0;              // tie-breaks between equal-cost links are random with this seed
  int trials = 1;                 // seeds seed..seed+trials-1 are tried, the fastest TEN time kept
  int switch_degree = 0;          // unwinding degree d per switch (sec. IV.G); 0 = auto (ten_links)
  bool chunk_replacement = true;  // sec. IV.F; only has an effect with heterogeneous links
  int pick_window = 3;            // a link sends one of the W oldest chunks its destination needs
  int threads = 1;                // trials run up to this many at once; the result is the same
};

/// One TEN link family: `lanes` parallel links src -> dst, each carrying one chunk at a time
/// in `cost_us` = alpha + beta * chunk bytes (sec. IV.A, Fig. 7(b)).
struct TenLink {
  int src = 0;
  int dst = 0;
  int lanes = 1;
  double cost_us = 0.0;
};

/// The TEN links of `topology` for chunks of `chunk_bytes`: every link, plus every switch
/// unwound with degree d (sec. IV.G): rank i of a switch with n ranks (in its listed order)
/// gets links to ranks i+k (mod n) for the first d offsets k that no direct link or cheaper
/// switch already connects (offsets 1, 2, ..., those new for every rank first), with the switch
/// alpha and m times its port beta, m = the number of links rank i got (they share its egress
/// port). Switches are unwound cheapest first. switch_degree 0 (auto) takes exactly the offsets
/// new for every rank: d = n-1 for a standalone switch, one link per other node for an
/// inter-node switch whose node-local pairs are already connected. Throws UserError for a
/// negative degree.
std::vector<TenLink> ten_links(const Topology& topology, double chunk_bytes, int switch_degree);

/// A TEN schedule of a non-combining collective: the link-chunk matches, in start-time order.
/// Times are integer ticks of 1e-6 us (one picosecond) so that event times compare exactly.
struct TenSchedule {
  static constexpr double kTicksPerUs = 1e6;
  int num_ranks = 0;
  int num_chunks = 0;
  std::vector<TenLink> links;
  std::vector<int64_t> link_ticks;      // per link, its cost in ticks (>= 1)
  std::vector<int64_t> event_ticks;     // time of event i, strictly increasing; event 0 is t = 0
  std::vector<uint8_t> event_arrivals;  // 1 where some chunk arrived at event i
  // One entry per match; chunk -1 marks a transfer dropped by chunk replacement.
  std::vector<int32_t> chunk;
  std::vector<int32_t> link;
  std::vector<int32_t> start_event;
  int64_t makespan_ticks = 0;  // last arrival
  int64_t replacements = 0;    // transfers re-sent on a faster link
  int64_t substitutions = 0;   // slow transfers that got a substitute chunk
  uint64_t seed = 0;

  double time_us() const { return makespan_ticks / kTicksPerUs; }
  int64_t start_ticks(size_t transfer) const { return event_ticks[start_event[transfer]]; }
  int64_t end_ticks(size_t transfer) const {
    return start_ticks(transfer) + link_ticks[link[transfer]];
  }
  /// Number of transfers that were not dropped.
  int64_t num_transfers() const;
};

/// Options of one matching run.
struct TenOptions {
  uint64_t seed = 0;
  bool chunk_replacement = true;
  int pick_window = 3;  // see TacosOptions::pick_window
};

/// Runs the greedy matching for a non-combining collective (every chunk has one pre rank and
/// may only be relayed by ranks that need it) over `links`. Throws UserError when a needed chunk
/// can never reach a rank that way (e.g. a gather), or for a combining collective.
TenSchedule ten_synthesize(const std::vector<TenLink>& links, const Collective& collective,
                           const TenOptions& options = {});

/// The Algorithm of a schedule: copies with start_us from the TEN, step = number of distinct
/// arrival times <= the start (so an op only reads chunks that arrived in earlier steps).
Algorithm schedule_to_algorithm(const TenSchedule& schedule, Collective collective,
                                const std::string& topology_name);

/// What synthesize_tacos returns.
struct TacosResult {
  Algorithm algorithm;
  double time_us = 0.0;               // TEN collective time (sum of phases for allreduce)
  std::vector<double> phase_time_us;  // one per synthesized phase (RS, AG for allreduce)
  std::vector<uint64_t> phase_seed;   // the seed kept for each phase
  int64_t transfers = 0;              // link-chunk matches in the algorithm
  int64_t replacements = 0;
  int64_t substitutions = 0;
  int num_ten_links = 0;  // TEN link families (after switch unwinding)
};

/// How many seeds the CLI tries by default: 8 up to 256 ranks, then fewer so that synthesis
/// stays around a second (2048 / ranks, at least 1). Random tie-breaks matter most on small
/// symmetric topologies (hypercube:4 reaches its bound only with several seeds).
int default_trials(int num_ranks);

/// Synthesizes `collective` (allgather, broadcast, reducescatter, reduce, allreduce, or a custom
/// non-combining collective whose chunks only need relaying through ranks that want them) on
/// `topology`. Throws UserError for other collectives, size mismatches or bad options.
TacosResult synthesize_tacos(const Topology& topology, Collective collective,
                             const TacosOptions& options = {});

}  // namespace ccsynth::synth
