#pragma once
// Aggregation (MSCCLang sec. 5.1 "Aggregation", TACCL's contiguity stage): transfers of one step
// between the same pair of ranks, of the same kind and channel hint, whose source and
// destination ranges are contiguous are merged into one transfer with cnt > 1 (at most
// `max_count` chunks), amortizing the per-send latency. Local copies of one step are merged
// the same way.

#include "compiler/lowered.h"
#include "compiler/sort_key.h"

#include <cstddef>
#include <vector>

namespace ccsynth::compiler {

/// The transfers aggregation may merge, grouped: same step, source and destination rank,
/// receive type and channel hint. Only groups of two or more are kept (one sort, no map).
struct TransferGroups {
  std::vector<int> members;    // transfer indices, group after group, by index within a group
  std::vector<size_t> starts;  // group g is members[starts[g], starts[g + 1])
  size_t size() const { return starts.empty() ? 0 : starts.size() - 1; }
  std::vector<int> group(size_t g) const {
    return {members.begin() + static_cast<std::ptrdiff_t>(starts[g]),
            members.begin() + static_cast<std::ptrdiff_t>(starts[g + 1])};
  }
};

/// Groups the transfers of `lowered` that are not removed (see TransferGroups).
TransferGroups transfer_groups(const Lowered& lowered);

/// The receive slots (rank, step, buffer slot) written by more than one receive of a step:
/// reduces into such a slot run in op order, so those receives are never merged.
class RepeatedWrites {
 public:
  explicit RepeatedWrites(const Lowered& lowered);
  /// Whether the receive `r` writes a slot that another receive of its step also writes.
  bool touches(const Instruction& r) const;

 private:
  // The slot (step, rank, buffer, index) that chunk `j` of receive `r` writes, packed.
  static SortKey128 slot(const Instruction& r, int j);
  std::vector<SortKey128> repeated_;  // sorted
};

/// Merges contiguous same-step transfers and copies in place; merged ones are marked removed.
void aggregate(Lowered& lowered, int max_count);

/// How many of `transfers` (indices into lowered.transfers, ascending, none removed) would
/// remain after aggregation (`lowered` is left as it is).
int aggregated_transfers(const Lowered& lowered, const std::vector<int>& transfers, int max_count);

}  // namespace ccsynth::compiler
