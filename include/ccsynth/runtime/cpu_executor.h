#pragma once
// The CPU runtime (docs/runtime.md): executes a Program (MSCCL-IR) for all its ranks in
// one process, as the MSCCL interpreter does on GPUs (MSCCLang sec. 6, fig. 5):
// - every rank's input and output buffers are caller memory, its scratch buffer is owned here;
// - every threadblock runs its steps in order, once per slice of a chunk (the interpreter's
//   outer pipelining loop), so the slices of a chunk flow through a pipeline;
// - a connection (src rank, dst rank, channel) is a bounded FIFO of `fifo_slots` slots, each
//   holding one slice message of a send; the receiving threadblock pops messages in order;
// - a step waits for its cross-threadblock dependency (dep_tb, dep_step) of the same slice.
// Threadblocks are resumable state machines (program counter + slice), advanced cooperatively by
// a scheduler loop on a small pool of worker threads, never one OS thread per threadblock, so
// programs with hundreds of threadblocks run on 2 cores. When no threadblock can progress and
// none is running the program is deadlocked: the run stops at once and the result names every
// waiting step. A wall-clock limit stops runaway runs the same way.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ccsynth/core/program.h"
#include "ccsynth/runtime/data_type.h"

namespace ccsynth::runtime {

/// One rank's buffers for a run: the base of the program's input buffer (`i`) and output
/// buffer (`o`), each at least gpu.input_chunks / gpu.output_chunks chunks long (null allowed
/// when the rank has none). In-place calls pass aliasing pointers (NCCL layout, see
/// core/program.h input_location): e.g. an in-place allgather passes output = recv and
/// input = recv + rank * input size. The scratch buffer (`s`) is allocated by the executor.
struct RankBuffers {
  void* input = nullptr;
  void* output = nullptr;
};

/// Options of one run.
struct ExecOptions {
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  /// Largest slice (data bytes of one FIFO slot per chunk of a step); 0 = the protocol's NCCL
  /// slot size: Simple 512 KiB, LL128 562.5 KiB, LL 32 KiB (same as sim::SimOptions).
  int64_t slice_bytes = 0;
  /// > 0: cut every chunk into exactly this many slices (at most one per element); overrides
  /// slice_bytes. Tests use it to exercise pipelining with small buffers.
  int slices = 0;
  /// Messages a connection buffers before a send blocks (NCCL_STEPS = 8).
  int fifo_slots = 8;
  /// Worker threads; 0 = min(hardware threads, threadblocks, 8).
  int workers = 0;
  /// Wall-clock limit of one run in seconds; the run fails with the waiting steps named.
  double timeout_s = 60.0;
  /// Record ExecResult::timeline (two clock reads per step instance); off by default.
  bool record_timeline = false;
};

/// One step instance as a run executed it (ExecOptions::record_timeline): wall-clock
/// microseconds from the start of the run, from when a worker took it to when its data moved.
struct ExecStep {
  int rank = 0;
  int threadblock = 0;  // index within the rank
  int step = 0;         // index within the threadblock
  int64_t slice = 0;
  double start_us = 0.0;
  double end_us = 0.0;
};

/// Outcome of one run. Failures of the program itself (deadlock, timeout, a receive whose
/// count differs from the matching send's, messages nobody received) are values: ok = false
/// and `error` says what happened and which steps were waiting for what.
struct ExecResult {
  bool ok = true;
  std::string error;
  double time_us = 0.0;            // wall-clock time of the run
  int slices = 0;                  // slices per chunk
  int64_t chunk_elems = 0;         // elements of one chunk
  int64_t step_instances = 0;      // steps x slices executed
  int workers = 0;                 // worker threads used
  std::vector<ExecStep> timeline;  // in completion order, with ExecOptions::record_timeline
};

/// A prepared program: validated once, then run any number of times on caller buffers. Not
/// thread-safe: one run at a time per executor.
class CpuExecutor {
 public:
  /// Validates the structure the interpreter relies on (rank ids, peers, one sending and one
  /// receiving threadblock per connection, steps that send or receive on threadblocks with that
  /// peer, offsets and counts within the buffer sizes, dependency targets); throws UserError
  /// (file = program name, field = "gpu[r]/tb[t]/step[s]") otherwise.
  explicit CpuExecutor(Program program);
  ~CpuExecutor();
  CpuExecutor(CpuExecutor&&) noexcept;
  CpuExecutor& operator=(CpuExecutor&&) noexcept;

  const Program& program() const;

  /// Checks the structure the constructor checks without preparing a run (the MPI runtime
  /// executes the same programs); throws the same UserErrors.
  static void validate(const Program& program);

  /// Runs the program once. `buffers` has one entry per rank; `chunk_elems` is the number of
  /// elements of one chunk (the per-rank input bytes / input chunks / element size). Throws
  /// UserError for a wrong number of buffers or a missing buffer a rank uses.
  ExecResult run(const std::vector<RankBuffers>& buffers, int64_t chunk_elems,
                 const ExecOptions& options = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The number of slices per chunk a run uses (see ExecOptions::slice_bytes and slices).
int slices_per_chunk(Protocol protocol, int64_t chunk_elems, DataType dtype,
                     const ExecOptions& options);

/// Throws UserError(owner, field, reason) when a run would allocate `bytes` (an estimate, as a
/// double so that huge requests cannot overflow) and that exceeds this machine's physical
/// memory: a clear refusal instead of std::bad_alloc or swapping.
void require_memory(double bytes, const std::string& owner, const std::string& field);

}  // namespace ccsynth::runtime
