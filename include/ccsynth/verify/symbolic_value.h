#pragma once
// A symbolic chunk value: the multiset of input contributions it is made of. Stored as the
// count of contributions and the wrapping sum of a 64-bit pseudo-random tag per contribution,
// so combining two values is O(1) and two values compare equal exactly when their multisets
// are equal, except with probability about 2^-64 (no double-counted or missing contribution
// goes unnoticed in practice). Exact enough for verification at thousands of ranks.

#include <cstdint>

#include "ccsynth/core/collective.h"

namespace ccsynth::verify {

/// Multiset of input contributions; empty (count 0) means "no value".
struct SymbolicValue {
  uint64_t tag_sum = 0;
  int64_t count = 0;

  bool empty() const { return count == 0; }
  /// The value of one input contribution: chunk `chunk` as held at input slot `slot`.
  static SymbolicValue contribution(int chunk, Slot slot);
  /// Reduction: multiset union.
  SymbolicValue operator+(const SymbolicValue& other) const {
    return {tag_sum + other.tag_sum, count + other.count};
  }
  bool operator==(const SymbolicValue&) const = default;
};

/// The value every post slot of `chunk` must hold: the sum of all its pre contributions
/// (a single one for non-combining collectives).
SymbolicValue expected_value(const Collective& collective, int chunk);

}  // namespace ccsynth::verify
