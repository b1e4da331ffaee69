#pragma once
// run_program over MPI (docs/mpi.md): the CPU runtime's harness (runtime/harness.h: NCCL-layout
// buffers, seeded inputs, warm-up and timed runs, the reference check) with every process
// holding the buffers of its own ranks and checking them, and the results combined.

#include <cstdint>

#include "ccsynth/mpi/mpi_executor.h"
#include "ccsynth/runtime/harness.h"

namespace ccsynth::mpi {

/// Runs the executor's program with `bytes` per-rank input bytes; every process of the
/// communicator calls it with the same arguments. Each process fills and checks its own ranks
/// (the seeded inputs are the same as the CPU runtime's), and the results are combined: ok,
/// checked_elements, mismatches and max_error over all processes, the time of a run is the
/// slowest process's (each run starts after a barrier), and process 0's message lists every
/// process's wrong elements. A failed run returns at once with this process's waiting steps
/// (executor.failed() is then true; end the job with abort_job). Throws UserError for bad input
/// as runtime::run_program does (in every process alike).
runtime::HarnessResult run_program(MpiExecutor& executor, int64_t bytes,
                                   const runtime::HarnessOptions& options);

}  // namespace ccsynth::mpi
