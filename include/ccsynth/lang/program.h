#pragma once
// MSCCLang's chunk-oriented DSL (MSCCLang sec. 3 and 5.1; docs/lang.md). A program names a
// collective, then moves chunks between the input, output and named scratch buffers of the
// ranks with chunk(rank, buffer, index, count), ChunkRef::copy and ChunkRef::reduce. Every
// operation is checked when it runs: only the latest reference to a location may be used (sec.
// 3.3, "data race free by construction"), chunks must be initialized, reductions must not count
// a contribution twice, and scheduling directives (channel, sendtb, recvtb, parallelize) must
// not contradict each other. The program is traced (sec. 4.1) into the Chunk DAG
// (`operations()`) and from there into an Algorithm (`to_algorithm()`), which the compiler
// turns into MSCCL-IR like any synthesized algorithm.
//
//   DslProgram p(make_collective(CollectiveKind::kAllGather, 4), {.name = "ring"});
//   for (int r = 0; r < 4; ++r) {
//     ChunkRef c = p.chunk(r, Buffer::input(), 0);
//     c = c.copy(r, Buffer::output(), r);
//     for (int s = 1; s < 4; ++s) c = c.copy((r + s) % 4, Buffer::output(), r);
//   }
//   Algorithm algorithm = p.to_algorithm();  // throws UserError if the postcondition fails

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/collective.h"
#include "ccsynth/core/program.h"

namespace ccsynth::lang {

/// Which of a rank's buffers a reference points into (MSCCLang sec. 3.1).
enum class BufferKind { kInput, kOutput, kScratch };

/// A buffer of every rank: the input, the output, or a scratch buffer told apart by name (a
/// scratch buffer's size is the highest index the program uses, plus one).
struct Buffer {
  BufferKind kind = BufferKind::kInput;
  std::string name = "input";

  static Buffer input() { return {BufferKind::kInput, "input"}; }
  static Buffer output() { return {BufferKind::kOutput, "output"}; }
  static Buffer scratch(std::string name = "scratch") {
    return {BufferKind::kScratch, std::move(name)};
  }
  /// "input"/"in"/"i", "output"/"out"/"o"; any other non-empty name is a scratch buffer.
  static Buffer parse(const std::string& name);

  auto operator<=>(const Buffer&) const = default;
};

std::string to_string(const Buffer& buffer);

/// Scheduling directives of one copy or reduce (MSCCLang sec. 5.1): the channel of its
/// connection, the threadblock that sends on the source rank and the one that receives on the
/// destination rank. -1 leaves the choice to the compiler.
struct Directives {
  Directives(int channel_ = -1, int sendtb_ = -1, int recvtb_ = -1)  // NOLINT: {ch}, {ch, tb}
      : channel(channel_), sendtb(sendtb_), recvtb(recvtb_) {}
  int channel;
  int sendtb;
  int recvtb;
};

/// The largest channel and threadblock a directive may name (the executor runtime's limits,
/// docs/formats.md "Runtime limits").
inline constexpr int kMaxChannels = 32;
inline constexpr int kMaxThreadblocks = 1024;
/// Upper bound on any buffer index a program may use, so a typo cannot allocate without end.
inline constexpr int kMaxBufferIndex = 1 << 20;

/// One copy or reduce as traced: a node of the Chunk DAG (MSCCLang sec. 4.1).
struct Operation {
  OpKind kind = OpKind::kCopy;
  int src_rank = 0;
  Buffer src_buffer;
  int src_index = 0;
  int dst_rank = 0;
  Buffer dst_buffer;
  int dst_index = 0;
  int count = 1;
  Directives directives;
  int parallel = 1;             // the enclosing parallelize() factors, multiplied
  std::string where;            // the program line that issued it (file:line)
  std::vector<int> depends_on;  // earlier operations it must follow (true and false deps)

  bool remote() const { return src_rank != dst_rank; }
};

std::string describe(const Operation& op);

/// Options of a DSL program.
struct ProgramOptions {
  std::string name = "dsl";
  std::string topology;  // name of the topology it is written for (informational)
  int instances = 1;     // the compiler's instances (TACCL 6.2; MSCCLang's `instances`)
  Protocol protocol = Protocol::kSimple;
  bool inplace = false;  // input and output alias (core/program.h input_location)
};

class DslProgram;
struct LocationKey;  // src/lang/state.h

/// A reference to `count` consecutive chunks of one buffer of one rank, as they were when the
/// reference was made. Only the latest reference to a location may be used; using one whose
/// locations were written since is a UserError naming both operations.
class ChunkRef {
 public:
  int rank() const { return rank_; }
  const Buffer& buffer() const { return buffer_; }
  int index() const { return index_; }
  int count() const { return count_; }

  /// Copies the referenced chunks to (rank, buffer, index..index+count-1); returns the new
  /// reference there (MSCCLang table 1).
  ChunkRef copy(int rank, const Buffer& buffer, int index, const Directives& directives = {},
                std::source_location where = std::source_location::current()) const;
  /// Reduces `other` (same count) into these chunks, in place; returns the new reference here.
  ChunkRef reduce(const ChunkRef& other, const Directives& directives = {},
                  std::source_location where = std::source_location::current()) const;

