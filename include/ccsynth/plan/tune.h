#pragma once
// The tuner (docs/tuning.md): for one topology and collective, every applicable method (the
// nccl reference, the baselines, tacos, trees, sccl on small topologies, taccl with a sketch)
// in several chunkings, each compiled in several variants, is verified and simulated over a
// size sweep; per size the fastest verified program wins (the nccl ring keeps a size unless
// another is faster), and consecutive sizes with the same winner become one entry whose
// [min_bytes, max_bytes] ranges tile all sizes. The result is written as MSCCL XML files plus
// DIR/tuning.json, which load_tuning_dir() loads into a Communicator.
//
//   plan::TuneRequest request;
//   request.topology = topologies::make_builtin("dgx1");
//   request.kind = CollectiveKind::kAllGather;
//   request.sizes = plan::size_sweep(1 << 10, 1 << 30, 4);
//   plan::write_tuning_dir(plan::tune(request), "out/dgx1_allgather");

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ccsynth/core/collective.h"
#include "ccsynth/core/program.h"
#include "ccsynth/core/topology.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/runtime/communicator.h"

namespace ccsynth::plan {

/// What to tune.
struct TuneRequest {
  Topology topology;
  CollectiveKind kind = CollectiveKind::kAllGather;
  std::vector<int64_t> sizes;  // bytes per rank, ascending and distinct; empty = 1 KiB..1 GiB x4
  std::string sketch;          // a TACCL sketch file; taccl runs only when given
  formats::XmlDialect dialect = formats::XmlDialect::kExecutor;
  double time_limit_s = 10;  // per solver stage of sccl and taccl
  /// Method labels to leave out (e.g. "sccl"); a label is the method name, or "nccl_<algo>".
  std::vector<std::string> skip;
  std::function<void(const std::string& line)> progress;  // one line per stage; may be empty
  /// Threads compiling, verifying and simulating the variants (the library is thread-safe);
  /// 0 = std::thread::hardware_concurrency().
  int threads = 0;
};

/// One candidate's simulated time at one size.
struct TunedTime {
  std::string label;
  double time_us = 0;
};

/// The outcome at one size of the sweep.
struct TunedSize {
  int64_t bytes = 0;
  std::string winner;  // label of the fastest verified program (the ring on ties)
  double time_us = 0;
  double lower_bound_us = 0;
  double ring_time_us = 0;  // the nccl reference's ring (0 when it does not apply)
  /// Every simulated candidate's best variant at this size; variants whose lower bound
  /// (program_load) was above the best time already simulated at this size are left out.
  std::vector<TunedTime> times;
  int pruned = 0;  // variants not simulated at this size (their bound showed they lose)
  double ratio_to_bound() const { return lower_bound_us > 0 ? time_us / lower_bound_us : 0; }
};

/// A program serving a range of per-rank input sizes.
struct TuneEntry {
  int64_t min_bytes = 0;
  int64_t max_bytes = 0;       // 0 = unlimited (the last entry)
  std::string label;           // method (and chunking) that made it
  std::string file;            // XML file name inside the tuning directory
  std::vector<int64_t> sizes;  // the sweep sizes it won
  Program program;             // verified, min_bytes / max_bytes set to the range
};

/// The tuning table.
struct TuneResult {
  std::string topology;
  CollectiveKind kind = CollectiveKind::kAllGather;
  formats::XmlDialect dialect = formats::XmlDialect::kExecutor;
  std::vector<TunedSize> sizes;
  std::vector<TuneEntry> entries;  // ascending, ranges tiling [0, unlimited)
  int candidates = 0;              // verified (method, chunking, variant) programs compared
  int simulations = 0;             // (candidate, size) pairs simulated; the rest were pruned
  int reused = 0;                  // or took the times of a candidate with the same program
  double seconds = 0;
};

/// The bandwidth a program needs from its busiest link or switch port direction: a lower bound
/// on its simulated time that costs one pass over its steps (the tuner skips simulating a
/// variant whose bound is above the best time found at a size). In the simulator a lane of a
/// link moves at most 1 / beta bytes per us and a switch port direction 1 / port_beta, both
/// scaled by the protocol's beta factor, and every call pays launch_us; sends between ranks
/// without a direct connection are left out.
struct ProgramLoad {
  double launch_us = 0;
  int input_chunks = 1;          // a size is divided into this many chunks (as sim infers)
  double us_per_chunk_byte = 0;  // busiest resource: microseconds per byte of one chunk
  /// One threadblock's sends, which it runs one slice of one step at a time: per sending step
  /// and slice at least the smallest alpha, per byte at least the threadblock's own limit
  /// (Topology::threadblock_gbps), both scaled by the protocol. Only the threadblocks that no
  /// other one beats in both counts are kept (a few per program), the one with the most sending
  /// steps first.
  struct ThreadblockSends {
    int64_t steps = 0;   // sending steps
    int64_t chunks = 0;  // chunks sent
  };
  std::vector<ThreadblockSends> threadblocks;
  double step_alpha_us = 0;            // smallest alpha x the protocol's alpha factor
  double threadblock_us_per_byte = 0;  // 1 / threadblock_gbps x the protocol's beta factor
  int64_t slice_bytes = 1;  // the protocol's slice under sim::SimOptions{} (slices per chunk)
  /// The longest chain of sending steps one slice runs one after another, through threadblock
  /// order, cross-threadblock dependencies and receives waiting for their sends (a ring's
  /// 2(R-1) hops however its steps are spread over threadblocks).
  int64_t chain_sends = 0;
  /// The latency floor at any size: each sending step costs at least its route's alpha and
  /// ends when its transfer has landed (sim::simulate), so the longer of the threadblock with
  /// the most sending steps and the longest chain (chain_sends) takes at least that many x the
  /// topology's smallest alpha x the protocol's alpha factor.
  double latency_us() const;
  /// launch_us + the largest of us_per_chunk_byte x bytes / input_chunks, every kept
  /// threadblock's steps x slices x step_alpha_us + chunks x bytes / input_chunks x
  /// threadblock_us_per_byte, and latency_us(): <= sim::simulate(...).time_us with default
  /// SimOptions.
  double lower_bound_us(int64_t bytes) const;
};

/// The load of `program`'s sends on `topology`'s links and switch ports. `chain_sends`: the
/// program's longest chain of sends if known (the same in every protocol: a caller bounding
/// one program in several protocols passes the first load's), else followed here for programs
/// up to 4 M steps (0 above: the bound stays a bound).
ProgramLoad program_load(const Program& program, const Topology& topology,
                         std::optional<int64_t> chain_sends = std::nullopt);

/// from, from*factor, ... up to and including `to` (UserError unless 0 < from <= to, factor > 1).
std::vector<int64_t> size_sweep(int64_t from, int64_t to, int64_t factor);

/// Runs the tuner. UserError for an empty or unsorted size list, a collective none of the
/// methods makes, or a rank count the nccl reference cannot serve.
TuneResult tune(const TuneRequest& request);

/// The "ccsynth-tuning" document (docs/formats.md): topology, collective, per entry the range,
/// label, file and per-size time, bound and ratio; per size every candidate's time.
nlohmann::json tuning_json(const TuneResult& result);

/// Writes every entry's program as DIR/<file> and DIR/tuning.json (the directory is created).
/// UserError naming the path when it cannot be written.
void write_tuning_dir(const TuneResult& result, const std::string& dir);

/// Loads DIR/tuning.json's programs into `communicator` with their ranges; returns how many.
/// UserError naming the file and field for a missing or malformed table or program.
int load_tuning_dir(runtime::Communicator& communicator, const std::string& dir);

}  // namespace ccsynth::plan
