#pragma once
// Event-driven simulation of a Program (MSCCL-IR) on a Topology (docs/simulator.md).
//
// Model, in short: every threadblock runs its steps in order, once per slice (MSCCLang sec. 6.2:
// the interpreter's outer loop walks the tiles of a chunk, the inner loop the instructions), and
// waits for its cross-threadblock dependency (per slice), for the message it receives and for a
// free FIFO slot at the receiver before it sends. A transfer of b bytes costs
// alpha + beta * b (SCCL sec. 3.6) on one lane of every link of its route (a lane carries one
// transfer at a time, first come first served); switch ports share their bandwidth among the
// transfers through them, each paying its alpha concurrently. Local copies and reductions cost
// time at a memory bandwidth; every collective pays the topology's launch_us once.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ccsynth/core/collective.h"
#include "ccsynth/core/program.h"
#include "ccsynth/core/topology.h"

namespace ccsynth::sim {

/// Buffer layout of one NCCL protocol. Defaults (SimOptions) follow NCCL: Simple moves 512 KiB
/// per FIFO slot (4 MiB buffer / 8 slots); LL128 120 data bytes per 128-byte line (562.5 KiB per
/// slot); LL 8 data bytes per 16-byte line (32 KiB per slot). The protocols' alpha and beta
/// factors belong to the machine: Topology::{simple, ll128, ll} (protocol_cost()).
struct ProtocolParams {
  int64_t slice_bytes = 512 * 1024;  // data bytes of one FIFO slot: chunks are cut into slices
  int fifo_slots = 8;                // sends that may be outstanding on one connection
};

/// The alpha and beta factors of `protocol` on `topology` (Topology::{simple, ll128, ll}).
const ProtocolCost& protocol_cost(const Topology& topology, Protocol protocol);

/// The input chunks per rank a size is divided into when SimOptions::input_chunks is 0
/// (docs/simulator.md "Sizes"): the largest i_chunks, or for in-place programs without an input
/// buffer o_chunks / ngpus (allgather, gather), else o_chunks.
int infer_input_chunks(const Program& program);

/// Simulation options; every field has a documented default.
struct SimOptions {
  ProtocolParams simple{512 * 1024, 8};
  ProtocolParams ll128{576000, 8};
  ProtocolParams ll{32 * 1024, 8};
  /// false: one slice per chunk (no pipelining), as SCCL's synchronous cost model assumes.
  bool pipelining = true;
  /// > 0: use exactly this many slices per chunk (overrides slice_bytes and pipelining).
  int num_slices = 0;
  /// Bandwidth of local copies and reductions in GB/s (1e9 B/s); 0 makes them free; negative
  /// uses the topology's memory_gbps. A copy moves 2 bytes of memory traffic per byte (read +
  /// write), a reduction 3.
  double memory_bandwidth_gbps = -1.0;
  /// > 0: input chunks per rank that `bytes` is divided into; 0 infers it from the program
  /// (the largest gpu i_chunks; for in-place programs without an input buffer o_chunks / ngpus
  /// for allgather and gather, else o_chunks).
  int input_chunks = 0;
  /// Record the critical path (costs 24 bytes per step instance; skipped above 40 million).
  bool critical_path = true;
  /// At most this many critical-path entries are returned (first and last halves kept).
  int critical_path_limit = 40;
  /// Record SimResult::timeline (every step instance and every transfer's hold on a link or
  /// port); off by default and free when off.
  bool record_timeline = false;
  /// At most this many step and this many link intervals are recorded (Timeline::truncated).
  int64_t timeline_limit = 1'000'000;
  /// Stop once the collective is sure to take longer than this many us (its time, launch
  /// overhead included, would be above it): SimResult::stopped is then set and time_us is a
  /// lower bound. The planner passes the best time of the variants simulated so far, which a
  /// slower variant cannot beat.
  double stop_after_us = std::numeric_limits<double>::infinity();

