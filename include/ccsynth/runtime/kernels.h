#pragma once
// The data movement of MSCCL-IR steps, shared by the CPU runtime (cpu_executor.h) and the MPI
// runtime (mpi/mpi_executor.h) so that both execute every instruction, element type and
// reduction operator the same way (docs/runtime.md "How a program runs"):
// - reductions for every (DataType, ReduceOp) pair, one template instantiated per pair; integer
//   sums and products wrap modulo 2^bits (computed in the unsigned type), so they are exact and
//   independent of the reduction order; float16 and bfloat16 are reduced in float and rounded
//   back to nearest even after every operation, as a GPU kernel working on half values does;
// - how a run cuts chunks into slices, and what one slice of one step does to a rank's buffers
//   and to the message it receives or sends.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ccsynth/core/program.h"
#include "ccsynth/runtime/cpu_executor.h"
#include "ccsynth/runtime/data_type.h"

namespace ccsynth::runtime {

/// dst[i] = a[i] (op) b[i] for i < n elements of `type`. dst may equal a or b (then it is
/// updated in place), but must not partially overlap them.
void reduce_elements(DataType type, ReduceOp op, void* dst, const void* a, const void* b, size_t n);

/// How a run cuts every chunk into slices (the interpreter's pipelining loop): `slices` slices
/// of `slice_elems` elements, the last one possibly shorter.
struct SliceShape {
  int64_t chunk_elems = 0;
  int slices = 1;
  int64_t slice_elems = 0;
  size_t elem_bytes = 4;

  /// Elements of slice `slice` of one chunk (0 past the end).
  int64_t length(int64_t slice) const;
  /// Bytes of the message that carries slice `slice` of `count` chunks (pieces back to back).
  size_t message_bytes(int count, int64_t slice) const;
};

/// The slicing of a run of a `protocol` program with chunks of `chunk_elems` elements.
SliceShape slice_shape(Protocol protocol, int64_t chunk_elems, DataType dtype,
                       const ExecOptions& options);

/// Base addresses of one rank's input, output and scratch buffers, indexed by Buffer.
using RankBases = std::array<std::byte*, 3>;

/// Executes slice `slice` of `step` on the rank whose buffers start at `bases`: reads `in` (the
/// received message, for steps that receive), writes `out` (the message to send, for steps that
/// send; at least shape.message_bytes(step.count, slice) bytes) and the step's destination.
/// A message holds the slice of each of the step's `count` chunks back to back. For `s`, `rcs`
/// and `rrcs`, out may be null: the caller then sends the message from the step's source (`s`)
/// or destination (`rcs`, `rrcs`) memory itself (the MPI runtime's zero-copy sends).
void execute_slice(const Step& step, int64_t slice, const SliceShape& shape, DataType dtype,
                   ReduceOp op, const RankBases& bases, const std::byte* in, std::byte* out);

/// The dense id of the connection (src, dst, channel) in `conns`, appending it (src, dst and
/// channel set, the rest default) the first time: both runtimes pair a sending and a receiving
/// threadblock by peer and channel, one FIFO each. `Conn` has int members src, dst and channel.
template <class Conn>
int connection_id(std::map<std::tuple<int, int, int>, int>& ids, std::vector<Conn>& conns, int src,
                  int dst, int channel) {
  auto [it, inserted] =
      ids.emplace(std::make_tuple(src, dst, channel), static_cast<int>(conns.size()));
  if (inserted) {
    Conn& c = conns.emplace_back();
    c.src = src;
    c.dst = dst;
    c.channel = channel;
  }
  return it->second;
}

/// "gpu[r]/tb[t]/step[s]": how the runtimes' messages name a step.
std::string step_name(int rank, int tb, int step);
/// The head of a waiting step's line in a failure message: "gpu[r]/tb[t]/step[s] (type, slice k) ".
std::string waiting_step(int rank, int tb, int step, StepType type, int64_t slice);
/// What a step of slice `slice` waiting for its dependency `dep_step` of threadblock `dep_tb`
/// (same rank) waits for, given that threadblock's progress (finished step instances, slice-major
/// over `dep_steps` steps, `dep_total` in all).
std::string dependency_wait(int rank, int dep_tb, int dep_step, int64_t slice, int64_t dep_progress,
                            int dep_steps, int64_t dep_total);

/// The list of a failure message: "N threadblock(s)<whose> unfinished:" and one line per
/// unfinished threadblock i < count (`line(i)`, at most 16, then "... and M more").
std::string list_unfinished(size_t count, const std::function<bool(size_t)>& unfinished,
                            const std::function<std::string(size_t)>& line,
                            const std::string& whose = "");

}  // namespace ccsynth::runtime
