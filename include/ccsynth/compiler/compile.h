#pragma once
// The compiler: Algorithm -> Program (docs/architecture.md sec. 1). The pipeline is one readable list of
// passes in compile.cc (docs/compiler.md maps each pass to MSCCLang sec. 4-5 and TACCL 6.2):
// buffer allocation + instruction generation, aggregation, channel assignment, connection
// pairing, fusion, threadblock assignment, dependency insertion, instances, limit checks.
// Programs are deadlock-free by construction: every threadblock runs its steps, and every
// connection carries its sends and receives, in one global order of the instructions
// (by algorithm step, then sends before receives, then op order).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/program.h"

namespace ccsynth::compiler {

/// Options of compile(). Limits default to the executor runtime (docs/formats.md "Runtime
/// limits"); front ends set them per dialect with plan::apply_runtime_limits (plan/limits.h).
struct CompileOptions {
  std::string name;   // program name; "" = the algorithm's name
  int instances = 1;  // TACCL 6.2 instances: each chunk split in N subchunks
  Protocol protocol = Protocol::kSimple;
  bool inplace = false;  // NCCL in-place buffers (core/program.h input_location)
  int64_t min_bytes = 0;
  int64_t max_bytes = 0;  // 0 = unlimited
  int max_channels = 32;
  int max_steps_per_threadblock = 64;    // the executor dialect's (plan::runtime_limits)
  int max_threadblocks_per_rank = 1024;  // the executor dialect's (plan::runtime_limits)
  int max_count = 71;                    // largest cnt of one step
  int fifo_slots = 8;     // messages a connection buffers (NCCL_STEPS); deadlock check
  bool aggregate = true;  // merge contiguous same-step transfers (MSCCLang 5.1)
  bool fuse = true;       // rcs / rrcs / rrs fusion (MSCCLang 4.3)
  /// Run a timed algorithm (TACCL, TACOS) in its start-time order, a threadblock per data
  /// arrival of a connection (compiler/schedule_order.h); no effect without start times.
  bool schedule_order = false;
};

/// Compiles `algorithm` into a Program. The algorithm is assumed correct
/// (verify::verify_algorithm); structurally impossible input (ranks/chunks out of range, a
/// rank reading a chunk it does not hold) and programs that cannot fit the limits throw
/// UserError.
Program compile(const Algorithm& algorithm, const CompileOptions& options = {});

/// The program compile() makes for NCCL's ring allgather (synth::nccl_ring, nccl_first_ring:
/// each of R rings forwards chunk k of every rank around all N >= 3 ranks on channel k), built
/// directly in O(N^2 R) instead of lowered and scheduled: per rank a threadblock per ring that
/// sends its chunk, receives and forwards N-2 chunks (fused rcs) and receives the last, and one
/// that copies its input to its output. compile() takes this path where it applies: the same
/// Program (test `Compile.RingAllgatherFastPathGivesTheCompiledProgram`); the nccl reference's
/// ring took 37 s to lower and compile in the 4096-rank mesh's `synth`. nullopt where the
/// algorithm is not such a ring or `options` ask for another program (instances, no fusion, in
/// place, start-time order, fewer than N steps per threadblock, a FIFO of one slot).
std::optional<Program> compile_ring_allgather(const Algorithm& algorithm,
                                              const CompileOptions& options);
/// Whether compile_ring_allgather(algorithm, options) builds a program (O(ops), nothing built).
bool compiles_as_ring_allgather(const Algorithm& algorithm, const CompileOptions& options);

/// What `error` (thrown by compile()) says is over the runtime limits (steps per threadblock,
/// threadblocks, channels), or "" where it is another error (input no options could compile).
std::string runtime_limits_violation(const UserError& error);

/// Why no compilation of `algorithm` with `options` can fit the step limit, known from the
/// algorithm alone, or "" when one may: a pair of ranks that sends in more different steps
/// than an instance's channels x max_steps_per_threadblock hold (a transfer carries the ops of
/// one step, and aggregation merges only those). One pass over the ops; compile() and a
/// Lowering check it before lowering (minutes at thousands of ranks).
std::string step_limit_shortfall(const Algorithm& algorithm, const CompileOptions& options);

/// An algorithm lowered to instructions (passes 0-2: start-time order, buffers and
/// instructions, gathering, aggregation) with the options that decide them: schedule order,
/// instances, channels, in place, aggregation and largest count (`matches`). Compilations that
/// differ only in what is decided later (fusion, FIFO depth, step and threadblock limits,
/// protocol, name, sizes) start from one Lowering: lowering is about a third of a compilation
/// at thousands of ranks.
class Lowering {
 public:
  /// Lowers `algorithm`, which must outlive the Lowering; throws UserError as compile() does.
  Lowering(const Algorithm& algorithm, const CompileOptions& options);
  ~Lowering();
  Lowering(Lowering&&) noexcept;
  Lowering& operator=(Lowering&&) noexcept;

  /// Whether a compilation with `options` may start from this lowering.
  bool matches(const CompileOptions& options) const;

 private:
  friend Program compile(const Lowering& lowering, const CompileOptions& options);
  struct State;
  std::unique_ptr<State> state_;
};

/// compile() from a lowering made with matching options (Lowering::matches; checked).
/// Compilations from one lowering may be called from several threads; they run one at a time.
Program compile(const Lowering& lowering, const CompileOptions& options);

}  // namespace ccsynth::compiler
