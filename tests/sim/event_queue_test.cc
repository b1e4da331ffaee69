// The simulator's event queues against a reference ordered set: the same (time, seq) sequence
// for random pushes, re-timed events and pops, with the stale-event and drained-front bounds set
// small so both clean-ups run many times.

#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <tuple>
#include <vector>

namespace ccsynth::sim {
namespace {

using Key = std::tuple<double, int64_t, int>;  // time, seq, tb

Key key(const Event& e) { return {e.time, e.seq, e.tb}; }

// Times on a coarse grid so that many events share one (as in symmetric programs).
double random_time(std::mt19937& rng, double now) {
  return now + static_cast<double>(std::uniform_int_distribution<int>(0, 6)(rng)) * 0.5;
}

TEST(EventQueue, BucketsPopWhatAHeapPops) {
  std::mt19937 rng(7);
  BucketedEventQueue buckets(1, 0, 2);
  EventHeap heap;
  int64_t seq = 0;
  double now = 0.0;
  for (int round = 0; round < 20000; ++round) {
    if (heap.empty() || rng() % 3 != 0) {
      const Event e{random_time(rng, now), seq++, static_cast<int>(rng() % 50)};
      buckets.push(e);
      heap.push(e);
    } else {
      ASSERT_FALSE(buckets.empty());
      ASSERT_EQ(key(buckets.top()), key(heap.top()));
      now = heap.top().time;
      buckets.pop();
      heap.pop();
    }
  }
  while (!heap.empty()) {
    ASSERT_EQ(key(buckets.top()), key(heap.top()));
    buckets.pop();
    heap.pop();
  }
  EXPECT_TRUE(buckets.empty());
}

TEST(EventQueue, SetKeepsOneLiveEventPerThreadblock) {
  std::mt19937 rng(11);
  constexpr int kThreadblocks = 40;
  // Tiny bounds: stale events are removed all at once and drained fronts erased very often.
  BucketedEventQueue queue(1, 0, 2);
  queue.track(kThreadblocks);
  std::set<Key> live;
  std::vector<Key> of_tb(kThreadblocks);
  std::vector<bool> has(kThreadblocks, false);
  int64_t seq = 0;
  double now = 0.0;
  for (int round = 0; round < 40000; ++round) {
    if (live.empty() || rng() % 3 != 0) {
      const int tb = static_cast<int>(rng() % kThreadblocks);
      const Event e{random_time(rng, now), seq++, tb};
      if (has[tb]) live.erase(of_tb[tb]);
      queue.set(e);
      of_tb[tb] = key(e);
      has[tb] = true;
      live.insert(key(e));
    } else {
      ASSERT_FALSE(queue.empty());
      ASSERT_EQ(key(queue.top()), *live.begin());
      now = queue.top().time;
      has[queue.top().tb] = false;
      live.erase(live.begin());
      queue.pop();
    }
    ASSERT_EQ(queue.empty(), live.empty());
  }
}

}  // namespace
}  // namespace ccsynth::sim