  /// copy / reduce with the program line given as text (for the Python bindings).
  ChunkRef copy_at(const std::string& where, int rank, const Buffer& buffer, int index,
                   const Directives& directives = {}) const;
  ChunkRef reduce_at(const std::string& where, const ChunkRef& other,
                     const Directives& directives = {}) const;

  /// "rank 3 input[2..3]".
  std::string describe() const;

 private:
  friend class DslProgram;
  ChunkRef(DslProgram* program, int rank, Buffer buffer, int index, int count,
           std::vector<uint64_t> versions)
      : program_(program),
        rank_(rank),
        buffer_(std::move(buffer)),
        index_(index),
        count_(count),
        versions_(std::move(versions)) {}

  DslProgram* program_;
  int rank_;
  Buffer buffer_;
  int index_;
  int count_;
  std::vector<uint64_t> versions_;  // write version of each location when the ref was made
};

/// A DSL program under construction: the collective it implements, the buffers' contents as
/// the program runs, and the traced operations. Not copyable (references point into it).
class DslProgram {
 public:
  /// Validates `collective` (core's validate()) and the options (UserError).
  explicit DslProgram(Collective collective, ProgramOptions options = {});
  ~DslProgram();
  DslProgram(const DslProgram&) = delete;
  DslProgram& operator=(const DslProgram&) = delete;

  /// A reference to the chunks now at (rank, buffer, index..index+count-1); UserError when a
  /// location is out of range or uninitialized (MSCCLang table 1).
  ChunkRef chunk(int rank, const Buffer& buffer, int index, int count = 1,
                 std::source_location where = std::source_location::current());
  ChunkRef chunk_at(const std::string& where, int rank, const Buffer& buffer, int index,
                    int count = 1);

  /// Operations issued until the matching end_parallelize() run as `factor` parallel
  /// instances, each on 1/factor of every chunk, on disjoint channels (MSCCLang sec. 5.1).
  void begin_parallelize(int factor, const std::string& where = "");
  void end_parallelize();

  /// RAII form of begin/end_parallelize: `{ auto scope = p.parallelize(2); ... }`.
  class ParallelScope {
   public:
    ~ParallelScope() {
      if (program_) program_->end_parallelize();
    }
    ParallelScope(ParallelScope&& other) noexcept : program_(other.program_) {
      other.program_ = nullptr;
    }
    ParallelScope(const ParallelScope&) = delete;
    ParallelScope& operator=(const ParallelScope&) = delete;
    ParallelScope& operator=(ParallelScope&&) = delete;

   private:
    friend class DslProgram;
    explicit ParallelScope(DslProgram* program) : program_(program) {}
    DslProgram* program_;
  };
  [[nodiscard]] ParallelScope parallelize(
      int factor, std::source_location where = std::source_location::current());

  const Collective& collective() const { return collective_; }
  const ProgramOptions& options() const { return options_; }
  /// The traced operations (the Chunk DAG's nodes in program order, with their edges).
  const std::vector<Operation>& operations() const { return operations_; }
  /// Chunks of each scratch buffer the program uses (highest index + 1), by name.
  std::map<std::string, int> scratch_sizes() const;

  /// UserError naming the first output slot that does not hold what the collective's
  /// postcondition asks for; returns normally when every slot does.
  void check() const;
  /// check(), then the Algorithm the compiler lowers (see docs/lang.md "Tracing"): one
  /// ChunkOp per remote copy or reduce (split where its chunks are not consecutive), in steps
  /// from the Chunk DAG's dependencies, with the directives as channel and threadblock hints.
  /// parallelize(N) refines every chunk into lcm(N...) sub-chunks, so the Algorithm's collective
  /// has that many more chunks per rank.
  Algorithm to_algorithm() const;

 private:
  friend class ChunkRef;
  struct State;

  std::vector<LocationKey> keys_of(int rank, const Buffer& buffer, int index, int count,
                                   const std::string& where, const std::string& what) const;
  ChunkRef make_ref(int rank, const Buffer& buffer, int index,
                    const std::vector<LocationKey>& keys);
  int parallel_factor() const;  // the enclosing parallelize() factors, multiplied
  ChunkRef record(OpKind kind, const ChunkRef& src, const ChunkRef& dst_or_target, int dst_rank,
                  const Buffer& dst_buffer, int dst_index, const Directives& directives,
                  const std::string& where);
  void check_directives(const Operation& op);
  void bind_threadblock(const Operation& op, int rank, int tb, int peer, bool send, int channel);

  Collective collective_;
  ProgramOptions options_;
  std::vector<Operation> operations_;
  std::vector<int> parallel_stack_;
  std::unique_ptr<State> state_;
};

/// The collective with every chunk cut into `factor` sub-chunks: chunk k becomes k*factor+j
/// and buffer slot i becomes i*factor+j (j < factor). For a built-in collective this is the
/// same collective with `factor` times the chunks per rank.
Collective refine(const Collective& collective, int factor);

/// "file:line" of a source location (file name without its directories).
std::string location_text(const std::source_location& where);

}  // namespace ccsynth::lang