  /// The parameters of `protocol`.
  const ProtocolParams& params(Protocol protocol) const;
};

/// Chunks one runtime call of a step may carry. MSCCL's interpreter runs a step of `count`
/// chunks as calls of at most max(1, slot / chunk) chunks each (`mscclMaxAllowedCount` in
/// mscclSetupCount; the kernel's `for (c = 0; c < count; c += maxAllowedCount)` loop), each a
/// primitive call with its own synchronisation, so the simulator charges alpha once per call:
/// a step of `count` chunks pays ceil(count / chunks_per_call) alphas. Without the runtime's
/// slicing (`pipelining` off, SCCL's synchronous model, or `num_slices` set) a step is one call.
int chunks_per_call(const SimOptions& options, const ProtocolParams& params, double chunk_bytes);

/// Busy time of one link (all lanes together) or switch port: a port is busy while at least one
/// transfer holds it, and its utilization is relative to one port. Switch ports are reported as
/// {rank, -1} (egress) and {-1, rank} (ingress); a port shared by several ranks
/// (Switch::port_group) is reported once, under its first member rank.
struct LinkUsage {
  int src = 0;
  int dst = 0;
  double busy_us = 0.0;      // summed over lanes
  double utilization = 0.0;  // busy_us / (time_us * lanes)
};

/// One step instance of a threadblock in simulated time (SimOptions::record_timeline): from
/// when it started (its dependency, message and FIFO slot ready) to when it finished.
struct StepInterval {
  int rank = 0;
  int threadblock = 0;  // index within the rank
  int step = 0;         // index within the threadblock
  int64_t slice = 0;
  StepType type = StepType::kNop;
  double start_us = 0.0;
  double end_us = 0.0;
};

/// One transfer holding a link lane or a switch port, from when it got it to when its bytes
/// arrived; `link` indexes SimResult::links. A transfer over a multi-hop route appears once per
/// link and port of the route.
struct LinkInterval {
  int link = 0;
  int rank = 0;         // the sending threadblock's rank
  int threadblock = 0;  // and index within that rank
  double start_us = 0.0;
  double end_us = 0.0;
};

/// What happened when, in simulated microseconds from the start (Topology::launch_us, which
/// SimResult::time_us adds once, is not part of it), in the order the simulator scheduled
/// them.
struct Timeline {
  std::vector<StepInterval> steps;
  std::vector<LinkInterval> links;
  bool truncated = false;  // SimOptions::timeline_limit was reached; later intervals are missing
};

/// Result of simulating one size.
struct SimResult {
  int64_t bytes = 0;                       // per-rank input size (apis.md size convention)
  double time_us = 0.0;                    // includes Topology::launch_us
  double algbw_gbps = 0.0;                 // nccl_size_bytes / time
  double busbw_gbps = 0.0;                 // algbw * bus_factor
  std::vector<LinkUsage> links;            // topology links in order, then switch ports
  std::vector<std::string> critical_path;  // "start-end us rank r tb t step s (type) slice k ..."
  int64_t events = 0;                      // step instances executed (steps x slices)
  int slices = 0;                          // slices per chunk
  double chunk_bytes = 0.0;                // bytes of one chunk
  Timeline timeline;                       // filled when SimOptions::record_timeline
  /// SimOptions::stop_after_us was passed: time_us is a lower bound, links and critical path
  /// cover the part simulated.
  bool stopped = false;
};

/// Simulates `program` on `topology` with `bytes` per rank. Throws UserError when the program
/// does not fit the topology (rank counts, unmatched connections, unreachable peers) or
/// deadlocks (the message names the blocked threadblocks).
SimResult simulate(const Program& program, const Topology& topology, int64_t bytes,
                   const SimOptions& options = {});

/// Whether two programs simulate alike: everything simulate() reads is equal (the name and the
/// size range are not read), so they have the same times at every size and topology. The
/// planner and the tuner simulate only the first of such twins.
bool simulate_alike(const Program& a, const Program& b);

/// nccl-tests' bus bandwidth factor: allreduce 2(R-1)/R; allgather, reducescatter, alltoall,
/// gather, scatter (R-1)/R; broadcast, reduce, custom 1.
double bus_factor(CollectiveKind kind, int num_ranks);

/// The size nccl-tests prints and divides by time for algbw: allgather and gather R * bytes (the
/// output), every other collective `bytes` (the per-rank input).
double nccl_size_bytes(CollectiveKind kind, int num_ranks, int64_t bytes);

}  // namespace ccsynth::sim
