#pragma once
// Collectives as relations over chunks (SCCL sec. 3.2, tables 1-2). A collective has a number of
// logical chunks; each starts at one or more input-buffer slots (pre) and must end at a set of
// output-buffer slots (post). Non-combining collectives move one value; combining collectives
// (reducescatter, allreduce, reduce) start with one contribution per pre slot and must end with
// the reduction of all of them.

#include <compare>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace ccsynth {

/// Which collective. kCustom ones are defined by their chunk relation (e.g. loaded from JSON).
enum class CollectiveKind {
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kAllToAll,
  kBroadcast,
  kReduce,
  kGather,
  kScatter,
  kCustom,
};

/// Canonical lower-case name: allgather, reducescatter, allreduce, alltoall, broadcast, reduce,
/// gather, scatter, custom.
std::string to_string(CollectiveKind kind);
/// Parses a name case-insensitively; accepts '_' and '-' separators (reduce_scatter, all-gather).
/// Throws UserError naming `field` for an unknown name.
CollectiveKind parse_collective_kind(const std::string& name,
                                     const std::string& field = "collective");
/// All built-in kinds (everything but kCustom), in enum order.
std::vector<CollectiveKind> builtin_collective_kinds();

/// A chunk-sized position in one rank's input or output buffer.
struct Slot {
  int rank = 0;
  int index = 0;

  auto operator<=>(const Slot&) const = default;
};

/// One logical chunk: where its value (or its contributions) starts and where it must end.
struct ChunkSpec {
  std::vector<Slot> pre;   // input slots; exactly one unless the collective is combining
  std::vector<Slot> post;  // output slots that must hold the value (fully reduced) at the end

  bool operator==(const ChunkSpec&) const = default;
};

/// A collective over `num_ranks` ranks. Buffers are counted in chunks; every rank has the same
/// input and output buffer sizes (as the NCCL API does), although only pre/post slots matter.
struct Collective {
  CollectiveKind kind = CollectiveKind::kCustom;
  std::string name;  // to_string(kind) for built-ins
  int num_ranks = 0;
  int chunks_per_rank = 1;  // SCCL's C: a rank's share (see make_collective for each kind)
  int root = 0;             // broadcast, reduce, gather, scatter
  bool combining = false;   // true when post values are reductions of all pre contributions
  int input_chunks = 0;     // per rank
  int output_chunks = 0;    // per rank
  std::vector<ChunkSpec> chunks;

  bool operator==(const Collective&) const = default;

  int num_chunks() const { return static_cast<int>(chunks.size()); }
  /// Ranks holding the chunk (or a contribution to it) at the start, ascending, unique.
  std::vector<int> pre_ranks(int chunk) const;
  /// Ranks that must hold the chunk at the end, ascending, unique.
  std::vector<int> post_ranks(int chunk) const;
};

/// The most ranks x ranks x chunks_per_rank a built-in collective may have (an allgather chunk
/// lists every rank as a destination): 2^28 slots take gigabytes already.
inline constexpr int64_t kMaxCollectiveSlots = int64_t{1} << 28;

/// Builds a built-in collective. With R ranks and C = chunks_per_rank, buffer sizes in chunks
/// (input -> output) are: allgather C -> R*C; reducescatter R*C -> C; allreduce R*C -> R*C;
/// alltoall R*C -> R*C (chunk (s, d, c) goes from s's input d*C+c to d's output s*C+c);
/// broadcast C -> C from root; reduce C -> C to root; gather C -> R*C at root;
/// scatter R*C -> C from root. Throws UserError above kMaxCollectiveSlots. Chunk numbering: allgather/gather chunk q*C+c is rank q's input c;
/// reducescatter/allreduce chunk j is output position j (owned by rank j / C for
/// reducescatter); alltoall chunk (s*R + d)*C + c; broadcast/reduce chunk c; scatter d*C+c.
/// Throws UserError for non-positive sizes, a root out of range or kCustom.
Collective make_collective(CollectiveKind kind, int num_ranks, int chunks_per_rank = 1,
                           int root = 0);

/// AllToNext (MSCCLang sec. 7.4): rank r's C input chunks go to rank r+1's output (the last
/// rank sends nothing); the shipped example of a custom collective.
Collective make_alltonext(int num_ranks, int chunks_per_rank = 1);

/// Checks the relation (slots in range, non-combining chunks with exactly one pre slot, no
/// output slot claimed twice); throws UserError naming `file` and the field.
void validate(const Collective& collective, const std::string& file = "");

std::ostream& operator<<(std::ostream& os, const Collective& collective);

}  // namespace ccsynth
