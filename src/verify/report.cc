#include "ccsynth/verify/report.h"

#include <sstream>

namespace ccsynth::verify {

std::string to_string(ViolationKind kind) {
  switch (kind) {
    case ViolationKind::kPostcondition: return "postcondition";
    case ViolationKind::kDeadlock: return "deadlock";
    case ViolationKind::kUninitializedRead: return "uninitialized-read";
    case ViolationKind::kRace: return "race";
    case ViolationKind::kBounds: return "bounds";
    case ViolationKind::kStructure: return "structure";
  }
  return "structure";
}

bool VerifyReport::has(ViolationKind kind) const {
  for (const Violation& v : violations) {
    if (v.kind == kind) return true;
  }
  return false;
}

std::string VerifyReport::summary() const {
  std::ostringstream os;
  for (const Violation& v : violations) os << v << "\n";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Violation& v) {
  os << to_string(v.kind);
  if (v.rank >= 0) os << " at rank " << v.rank;
  if (v.threadblock >= 0) os << " tb " << v.threadblock;
  if (v.step >= 0) os << " step " << v.step;
  return os << ": " << v.message;
}

}  // namespace ccsynth::verify
