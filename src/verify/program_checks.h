#pragma once
// Internal to verify_program: the violation collector and the static checks (structure and
// bounds) that run before symbolic execution.

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ccsynth/core/collective.h"
#include "ccsynth/core/program.h"
#include "ccsynth/verify/report.h"

namespace ccsynth::verify::detail {

/// Collects violations, at most kMaxPerKind of each kind; finish() appends one entry per
/// truncated kind saying how many were left out.
class ViolationSink {
 public:
  static constexpr int64_t kMaxPerKind = 100;

  /// False once `kind` is full, so callers can skip building the message.
  bool wants(ViolationKind kind) const { return counts_[index(kind)] < kMaxPerKind; }
  void add(ViolationKind kind, int rank, int threadblock, int step, const std::string& message);
  /// Text put in front of every later message (e.g. which execution mode found it).
  void set_prefix(std::string prefix) { prefix_ = std::move(prefix); }
  /// Number of violations of `kind` seen (listed or not).
  int64_t count(ViolationKind kind) const { return counts_[index(kind)]; }
  VerifyReport finish() const;

 private:
  static size_t index(ViolationKind kind) { return static_cast<size_t>(kind); }

  VerifyReport report_;
  std::array<int64_t, 6> counts_{};
  std::string prefix_;
};

/// The step type in backquotes for messages, e.g. "`rcs`".
std::string quoted(StepType type);
/// "o[3]" or "o[3..5]" for `count` chunks from `offset`.
std::string buffer_range(Buffer buffer, int offset, int count = 1);

/// Static checks: ranks and threadblock ids, peers, one threadblock per connection and
/// direction, step types against peers, counts, dependencies, channels, nchunksperloop and
/// offsets against buffer sizes. Returns false when a defect makes execution meaningless; else
/// the program's connections are in `connections` (validated_connections).
bool check_structure(const Program& program, const Collective& collective, ViolationSink& sink,
                     std::vector<PairedConnection>& connections);

}  // namespace ccsynth::verify::detail
