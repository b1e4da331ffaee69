#pragma once
// SCCL (PPoPP'21): synthesis of k-synchronous collective algorithms with an SMT solver (Z3).
//
// A SYNCOLL instance (SCCL sec. 3.2) is (G, S, R, P, B, pre, post): G global chunks, S steps,
// R rounds, P ranks, the bandwidth relation B (a list of (set of directed edges, chunks per
// round)) and the pre/post relations, which we take from core's Collective (pre_ranks/post_ranks
// of every chunk). solve_sccl_instance() encodes it (sec. 3.4, constraints C1-C6) and returns an
// Algorithm or Infeasible (UNSAT). synthesize_sccl_pareto() is SCCL's algorithm 1 (sec. 3.7).
//
// Chunk counts. The `chunks` argument everywhere in this header is the paper's per-rank C of
// tables 4-5 (see docs/sccl.md):
//   allgather, gather, broadcast, reducescatter, reduce, scatter: core chunks_per_rank = C;
//   alltoall: C counts one rank's whole input (P destinations), core chunks_per_rank = C / P
//     (alltoall C=8 on DGX-1 is one chunk per destination), so C must be a multiple of P;
//   allreduce: C counts the allreduce's chunks of one rank's buffer; it is built as
//     reducescatter + allgather with C / P chunks per rank each, so C must be a multiple of P
//     and S, R must be even (each half gets S/2 steps and R/2 rounds).
// Combining collectives follow SCCL sec. 3.5: reducescatter = invert(allgather), reduce =
// invert(broadcast), each synthesized on the reversed bandwidth model so the inverse runs on
// the original links.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/collective.h"
#include "ccsynth/core/synth_status.h"
#include "ccsynth/core/topology.h"

namespace ccsynth::synth {

/// One entry (L, b) of SCCL's bandwidth relation B (sec. 3.2.1): at most `chunks_per_round`
/// chunks in total cross the directed edges of `edges` per round.
struct BandwidthConstraint {
  std::vector<std::pair<int, int>> edges;
  int chunks_per_round = 1;
  std::string label;  // e.g. "link 0->1", "switch nvs egress 3"

  bool operator==(const BandwidthConstraint&) const = default;
};

/// SCCL's topology (P, B).
struct BandwidthModel {
  std::string name;
  int num_ranks = 0;
  std::vector<BandwidthConstraint> constraints;

  bool operator==(const BandwidthModel&) const = default;

