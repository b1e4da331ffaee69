#pragma once
// The MPI runtime (docs/mpi.md): executes a Program (MSCCL-IR) with its ranks spread over the
// processes of an MPI communicator, one rank per process or, when the program has more ranks
// than there are processes, a block of consecutive ranks per process. Every process executes the
// threadblocks of its ranks exactly as the CPU runtime does (runtime/kernels.h: the same steps,
// slicing, element types and reduction operators), with the connections of the program mapped
// to MPI point-to-point messages:
// - a connection (src rank, dst rank, channel) is one MPI tag on a private duplicate of the
//   communicator; its messages (one slice of one send step each) arrive in order (MPI's
//   non-overtaking rule);
// - the sender has at most `fifo_slots` sends in flight per connection and the receiver at most
//   `fifo_slots` posted receives, like the FIFOs of the CPU runtime;
// - one thread per process advances all its threadblocks with nonblocking sends and receives,
//   so the threadblocks of a rank progress together; dependencies are honoured per slice.
// A run that cannot finish (a deadlocked program, a process that stopped answering) is ended by
// a watchdog (ExecOptions::timeout_s): the process names its waiting steps and tells every other
// process, which then stop too and name theirs; abort_job() then ends the job.

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "ccsynth/core/program.h"
#include "ccsynth/runtime/cpu_executor.h"

namespace ccsynth::mpi {

/// Which process runs which ranks: `num_ranks` ranks in blocks of consecutive ranks over
/// `num_processes` processes (rank r on process r * P / R, rounded down).
struct Placement {
  int num_ranks = 1;
  int num_processes = 1;

  /// Throws UserError (field "ngpus") when there are fewer ranks than processes.
  Placement(int ranks, int processes);
  /// The process that runs `rank`.
  int process_of(int rank) const;
  /// The ranks process `process` runs, in increasing order.
  std::vector<int> ranks_of(int process) const;
  /// A sentence for the user, e.g. "8 ranks on 4 processes, 2 ranks per process".
  std::string describe() const;
};

/// A prepared program over an MPI communicator. Constructing, running and destroying it are
/// collective: every process of the communicator does them in the same order.
class MpiExecutor {
 public:
  /// Validates the program as the CPU runtime does (CpuExecutor::validate) and checks that the
  /// messages of every connection match (the k-th send of a slice has the count of the k-th
  /// receive); throws UserError naming gpu[r]/tb[t]/step[s] otherwise, in every process alike.
  /// Duplicates `comm` (its traffic never mixes with the caller's).
  MpiExecutor(Program program, MPI_Comm comm);
  ~MpiExecutor();
  MpiExecutor(const MpiExecutor&) = delete;
  MpiExecutor& operator=(const MpiExecutor&) = delete;

  const Program& program() const;
  const Placement& placement() const;
  /// The ranks this process runs.
  const std::vector<int>& local_ranks() const;
  /// This process's index in the communicator.
  int process() const;
  /// The executor's duplicate of the communicator (the harness synchronizes on it).
  MPI_Comm communicator() const;

  /// Runs the program once. `buffers` has one entry per rank of the program; only the local
  /// ranks' entries are used. A failed run (timeout, another process's failure) returns
  /// ok = false with the local waiting steps in `error` after telling the other processes;
  /// the executor then refuses further runs (call abort_job). time_us is this process's time.
  runtime::ExecResult run(const std::vector<runtime::RankBuffers>& buffers, int64_t chunk_elems,
                          const runtime::ExecOptions& options = {});
  /// True after a failed run.
  bool failed() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// MPI_Init and MPI_Finalize around a program that has not initialized MPI itself (the CLI);
/// does nothing when MPI is already initialized.
class Session {
 public:
  Session(int* argc, char*** argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

 private:
  bool owned_ = false;
};

/// Ends every process of the job after a failed run: waits `grace_s` seconds so that the other
/// processes (told of the failure) can print what they were waiting for, then MPI_Abort(code).
[[noreturn]] void abort_job(MPI_Comm comm, int code, double grace_s = 0.5);

}  // namespace ccsynth::mpi
