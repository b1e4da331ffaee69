#pragma once
// The verifier's result: a list of violations (empty = correct), each with a kind from
// docs/formats.md and the location (rank, threadblock, step) it was found at.

#include <ostream>
#include <string>
#include <vector>

namespace ccsynth::verify {

/// Kinds of defects, serialized as in docs/formats.md.
enum class ViolationKind {
  kPostcondition,
  kDeadlock,
  kUninitializedRead,
  kRace,
  kBounds,
  kStructure
};

/// "postcondition", "deadlock", "uninitialized-read", "race", "bounds", "structure".
std::string to_string(ViolationKind kind);

/// One defect. rank/threadblock/step are -1 where they do not apply (for an Algorithm, step is
/// the op's step and threadblock is -1).
struct Violation {
  ViolationKind kind = ViolationKind::kStructure;
  int rank = -1;
  int threadblock = -1;
  int step = -1;
  std::string message;

  bool operator==(const Violation&) const = default;
};

/// Outcome of a verification: ok() when there are no violations.
struct VerifyReport {
  std::vector<Violation> violations;

  bool ok() const { return violations.empty(); }
  /// True if some violation has this kind.
  bool has(ViolationKind kind) const;
  /// One line per violation, e.g. "deadlock at rank 3 tb 1 step 4: ...".
  std::string summary() const;
};

std::ostream& operator<<(std::ostream& os, const Violation& v);

}  // namespace ccsynth::verify
