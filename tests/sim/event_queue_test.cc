// The simulator's event queues against references: the bucketed queue pops what the heap pops
// (with the drained-front bound set small so its clean-up runs often), and the indexed heap's
// re-timed events pop as a reference ordered set of the live events does.

#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <map>
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
  BucketedEventQueue buckets(2);
  EventHeap<false> heap;
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

// Inserts and erases on keys that collide often (few distinct high bits, as times have), and
// checks every key against a reference map after each change: a wrong backward shift loses or
// duplicates an entry of a probe run.
TEST(EventQueue, TimeIndexFindsWhatAMapFinds) {
  std::mt19937 rng(5);
  TimeIndex index;
  std::map<uint64_t, int> reference;
  for (int round = 0; round < 6000; ++round) {
    const uint64_t key = static_cast<uint64_t>(rng() % 300) << 52;
    if (reference.count(key) != 0) {
      index.erase(key);
      reference.erase(key);
    } else {
      index.insert(key, round);
      reference[key] = round;
    }
    if (round % 37 == 0) {
      for (uint64_t k = 0; k < 300; ++k) {
        const auto it = reference.find(k << 52);
        ASSERT_EQ(index.find(k << 52), it == reference.end() ? -1 : it->second) << round;
      }
    }
  }
}

TEST(EventQueue, IndexedHeapKeepsOneLiveEventPerThreadblock) {
  std::mt19937 rng(11);
  constexpr int kThreadblocks = 40;
  EventHeap<true> queue;
  queue.resize(kThreadblocks);
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
