#pragma once
// Event-driven simulation of a Program (MSCCL-IR) on a Topology (docs/simulator.md).
//
// Model, in short: every threadblock runs its steps in order, once per slice (MSCCLang sec. 6.2:
// the interpreter's outer loop walks the tiles of a chunk, the inner loop the instructions), and
// waits for its cross-threadblock dependency (per slice), for the message it receives and for a
// free FIFO slot at the receiver before it sends. A transfer of b bytes costs
// alpha + beta * b (SCCL sec. 3.6) on one lane of every link (or switch port) of its route; a
// lane carries one transfer at a time, first come first served, so contention is modelled. Local
// copies and reductions cost time at a memory bandwidth.

#include <cstdint>
#include <string>
#include <vector>

#include "ccsynth/core/collective.h"
#include "ccsynth/core/program.h"
#include "ccsynth/core/topology.h"

namespace ccsynth::sim {

/// Cost parameters of one NCCL protocol. Defaults (SimOptions) follow NCCL's buffer layout:
/// Simple moves 512 KiB per FIFO slot (4 MiB buffer / 8 slots) at full bandwidth; LL128 moves
/// 120 data bytes per 128-byte line (beta x 128/120, 562.5 KiB per slot); LL moves 8 data bytes
/// per 16-byte line with a flag (beta x 2, 32 KiB per slot) but needs no fence, so its latency is
/// halved (alpha x 0.5). These factors are approximations and configurable.
struct ProtocolParams {
  double alpha_factor = 1.0;         // multiplies every link's alpha
  double beta_factor = 1.0;          // multiplies every link's beta
  int64_t slice_bytes = 512 * 1024;  // data bytes of one FIFO slot: chunks are cut into slices
  int fifo_slots = 8;                // sends that may be outstanding on one connection
};

/// Simulation options; every field has a documented default.
struct SimOptions {
  ProtocolParams simple{1.0, 1.0, 512 * 1024, 8};
  ProtocolParams ll128{1.0, 128.0 / 120.0, 576000, 8};
  ProtocolParams ll{0.5, 2.0, 32 * 1024, 8};
  /// false: one slice per chunk (no pipelining), as SCCL's synchronous cost model assumes.
  bool pipelining = true;
  /// > 0: use exactly this many slices per chunk (overrides slice_bytes and pipelining).
  int num_slices = 0;
  /// Bandwidth of local copies and reductions in GB/s (1e9 B/s); 0 makes them free. A copy
  /// moves 2 bytes of memory traffic per byte (read + write), a reduction 3.
  double memory_bandwidth_gbps = 1000.0;
  /// > 0: input chunks per rank that `bytes` is divided into; 0 infers it from the program
  /// (the largest gpu i_chunks; for in-place programs without an input buffer o_chunks / ngpus
  /// for allgather and gather, else o_chunks).
  int input_chunks = 0;
  /// Record the critical path (costs 24 bytes per step instance; skipped above 40 million).
  bool critical_path = true;
  /// At most this many critical-path entries are returned (first and last halves kept).
  int critical_path_limit = 40;

  /// The parameters of `protocol`.
  const ProtocolParams& params(Protocol protocol) const;
};

/// Busy time of one link (all lanes together) or switch port. Switch ports are reported as
/// {rank, -1} (egress) and {-1, rank} (ingress); a port shared by several ranks
/// (Switch::port_group) is reported once, under its first member rank.
struct LinkUsage {
  int src = 0;
  int dst = 0;
  double busy_us = 0.0;      // summed over lanes
  double utilization = 0.0;  // busy_us / (time_us * lanes)
};

/// Result of simulating one size.
struct SimResult {
  int64_t bytes = 0;  // per-rank input size (apis.md size convention)
  double time_us = 0.0;
  double algbw_gbps = 0.0;                 // nccl_size_bytes / time
  double busbw_gbps = 0.0;                 // algbw * bus_factor
  std::vector<LinkUsage> links;            // topology links in order, then switch ports
  std::vector<std::string> critical_path;  // "start-end us rank r tb t step s (type) slice k ..."
  int64_t events = 0;                      // step instances executed (steps x slices)
  int slices = 0;                          // slices per chunk
  double chunk_bytes = 0.0;                // bytes of one chunk
};

/// Simulates `program` on `topology` with `bytes` per rank. Throws UserError when the program
/// does not fit the topology (rank counts, unmatched connections, unreachable peers) or
/// deadlocks (the message names the blocked threadblocks).
SimResult simulate(const Program& program, const Topology& topology, int64_t bytes,
                   const SimOptions& options = {});

/// nccl-tests' bus bandwidth factor: allreduce 2(R-1)/R; allgather, reducescatter, alltoall,
/// gather, scatter (R-1)/R; broadcast, reduce, custom 1.
double bus_factor(CollectiveKind kind, int num_ranks);

/// The size nccl-tests prints and divides by time for algbw: allgather and gather R * bytes (the
/// output), every other collective `bytes` (the per-rank input).
double nccl_size_bytes(CollectiveKind kind, int num_ranks, int64_t bytes);

}  // namespace ccsynth::sim