  /// The directed edges usable by sends: in some constraint and in none with b = 0 (sec. 3.4's
  /// E), sorted and unique.
  std::vector<std::pair<int, int>> edges() const;
  /// Hop distances from `src` over edges(); -1 where unreachable.
  std::vector<int> hop_distances_from(int src) const;
};

/// B for a ccsynth Topology (SCCL sec. 5.2): a link s->d with n lanes is ({(s,d)}, n) (the
/// DGX-1's double NVLinks carry 2 chunks per round); a switch gives every member one egress
/// constraint ({(r,x) | x in switch}, 1) and one ingress constraint ({(x,r)}, 1) (a port moves
/// one chunk per round). A pair joined by both a link and a switch uses the connection
/// Topology::connection() picks.
BandwidthModel bandwidth_model(const Topology& topology);

/// The same model with every edge reversed (for synthesizing an algorithm whose inverse must
/// run on the original links).
BandwidthModel reversed(const BandwidthModel& model);

/// SCCL's model of the Gigabyte Z52 with 8 AMD MI50 GPUs (sec. 5.2.2): the two xGMI islands
/// closed into one bidirectional 8-ring by PCIe links of the lone GPUs 1 and 5, every link one
/// chunk per round (no shared-PCIe constraints). Ring 1-3-0-2-5-7-4-6-1 (PCIe: 1-3, 5-7), a
/// subgraph of topologies' "amdz52", so its algorithms also run there; every bidirectional
/// 8-ring gives the same table 5.
Topology amd_z52_ring_topology();

/// The model SCCL's evaluation used (sec. 5.2): for a topology named "amdz52" the ring of
/// amd_z52_ring_topology() (keeping the name), otherwise bandwidth_model(topology).
BandwidthModel paper_bandwidth_model(const Topology& topology);

/// A SYNCOLL instance (SCCL sec. 3.2). The collective must be non-combining; chunk k's pre
/// relation is collective.pre_ranks(k), its post relation collective.post_ranks(k).
struct SyncollInstance {
  Collective collective;
  BandwidthModel bandwidth;
  int steps = 1;
  int rounds = 1;
};

/// Solver knobs.
struct SolveOptions {
  double time_limit_s = 0;     // per instance; 0 = none
  bool prune_relays = true;    // restrict relays to ranks within hop distance of a destination
  bool use_sat_core = true;    // Z3's SAT core with native cardinality (QF_FD); false = smt core
  bool break_symmetry = true;  // lex-leader order among interchangeable chunks
};

/// Outcome of one instance: kOptimal with the algorithm (the instance has no objective: a
/// model is a proof that (C, S, R) is feasible), kInfeasible for UNSAT, kTimedOut otherwise.
struct InstanceResult {
  SynthStatus status = SynthStatus::kInfeasible;
  std::optional<Algorithm> algorithm;
  double encode_s = 0;
  double solve_s = 0;
  int64_t variables = 0;    // Boolean variables of the SMT model
  int64_t constraints = 0;  // its clauses, cardinality and pseudo-Boolean constraints
};

/// Solves a SYNCOLL instance with the encoding of SCCL sec. 3.4 (docs/sccl.md describes our
/// Boolean form of C1-C6). The algorithm's ops are the sends (c, n, n', s) with step = s (0-based),
/// rounds_per_step = r_0..r_{S-1}. Throws UserError for a combining collective, S < 1 or R < S.
InstanceResult solve_sccl_instance(const SyncollInstance& instance,
                                   const SolveOptions& options = {});

/// Core chunks per unit of SCCL's C (header comment): num_ranks for alltoall and allreduce, else 1.
int sccl_chunk_unit(CollectiveKind kind, int num_ranks);

/// The core collective SCCL's per-rank count C stands for (header comment): what the algorithm
/// returned by synthesize_sccl() implements. Throws UserError when C does not fit the kind.
Collective sccl_collective(CollectiveKind kind, int num_ranks, int chunks, int root = 0);

/// Synthesizes a (C, S, R) algorithm for any built-in kind but kCustom on `topology`'s model;
/// combining kinds via inversion / RS + AG (header comment).
InstanceResult synthesize_sccl(CollectiveKind kind, const BandwidthModel& model, int chunks,
                               int steps, int rounds, int root = 0,
                               const SolveOptions& options = {});

/// A positive rational number num/den in lowest terms (SCCL's bandwidth cost R/C).
struct Ratio {
  int64_t num = 0;
  int64_t den = 1;
  double value() const { return static_cast<double>(num) / static_cast<double>(den); }
  bool operator==(const Ratio&) const = default;
};
Ratio make_ratio(int64_t num, int64_t den);
bool operator<(const Ratio& a, const Ratio& b);

/// Algorithm 1's a_l: no algorithm has fewer steps (largest hop distance from a chunk's nearest
/// pre rank to one of its post ranks; doubled for allreduce).
int sccl_latency_lower_bound(CollectiveKind kind, const BandwidthModel& model, int root = 0);
/// Algorithm 1's b_l: no algorithm has a lower R/C. The largest over rank sets X (all of them
/// for P <= 16, else single ranks and their complements) of (chunks that must enter X) /
/// (chunks per round into X), and the same for leaving X; doubled for allreduce.
Ratio sccl_bandwidth_lower_bound(CollectiveKind kind, const BandwidthModel& model, int root = 0);

/// Options of the Pareto search.
struct ParetoOptions {
  int k = 4;                // k-synchronous: R <= S + k
  SolveOptions solve;       // per instance
  double time_limit_s = 0;  // whole search; 0 = none
  int max_steps = 0;        // 0 = latency bound + 16
  int max_chunks = 0;       // largest C tried; 0 = no cap beyond R / b_l
};

/// One (C, S, R) the search tried.
struct ParetoAttempt {
  int chunks = 0;
  int steps = 0;
  int rounds = 0;
  SynthStatus status = SynthStatus::kInfeasible;  // kOptimal = SAT
  double seconds = 0;
};

/// One point of the frontier: the best R/C found at its number of steps.
struct ParetoPoint {
  int chunks = 0;
  int steps = 0;
  int rounds = 0;
  bool latency_optimal = false;    // steps equal the smallest steps of any algorithm found
  bool bandwidth_optimal = false;  // R/C equals the bandwidth lower bound
  double seconds = 0;
  Algorithm algorithm;
};

/// Result of the search. status: kOptimal when it reached the bandwidth lower bound,
/// kTimedOut when a limit stopped it first (an instance timing out counts as not SAT, and
/// makes the frontier unproven: kTimedOut), kFeasible when max_steps ended it.
struct ParetoResult {
  SynthStatus status = SynthStatus::kOptimal;
  int latency_bound = 0;
  Ratio bandwidth_bound;
  std::vector<ParetoPoint> frontier;
  std::vector<ParetoAttempt> attempts;
  double seconds = 0;
};

/// SCCL algorithm 1 (sec. 3.7): for S = a_l, a_l+1, ...: try (R, C) with S <= R <= S + k and
/// b_l <= R/C < (best R/C so far) in ascending R/C (ties: fewer chunks first); the first SAT is
/// S's frontier point; stop when R/C = b_l. `progress` sees every attempt.
ParetoResult synthesize_sccl_pareto(CollectiveKind kind, const BandwidthModel& model,
                                    const ParetoOptions& options = {}, int root = 0,
                                    const std::function<void(const ParetoAttempt&)>& progress = {});

/// Least-steps mode: the smallest S >= a_l for which (C, S, S + extra_rounds) is SAT, trying
/// S up to max_steps. Returns the last result (kInfeasible if none up to max_steps).
InstanceResult synthesize_sccl_least_steps(
    CollectiveKind kind, const BandwidthModel& model, int chunks, int extra_rounds = 0,
    int max_steps = 16, int root = 0, const SolveOptions& options = {},
    const std::function<void(int steps, const InstanceResult&)>& progress = {});

}  // namespace ccsynth::synth
