#pragma once
// An MSCCL-like library API over the CPU runtime (docs/runtime.md "Library API"). One
// Communicator holds all ranks of one process-local "cluster"; since every rank lives in this
// process, each call takes one buffer pointer per rank (send[r], recv[r]) instead of one buffer
// per process. Like the MSCCL runtime, a call runs the first loaded program whose collective,
// rank count, root, size range and in-place-ness match and whose chunking divides the buffer,
// and otherwise falls back to a built-in program supplied by set_builtin_programs() (the planner's
// plan::make_communicator() supplies the ring baseline, chain for broadcast/reduce when no ring
// applies; the runtime itself depends on core only), or a direct host implementation when there
// is none or the count cannot be split into its chunks.
//
// Counts and in-place calls follow NCCL: allreduce/broadcast/reduce move `count` elements per
// rank; allgather sends `count` and receives R * count; reducescatter sends R * count and
// receives `count`; alltoall sends and receives R * count (`count` per peer). A call is in-place
// when every rank passes send[r] == recv[r] (allgather: send[r] == recv[r] + r * count elements;
// reducescatter: recv[r] == send[r] + r * count elements). Send buffers are read-only for
// out-of-place programs; an in-place program writes through the aliased buffer. Null pointers
// are allowed where NCCL ignores the buffer (broadcast's non-root send, reduce's non-root recv).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ccsynth/core/program.h"
#include "ccsynth/runtime/cpu_executor.h"
#include "ccsynth/runtime/data_type.h"

namespace ccsynth::runtime {

/// What MSCCL's program selection looks at in a loaded program: its collective, root, in-place
/// flags, per-rank input size range and chunking (shared by this Communicator and the MPI one).
struct ProgramSelector {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  int root = 0;
  bool inplace = false;
  bool outofplace = true;
  int64_t min_bytes = 0;
  int64_t max_bytes = 0;  // 0 = unlimited
  int input_chunks = 1;

  /// The selector of `program` with the size range [min_bytes, max_bytes]; throws UserError for
  /// an invalid range or a program whose collective is not a built-in one.
  static ProgramSelector of(const Program& program, int64_t min_bytes, int64_t max_bytes);
  /// True when a call of `kind` (with `root`), in-place or not, of `bytes` per-rank input bytes
  /// of elements of `elem_bytes` bytes can run the program.
  bool matches(CollectiveKind call_kind, int call_root, bool call_inplace, int64_t bytes,
               size_t elem_bytes) const;
};

/// True for collectives with a root (broadcast, reduce, gather, scatter).
bool is_rooted(CollectiveKind kind);
/// Per-rank input bytes of a call of `count` elements (NCCL counts, see above) on `num_ranks`.
int64_t call_input_bytes(CollectiveKind kind, size_t count, size_t elem_bytes, int num_ranks);
/// NCCL's in-place rule for rank `rank`'s buffers, `block_bytes` = count * element size
/// (allgather: send == recv + rank * block; reducescatter: recv == send + rank * block; others:
/// send == recv). Null pointers are never in-place.
bool is_inplace_call(CollectiveKind kind, const void* send, const void* recv, int rank,
                     size_t block_bytes);

/// What the last collective call ran.
struct CallInfo {
  std::string algorithm;  // the program's name, "builtin ring", "builtin chain" or "builtin direct"
  int program = -1;       // index returned by load(), -1 for a built-in algorithm
  bool inplace = false;
  int64_t bytes = 0;  // per-rank input bytes used for the selection
  ExecResult exec;    // the executor's result (empty for the direct fallback)
};

/// Makes the built-in program for a collective kind, rank count, root and in-place flag, or
/// nullopt when there is none (the call then runs the direct host implementation).
using BuiltinPrograms = std::function<std::optional<Program>(CollectiveKind kind, int num_ranks,
                                                             int root, bool inplace)>;

/// A process-local communicator of `num_ranks` ranks running loaded MSCCL-IR programs.
class Communicator {
 public:
  /// `exec` supplies the run options (slice size, FIFO slots, workers, timeout); its dtype and
  /// op are replaced by each call's. Throws UserError for num_ranks < 1.
  explicit Communicator(int num_ranks, ExecOptions exec = {});
  ~Communicator();
  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;

  int num_ranks() const { return num_ranks_; }

  /// Loads a program for its collective and in-place flags (program.inplace / outofplace) and
  /// the per-rank input size range [program.min_bytes, program.max_bytes] (max 0 = unlimited).
  /// Returns its index. Throws UserError when the program's ngpus differs from num_ranks or it
  /// is structurally broken (see CpuExecutor).
  int load(Program program);
  /// The same with an explicit size range overriding the program's.
  int load(Program program, int64_t min_bytes, int64_t max_bytes);
  /// Number of loaded programs.
  int num_programs() const;

  /// Enables or disables the built-in fallback (default on); without it a call no loaded
  /// program matches throws UserError.
  void set_fallback(bool enabled) { fallback_ = enabled; }
  /// Sets what makes the built-in programs of the fallback (none by default: the direct host
  /// implementation runs); programs made earlier are dropped.
  void set_builtin_programs(BuiltinPrograms make);

  void allreduce(const std::vector<const void*>& send, const std::vector<void*>& recv, size_t count,
                 DataType dtype, ReduceOp op);
  void allgather(const std::vector<const void*>& send, const std::vector<void*>& recv, size_t count,
                 DataType dtype);
  void reducescatter(const std::vector<const void*>& send, const std::vector<void*>& recv,
                     size_t count, DataType dtype, ReduceOp op);
  void alltoall(const std::vector<const void*>& send, const std::vector<void*>& recv, size_t count,
                DataType dtype);
  void broadcast(const std::vector<const void*>& send, const std::vector<void*>& recv, size_t count,
                 DataType dtype, int root);
  void reduce(const std::vector<const void*>& send, const std::vector<void*>& recv, size_t count,
              DataType dtype, ReduceOp op, int root);

  /// What the last call ran.
  const CallInfo& last_call() const { return last_; }

 private:
  struct Impl;
  void call(CollectiveKind kind, const std::vector<const void*>& send,
            const std::vector<void*>& recv, size_t count, DataType dtype, ReduceOp op, int root);

  int num_ranks_ = 0;
  bool fallback_ = true;
  CallInfo last_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ccsynth::runtime
