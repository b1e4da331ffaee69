#include "timeline.h"

#include "network.h"

namespace ccsynth::sim {

void TimelineRecorder::step(int rank, int tb, int step, int64_t slice, StepType type, double start,
                            double end) {
  if (static_cast<int64_t>(timeline_.steps.size()) >= limit_) {
    timeline_.truncated = true;
    return;
  }
  timeline_.steps.push_back(StepInterval{rank, tb, step, slice, type, start, end});
}

void TimelineRecorder::transfer(const std::vector<int>& groups, int rank, int tb, double start,
                                double end) {
  for (int group : groups) {
    if (static_cast<int64_t>(timeline_.links.size()) >= limit_) {
      timeline_.truncated = true;
      return;
    }
    // Groups are stored here; finish() maps them to usage indices once.
    timeline_.links.push_back(LinkInterval{group, rank, tb, start, end});
  }
}

Timeline TimelineRecorder::finish(const Network& network) {
  const std::vector<int> index = network.usage_index();
  std::vector<LinkInterval> reported;
  reported.reserve(timeline_.links.size());
  for (LinkInterval interval : timeline_.links) {
    interval.link = index[interval.link];
    if (interval.link >= 0) reported.push_back(interval);
  }
  timeline_.links = std::move(reported);
  return std::move(timeline_);
}

}  // namespace ccsynth::sim
