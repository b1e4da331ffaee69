#pragma once
// Running a Program on freshly allocated NCCL-layout buffers: random inputs, timing over
// iterations, and the correctness check against a directly computed reference of the
// collective (docs/runtime.md "Checking"). Used by `ccsynth run`, the tests and the bench.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ccsynth/core/collective.h"
#include "ccsynth/core/program.h"
#include "ccsynth/runtime/cpu_executor.h"

namespace ccsynth::runtime {

/// Options of run_program.
struct HarnessOptions {
  ExecOptions exec;
  /// In-place call (NCCL layout: one buffer per rank, the smaller of input and output aliased
  /// inside the larger one, see core/program.h input_location). Requires program.inplace;
  /// out-of-place requires program.outofplace.
  bool inplace = false;
  bool check = false;  // compare the outputs of the first run with the reference
  int warmup = 0;      // untimed runs before the timed ones
  int iters = 1;       // timed runs
  uint64_t seed = 1;   // of the random inputs
  /// The collective the program implements; nullptr = collective_of(program). Custom
  /// programs without a collective can run (buffers sized from the program) but not be checked.
  const Collective* collective = nullptr;
};

/// Outcome of run_program. ok = false when a run failed (deadlock, timeout, count mismatch:
/// `message` names the waiting steps) or the check found wrong outputs (`message` names the
/// first wrong elements).
struct HarnessResult {
  bool ok = true;
  std::string message;
  int64_t bytes = 0;        // per-rank input bytes
  int64_t chunk_elems = 0;  // elements of one chunk
  int slices = 0;
  int workers = 0;
  double time_us = 0.0;      // mean over the timed runs
  double min_time_us = 0.0;  // fastest timed run
  bool checked = false;
  int64_t checked_elements = 0;  // output elements compared
  int64_t mismatches = 0;
  double max_error = 0.0;  // largest |got - expected| among floating-point elements
  /// The last run's steps, with HarnessOptions::exec.record_timeline (ExecResult::timeline).
  std::vector<ExecStep> timeline;
};

/// Elements of one chunk when every rank's input is `bytes` bytes of `dtype` split into
/// `input_chunks` chunks; throws UserError naming `field` when bytes is not a positive multiple
/// of input_chunks * size_of(dtype).
int64_t chunk_elements(int64_t bytes, int input_chunks, DataType dtype,
                       const std::string& field = "bytes");

/// Runs `program` with `bytes` per-rank input bytes (apis.md size convention). Throws UserError
/// for bad input (bytes not divisible, an in-place request for an out-of-place-only program,
/// a check of a custom program without a collective, a program whose ranks differ from the
/// collective's).
HarnessResult run_program(const Program& program, int64_t bytes, const HarnessOptions& options);
/// The same with an already prepared executor (reuses its scratch and FIFO memory).
HarnessResult run_program(CpuExecutor& executor, int64_t bytes, const HarnessOptions& options);

/// The buffers of a run for the ranks that live in this process (all ranks for run_program, the
/// ranks of one process for the MPI runtime): NCCL-layout send and receive buffers, the seeded
/// random inputs of the check (the same in every process, seeded by rank) and the comparison of
/// the local ranks' outputs with the collective's reference.
class RunBuffers {
 public:
  /// Allocates the buffers of `local_ranks` (empty = every rank) for `bytes` per-rank input
  /// bytes. Throws UserError as run_program does for bad input.
  RunBuffers(const Program& program, int64_t bytes, const HarnessOptions& options,
             const std::vector<int>& local_ranks = {});
  ~RunBuffers();
  RunBuffers(RunBuffers&&) noexcept;
  RunBuffers& operator=(RunBuffers&&) noexcept;

  /// One entry per rank of the program; null pointers for ranks that are not local.
  const std::vector<RankBuffers>& views() const;
  /// Elements of one chunk.
  int64_t chunk_elems() const;
  /// Fills the local ranks' inputs with the seeded random values and their outputs with a NaN /
  /// all-ones pattern (needs options.check).
  void fill_check_inputs();
  /// Compares the local ranks' outputs with the reference: adds to result.checked_elements,
  /// mismatches and max_error, sets result.checked, and on mismatches ok = false and a message
  /// naming the first wrong elements.
  void check_outputs(HarnessResult& result);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// One run on RunBuffers::views(); its time_us is the time to count for the run.
using RunOnce = std::function<ExecResult()>;
/// Called after the check, to combine the checks of several processes (may change `result`).
using AfterCheck = std::function<void(HarnessResult& result)>;

/// The harness loop of run_program: with options.check, fills the inputs, runs once and
/// compares; then options.warmup untimed and options.iters timed runs (mean and fastest).
/// Stops at the first failed run or check.
HarnessResult run_iterations(RunBuffers& buffers, int64_t bytes, const HarnessOptions& options,
                             const RunOnce& run_once, const AfterCheck& after_check = {});

/// Copy bandwidth of this machine: the best of `iters` std::memcpy calls of `bytes` bytes
/// between two buffers (after one untimed warm-up copy), in GB/s (1e9 bytes copied per second).
double measure_memcpy_gbps(int64_t bytes, int iters = 10);

}  // namespace ccsynth::runtime
