#pragma once
// Sorting the compiler's per-transfer keys: ints packed into unsigned integers that sort like
// the tuple of them (one or two machine compares instead of a tuple's chain of branches), and
// sorting keys that come step by step one step at a time. Lowering the 1024-rank mesh
// allgather sorted a million keys twice in one piece: 27% of its instructions (callgrind;
// docs/compiler.md).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ccsynth::compiler {

/// Four ints packed by pack(a, b, c, d).
__extension__ using SortKey128 = unsigned __int128;

/// `x` as an unsigned integer of the same order: its sign bit flipped.
constexpr uint64_t ordered(int x) { return static_cast<uint32_t>(x) ^ 0x80000000u; }

/// (hi, lo) in one key that compares like the pair.
constexpr uint64_t pack(int hi, int lo) { return ordered(hi) << 32 | ordered(lo); }

/// (a, b, c, d) in one key that compares like the tuple.
constexpr SortKey128 pack(int a, int b, int c, int d) {
  return SortKey128{pack(a, b)} << 64 | pack(c, d);
}

/// The `lo` that pack(hi, lo) was given.
constexpr int unpack_lo(uint64_t key) {
  return static_cast<int>(static_cast<uint32_t>(key) ^ 0x80000000u);
}

/// Sorts `keys`, whose order begins with lead(key). Keys made in a pass over the transfers come
/// in runs of one step each, steps increasing: then each run is sorted on its own (many small
/// sorts in cache instead of one over a million keys), else all at once. Same result.
template <typename Key, typename Lead>
void sort_in_runs(std::vector<Key>& keys, Lead lead) {
  std::vector<size_t> starts = {0};
  for (size_t i = 1; i < keys.size(); ++i) {
    const auto before = lead(keys[i - 1]), here = lead(keys[i]);
    if (here == before) continue;
    if (here < before) {
      std::sort(keys.begin(), keys.end());
      return;
    }
    starts.push_back(i);
  }
  starts.push_back(keys.size());
  for (size_t r = 0; r + 1 < starts.size(); ++r) {
    std::sort(keys.begin() + static_cast<std::ptrdiff_t>(starts[r]),
              keys.begin() + static_cast<std::ptrdiff_t>(starts[r + 1]));
  }
}

}  // namespace ccsynth::compiler
