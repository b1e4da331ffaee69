#pragma once
// Sorting the compiler's per-transfer keys: ints packed into unsigned integers that sort like
// the tuple of them (one or two machine compares instead of a tuple's chain of branches), and
// sorting keys that come step by step one step at a time. Lowering the 1024-rank mesh
// allgather sorted a million keys twice in one piece: 27% of its instructions (callgrind;
// docs/compiler.md).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <unordered_map>
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

/// The `hi` that pack(hi, lo) was given.
constexpr int unpack_hi(uint64_t key) { return unpack_lo(key >> 32); }

/// Dense numbers of the keys key_of(0..n-1): each one's position among the distinct keys in
/// ascending order, which `distinct` (if not null) receives. The keys are few next to n (the
/// (src, dst) pairs of a lowering's transfers or an algorithm's ops): one hash lookup per run
/// of equal neighbours, then one sort of the distinct keys, instead of a sort of all n.
template <typename KeyOf>
std::vector<int> dense_ranks(size_t n, KeyOf key_of, std::vector<uint64_t>* distinct = nullptr) {
  std::unordered_map<uint64_t, int> first_seen;
  std::vector<uint64_t> seen;
  std::vector<int> out(n);
  uint64_t last_key = 0;
  int last_id = -1;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t key = key_of(i);
    if (last_id < 0 || key != last_key) {
      const auto [at, added] = first_seen.try_emplace(key, static_cast<int>(seen.size()));
      if (added) seen.push_back(key);
      last_key = key;
      last_id = at->second;
    }
    out[i] = last_id;
  }
  std::vector<int> ascending(seen.size());
  std::iota(ascending.begin(), ascending.end(), 0);
  std::sort(ascending.begin(), ascending.end(), [&](int a, int b) { return seen[a] < seen[b]; });
  std::vector<int> rank(seen.size());
  for (size_t k = 0; k < ascending.size(); ++k) rank[ascending[k]] = static_cast<int>(k);
  for (int& id : out) id = rank[id];
  if (distinct != nullptr) {
    distinct->clear();
    for (const int a : ascending) distinct->push_back(seen[a]);
  }
  return out;
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
