// SimOptions::record_timeline: the recorded intervals agree with the simulator's totals.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "ccsynth/core/units.h"
#include "ccsynth/sim/simulate.h"
#include "sim_test_util.h"

namespace ccsynth::sim {
namespace {

SimOptions recording() {
  SimOptions o;
  o.record_timeline = true;
  return o;
}

TEST(Timeline, OffByDefault) {
  const SimResult r =
      simulate(testing::ring_allgather(4), testing::ring_topology(4, 1.0, 10.0), 1 << 20);
  EXPECT_TRUE(r.timeline.steps.empty());
  EXPECT_TRUE(r.timeline.links.empty());
}

TEST(Timeline, OneStepIntervalPerInstanceWithinTheRun) {
  const int n = 4;
  const Topology topo = testing::ring_topology(n, 1.0, 10.0);
  const SimResult r = simulate(testing::ring_allgather(n), topo, 4 << 20, recording());
  EXPECT_EQ(static_cast<int64_t>(r.timeline.steps.size()), r.events);
  EXPECT_FALSE(r.timeline.truncated);
  double last_end = 0.0;
  for (const StepInterval& s : r.timeline.steps) {
    EXPECT_LE(s.start_us, s.end_us);
    EXPECT_GE(s.start_us, 0.0);
    EXPECT_LT(s.slice, r.slices);
    last_end = std::max(last_end, s.end_us);
  }
  // The run ends with the last step, plus the launch overhead.
  EXPECT_NEAR(last_end + topo.launch_us, r.time_us, 1e-9 * r.time_us);
}

TEST(Timeline, LinkIntervalsSumToBusyTime) {
  const int n = 4;
  const Topology topo = testing::ring_topology(n, 1.0, 10.0);
  const SimResult r = simulate(testing::ring_allgather(n), topo, 4 << 20, recording());
  std::map<int, double> busy;
  for (const LinkInterval& l : r.timeline.links) {
    ASSERT_GE(l.link, 0);
    ASSERT_LT(l.link, static_cast<int>(r.links.size()));
    // The sender is the link's source rank on a ring (one hop per send).
    EXPECT_EQ(l.rank, r.links[l.link].src);
    busy[l.link] += l.end_us - l.start_us;
  }
  for (size_t i = 0; i < r.links.size(); ++i) {
    EXPECT_NEAR(busy[static_cast<int>(i)], r.links[i].busy_us, 1e-6) << "link " << i;
  }
  EXPECT_FALSE(busy.empty());
}

TEST(Timeline, SwitchPortsAreNamedByTheirUsageIndex) {
  const int n = 4;
  const Topology topo = testing::switch_topology(n, 1.0, 10.0);
  const SimResult r = simulate(testing::ring_allgather(n), topo, 1 << 20, recording());
  ASSERT_FALSE(r.timeline.links.empty());
  for (const LinkInterval& l : r.timeline.links) {
    const LinkUsage& port = r.links[l.link];
    // Every hop is a port of the sender (egress) or of its ring successor (ingress).
    EXPECT_TRUE(port.src == l.rank || port.dst == (l.rank + 1) % n) << l.link;
    EXPECT_TRUE(port.src == -1 || port.dst == -1);
    EXPECT_LE(l.end_us, r.time_us);
  }
}

TEST(Timeline, LimitTruncates) {
  SimOptions o = recording();
  o.timeline_limit = 5;
  const SimResult r =
      simulate(testing::ring_allgather(4), testing::ring_topology(4, 1.0, 10.0), 4 << 20, o);
  EXPECT_EQ(r.timeline.steps.size(), 5u);
  EXPECT_LE(r.timeline.links.size(), 5u);
  EXPECT_TRUE(r.timeline.truncated);
}

TEST(Timeline, RecordingDoesNotChangeTheResult) {
  const Topology topo = testing::switch_topology(8, 0.7, 40.0);
  const SimResult plain = simulate(testing::ring_allgather(8), topo, 16 << 20);
  const SimResult recorded = simulate(testing::ring_allgather(8), topo, 16 << 20, recording());
  EXPECT_EQ(plain.time_us, recorded.time_us);
  EXPECT_EQ(plain.events, recorded.events);
}

}  // namespace
}  // namespace ccsynth::sim
