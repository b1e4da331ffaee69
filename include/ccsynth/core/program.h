#pragma once
// The Program IR (docs/architecture.md sec. 3): MSCCL-IR as the runtimes execute it. Per rank: buffer
// sizes in chunks and threadblocks; a threadblock has one send peer, one receive peer and a
// channel, and runs its steps in order. Field meanings follow docs/formats.md sec. 5
// exactly; the XML reader and writer in `formats` map one to one onto these types.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "ccsynth/core/collective.h"

namespace ccsynth {

/// A rank-local buffer: input 'i', output 'o', scratch 's'. One byte, as StepType: a program
/// holds a step per transfer (33 M at 4096 ranks).
enum class Buffer : uint8_t { kInput, kOutput, kScratch };

/// Instruction types of MSCCL-IR (docs/formats.md, `<step>` table).
enum class StepType : uint8_t {
  kSend,                // s
  kRecv,                // r
  kRecvCopySend,        // rcs
  kRecvReduceSend,      // rrs
  kRecvReduceCopy,      // rrc
  kRecvReduceCopySend,  // rrcs
  kCopy,                // cpy
  kReduce,              // re
  kNop,                 // nop
};

/// Communication protocol of the runtime (case-sensitive in XML).
enum class Protocol { kSimple, kLL, kLL128 };

char to_char(Buffer buffer);                     // 'i', 'o', 's'
std::string to_string(StepType type);            // "s", "r", "rcs", ...
std::string_view step_type_name(StepType type);  // to_string without a copy
std::string to_string(Protocol protocol);        // "Simple", "LL", "LL128"
/// Parsers return nullopt for unknown text; callers turn that into a UserError with context.
std::optional<Buffer> parse_buffer(const std::string& text);
std::optional<StepType> parse_step_type(const std::string& text);
std::optional<Protocol> parse_protocol(const std::string& text);

/// True for types that receive from the threadblock's recv peer (r, rcs, rrs, rrc, rrcs).
bool receives(StepType type);
/// True for types that send to the threadblock's send peer (s, rcs, rrs, rrcs).
bool sends(StepType type);
/// True for types that reduce (rrs, rrc, rrcs, re).
bool reduces(StepType type);
/// True for types that read their src operand locally (s, rrs, rrc, rrcs, cpy, re).
bool reads_src(StepType type);
/// True for types that write their dst operand locally (r, rcs, rrc, rrcs, cpy, re).
bool writes_dst(StepType type);

/// A chunk position in a rank's buffers.
struct BufferRef {
  Buffer buffer = Buffer::kInput;
  int index = 0;

  auto operator<=>(const BufferRef&) const = default;
};

/// One instruction. Unused src/dst are (kInput, -1) / (kOutput, -1) as in the XML. The one-byte
/// fields come first: 24 bytes (a 4096-rank program has 33 M steps).
struct Step {
  StepType type = StepType::kNop;
  Buffer src_buffer = Buffer::kInput;
  Buffer dst_buffer = Buffer::kOutput;
  bool has_dep = false;  // another step waits on this one
  int src_offset = -1;
  int dst_offset = -1;
  int count = 1;      // contiguous chunks; 0 for nop
  int dep_tb = -1;    // threadblock on the same rank this step waits for, or -1
  int dep_step = -1;  // index of that threadblock's step, or -1

  bool operator==(const Step&) const = default;
};
static_assert(sizeof(Step) == 24);

/// A threadblock: at most one send peer and one receive peer (-1 for none) on one channel.
struct Threadblock {
  int id = 0;
  int send_peer = -1;
  int recv_peer = -1;
  int channel = 0;
  std::vector<Step> steps;

  bool operator==(const Threadblock&) const = default;
};

/// One rank's part of a program.
struct GpuProgram {
  int rank = 0;
  int input_chunks = 0;
  int output_chunks = 0;
  int scratch_chunks = 0;
  std::vector<Threadblock> threadblocks;

  bool operator==(const GpuProgram&) const = default;
  /// Size of `buffer` in chunks.
  int buffer_chunks(Buffer buffer) const;
};

/// A whole program (`<algo>`). Byte sizes follow the executor's convention: [min, max],
/// 0 = unlimited max.
struct Program {
  std::string name;
  CollectiveKind collective = CollectiveKind::kAllGather;
  int root = 0;  // for rooted collectives; not part of the XML
  Protocol protocol = Protocol::kSimple;
  int num_channels = 1;     // 1 + the largest channel used
  int chunks_per_loop = 1;  // nchunksperloop
  int num_ranks = 0;        // ngpus
  bool inplace = false;
  bool outofplace = true;
  int64_t min_bytes = 0;
  int64_t max_bytes = 0;  // 0 = unlimited
  int num_threads = 0;    // classic nthreads; 0 = runtime default
  std::vector<GpuProgram> gpus;

  bool operator==(const Program&) const = default;
  /// Total number of steps over all ranks and threadblocks.
  int64_t total_steps() const;
  /// Total number of threadblocks over all ranks.
  int total_threadblocks() const;
};

/// Where slot `slot` of the collective's input lives in a program's buffers. Out-of-place:
/// input buffer at the same index. In-place follows NCCL: when the output is larger, the input
/// aliases output chunk rank*input_chunks+index (allgather, gather).
BufferRef input_location(const Collective& collective, Slot slot, bool inplace);
/// Where output slot `slot` lives. Out-of-place: output buffer at the same index. In-place:
/// the output lives in the input buffer, at rank*output_chunks+index when the input is larger
/// (reducescatter, scatter), else at the same index (allreduce, alltoall, broadcast, reduce).
BufferRef output_location(const Collective& collective, Slot slot, bool inplace);

/// The structural check every consumer of a Program shares (`verify`, `simulate`, `run`):
/// ngpus matches the gpus given, gpu and threadblock ids are 0, 1, ... in order, buffer sizes
/// are >= 0, peers are other ranks, channels >= 0, at most one threadblock sends (receives) per
/// (sender, receiver, channel) and every sender has a matching receiver and vice versa, steps
/// that send (receive) have a send (receive) peer, counts >= 1 except for nops, source and
/// destination chunk ranges lie inside their buffers, and dependencies name existing steps.
/// Throws UserError(file, "gpu[r]/tb[t]/step[s]", reason) at the first defect.
void validate_structure(const Program& program, const std::string& file);

/// A FIFO connection of a program with the threadblock (index in its rank) at each end.
struct PairedConnection {
  int sender = 0;  // rank
  int receiver = 0;
  int channel = 0;
  int sender_tb = -1;
  int receiver_tb = -1;
};

/// validate_structure, returning the program's connections in (sender, receiver, channel)
/// order: the pairing that simulating and verifying a program start from.
std::vector<PairedConnection> validated_connections(const Program& program,
                                                    const std::string& file);

std::ostream& operator<<(std::ostream& os, const Step& step);
std::ostream& operator<<(std::ostream& os, const Program& program);

/// The built-in collective a program implements, from its `coll`, `ngpus`, `root` and buffer
/// sizes (max over ranks, since in-place and rooted programs leave some buffers empty): e.g.
/// an allgather with C chunks per rank has i_chunks = C or (in-place) o_chunks = ngpus * C.
/// Throws UserError for custom programs and for buffer sizes that fit no instance.
Collective collective_of(const Program& program);

}  // namespace ccsynth
