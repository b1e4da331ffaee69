#pragma once
// The Communicator API over MPI (docs/mpi.md "Library API"): one rank per process of an MPI
// communicator, one buffer per process per call (as NCCL). Like runtime::Communicator and the
// MSCCL runtime, a call runs the first loaded program whose collective, root, size range,
// in-place-ness and chunking match (runtime::ProgramSelector); when none matches it calls the
// matching MPI collective (MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Alltoall,
// MPI_Bcast, MPI_Reduce), with MPI's own algorithms; float16 and bfloat16 reductions use an
// MPI_Op made from the runtime's kernels. Counts and the in-place convention follow NCCL (see
// runtime/communicator.h). Every call is collective: all processes call it with the same
// collective, count, type and root.

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "ccsynth/core/program.h"
#include "ccsynth/runtime/communicator.h"
#include "ccsynth/runtime/cpu_executor.h"
#include "ccsynth/runtime/data_type.h"

namespace ccsynth::mpi {

/// A communicator over an MPI communicator running loaded MSCCL-IR programs.
class Communicator {
 public:
  /// Duplicates `comm` (collective). `exec` supplies the run options of loaded programs (slice
  /// size, FIFO slots, timeout); its dtype and op are replaced by each call's.
  explicit Communicator(MPI_Comm comm, runtime::ExecOptions exec = {});
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// This process's rank and the number of ranks (processes).
  int rank() const { return rank_; }
  int num_ranks() const { return num_ranks_; }

  /// Loads a program for its collective, in-place flags and size range [program.min_bytes,
  /// program.max_bytes] (collective). Throws UserError when its ngpus differs from the
  /// communicator's size or it is structurally broken. Returns its index.
  int load(Program program);
  /// The same with an explicit size range overriding the program's.
  int load(Program program, int64_t min_bytes, int64_t max_bytes);
  int num_programs() const;

  /// Disables (or re-enables) the MPI fallback; a call no loaded program matches then throws.
  void set_fallback(bool enabled) { fallback_ = enabled; }

  void allreduce(const void* send, void* recv, size_t count, runtime::DataType dtype,
                 runtime::ReduceOp op);
  void allgather(const void* send, void* recv, size_t count, runtime::DataType dtype);
  void reducescatter(const void* send, void* recv, size_t count, runtime::DataType dtype,
                     runtime::ReduceOp op);
  void alltoall(const void* send, void* recv, size_t count, runtime::DataType dtype);
  void broadcast(const void* send, void* recv, size_t count, runtime::DataType dtype, int root);
  void reduce(const void* send, void* recv, size_t count, runtime::DataType dtype,
              runtime::ReduceOp op, int root);

  /// What the last call ran: a program's name or "MPI_Allreduce", "MPI_Allgather", ...
  const runtime::CallInfo& last_call() const { return last_; }

 private:
  struct Impl;
  void call(CollectiveKind kind, const void* send, void* recv, size_t count,
            runtime::DataType dtype, runtime::ReduceOp op, int root);
  void call_mpi(CollectiveKind kind, const void* send, void* recv, size_t count,
                runtime::DataType dtype, runtime::ReduceOp op, int root, bool inplace);

  int rank_ = 0;
  int num_ranks_ = 1;
  bool fallback_ = true;
  runtime::CallInfo last_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ccsynth::mpi
