#pragma once
// Internal to sim: records SimResult::timeline when SimOptions::record_timeline is set. The
// simulator calls it at two points (a step instance is scheduled, a transfer releases its
// lanes); when recording is off the simulator holds no recorder and pays one null check there.

#include <cstdint>
#include <vector>

#include "ccsynth/sim/simulate.h"

namespace ccsynth::sim {

class Network;

/// Collects step and link intervals up to a limit, then maps lane groups to SimResult::links.
class TimelineRecorder {
 public:
  explicit TimelineRecorder(int64_t limit) : limit_(limit) {}

  /// A step instance of threadblock `tb` (index within `rank`) runs from `start` to `end`.
  void step(int rank, int tb, int step, int64_t slice, StepType type, double start, double end);
  /// A transfer of threadblock `tb` of `rank` held every group in `groups` from `start` to `end`.
  void transfer(const std::vector<int>& groups, int rank, int tb, double start, double end);
  /// The recorded timeline with lane groups replaced by indices into Network::usage().
  Timeline finish(const Network& network);

 private:
  int64_t limit_;
  Timeline timeline_;
};

}  // namespace ccsynth::sim
