#pragma once
// Buffer allocation (TACCL sec. 6.2, MSCCLang sec. 3.1): where each rank keeps its value of each
// logical chunk over time. A value starts at its input slot (core input_location), a rank that
// must end with the chunk keeps every newer value at its output slot (core output_location),
// other ranks (relays, partial reductions) keep it in scratch. A write that would clobber a
// still-needed value of another chunk (in-place aliasing) goes to fresh scratch instead, and a
// final copy moves it home at the end.

#include <optional>
#include <vector>

#include "ccsynth/core/algorithm.h"
#include "compiler/lowered.h"

namespace ccsynth::compiler {

/// A local copy needed after the last step to put a chunk into an output slot.
struct FinalCopy {
  int rank = 0;
  int chunk = 0;
  BufferRef src;
  BufferRef dst;
};

/// Tracks the location of every (rank, chunk) value while instruction generation walks the
/// ops in order. `key` arguments are the OrderKey of the access, used for liveness.
class BufferAllocator {
 public:
  BufferAllocator(const Algorithm& algorithm, bool inplace);

  /// Where `rank` currently keeps `chunk`, or nullopt if it holds no value.
  std::optional<BufferRef> location(int rank, int chunk) const;
  /// Chooses the location of a new value of `chunk` written at `rank` by the access at `key`
  /// and records it as the chunk's current location. `fresh` forces a new scratch slot (the
  /// deadlock check relocates receives that would wait for a send reading their slot).
  BufferRef place_write(int rank, int chunk, const OrderKey& key, bool fresh = false);
  /// Out-of-place, non-combining collectives: when `rank` still keeps its own initial value
  /// of `chunk` in the input buffer and must end with it in an output slot, moves the value
  /// to that slot now and returns the local copy that does it (the final copy, done early).
  /// Later sends then read the output buffer, where the chunks the rank received are, so the
  /// sends of one step stay contiguous and aggregate (e.g. recursive doubling).
  std::optional<FinalCopy> move_home(int rank, int chunk);
  /// Copies that put every post value in its output slot(s), in an order that never
  /// overwrites the source of a later copy.
  std::vector<FinalCopy> final_copies() const;
  /// Scratch chunks allocated so far for `rank`.
  int scratch_chunks(int rank) const { return scratch_[rank]; }
  /// Output locations (all buffers) holding some post slot of `rank`.
  bool is_post_location(int rank, BufferRef ref) const;

 private:
  static int64_t key_of(int rank, int chunk, int num_chunks);
  int64_t slot_key(int rank, BufferRef ref) const;
  bool live(int rank, int chunk, const OrderKey& key) const;
  BufferRef fresh_scratch(int rank) { return {Buffer::kScratch, scratch_[rank]++}; }
  /// The chunk `rank` holds at `ref`, or -1.
  int holder(int rank, BufferRef ref) const;
  /// Records that `rank` holds `chunk` (-1: nothing) at `ref`.
  void set_holder(int rank, BufferRef ref, int chunk);

  const Collective& collective_;
  bool inplace_;
  // Tables over every (rank, chunk), indexed by key_of; index -1 (kNowhere) or rank -1 marks an
  // absent entry.
  std::vector<BufferRef> location_;    // (rank, chunk) -> current location
  std::vector<BufferRef> scratch_of_;  // (rank, chunk) -> its scratch slot
  // Per rank, per slot (slot code: index * 4 + buffer) the chunk held there or -1; grown on
  // demand. Flat tables: a hash map here was a tenth of a 1024-rank lowering.
  std::vector<std::vector<int>> holder_;
  std::vector<OrderKey> last_read_;               // (rank, chunk) -> last read key
  std::vector<char> read_;                        // (rank, chunk) -> last_read_ is set
  std::vector<Slot> first_post_;                  // (rank, chunk) -> its first post slot
  std::vector<std::vector<char>> post_location_;  // per rank, per slot code: a post slot
  std::vector<int> scratch_;
};

}  // namespace ccsynth::compiler
