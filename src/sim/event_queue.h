#pragma once
// Internal to sim: the simulator's event queues. Events are ordered by (time, seq); seq grows
// with every event the simulator makes, so the order is total and every correct queue pops the
// same sequence: the results do not depend on which queue holds them.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ccsynth::sim {

/// kComplete ends a step instance; a transfer through shared groups also gets kAlphaEnd (its
/// latency is over, it starts moving bytes) and then a data end in the simulator's data_ends_.
enum class EventKind : uint8_t { kComplete, kAlphaEnd };

/// Something that happens to threadblock `tb` at `time`; `seq` breaks ties in creation order.
struct Event {
  double time;
  int64_t seq;
  int tb;
  EventKind kind = EventKind::kComplete;
  bool operator<(const Event& other) const {
    return time != other.time ? time < other.time : seq < other.seq;
  }
};

/// A 4-ary min-heap of events in (time, seq) order. Sifting moves entries into a hole instead of
/// swapping pairs (with std::priority_queue NCCL's 512-rank ring in LL took about 1.6x as long,
/// docs/simulator.md "Performance"). Since (time, seq) is a total order, every correct heap pops
/// the same sequence, so the results do not depend on this.
class EventHeap {
 public:
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.front(); }

  void push(const Event& event) {
    heap_.push_back(event);
    sift_up(heap_.size() - 1, event);
  }

  void pop() {
    const Event last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(0, last);
  }

  void clear() { heap_.clear(); }

 private:
  static constexpr size_t kArity = 4;

  // Places `event` at hole i or above it.
  void sift_up(size_t i, const Event& event) {
    while (i > 0) {
      const size_t parent = (i - 1) / kArity;
      if (!(event < heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = event;
  }
  // Places `event` at hole i or below it.
  void sift_down(size_t i, const Event& event) {
    const size_t n = heap_.size();
    for (;;) {
      const size_t first = kArity * i + 1;
      if (first >= n) break;
      size_t least = first;
      const size_t last = std::min(first + kArity, n);
      for (size_t c = first + 1; c < last; ++c) {
        if (heap_[c] < heap_[least]) least = c;
      }
      if (!(heap_[least] < event)) break;
      heap_[i] = heap_[least];
      i = least;
    }
    heap_[i] = event;
  }

  std::vector<Event> heap_;
};

/// Events in (time, seq) order, as a heap of the distinct times with a first-in-first-out bucket
/// of events per time. Many events share a time (a symmetric program ends whole rounds of
/// transfers at once: 97% of the events of a 256-rank mesh allgather have the time of the event
/// before them), so most pops and many pushes touch one bucket instead of sifting a heap of every
/// pending event (the 1024-rank mesh allgather simulates about 1.3x as fast). Events are pushed
/// in increasing seq order, so each bucket is in seq order and the head of the earliest bucket is
/// the (time, seq) minimum: the same sequence a heap of every event pops, so the results do not
/// depend on this structure.
///
/// After track(threadblocks) each threadblock has at most one live event, which set() replaces
/// (the data ends of transfers on shared groups, re-timed whenever a flow joins or leaves). The
/// replaced event stays in its bucket, stale, and is dropped when it reaches the head; when stale
/// events outnumber live ones by a bound (4 per live event by default) they are all removed at once, so memory stays
/// proportional to the live events even on a port whose many flows are re-timed at every start.
class BucketedEventQueue {
 public:
  /// `max_stale_per_live` and `slack` bound the stale events (at most max_stale_per_live per
  /// live one, plus slack); a bucket's drained front is erased once it is half the bucket and
  /// at least `drained_slack` events.
  explicit BucketedEventQueue(size_t max_stale_per_live = 4, size_t slack = 4096,
                              size_t drained_slack = 1024)
      : max_stale_per_live_(max_stale_per_live), slack_(slack), drained_slack_(drained_slack) {}

  void track(size_t threadblocks) { live_seq_.assign(threadblocks, -1); }
  bool empty() const { return size_ == 0; }
  const Event& top() const {
    const Bucket& bucket = buckets_[times_.top().tb];
    return bucket.events[bucket.head];
  }

  void push(const Event& event) {
    const uint64_t key = key_of(event.time);
    if (last_id_ < 0 || last_key_ != key) {
      auto [it, fresh] = index_.try_emplace(key, -1);
      if (fresh) it->second = new_bucket(event.time);
      last_key_ = key;
      last_id_ = it->second;
    }
    buckets_[last_id_].events.push_back(event);
    ++size_;
  }

  // Schedules `event` as the one live event of `event.tb`, replacing any other (after track()).
  void set(const Event& event) {
    int64_t& live = live_seq_[event.tb];
    if (live >= 0) ++stale_;
    live = event.seq;
    push(event);
    drop_stale();
    if (stale_ > max_stale_per_live_ * (size_ - stale_) + slack_) remove_stale();
  }

  void pop() {
    if (!live_seq_.empty()) live_seq_[top().tb] = -1;
    pop_head();
    drop_stale();
  }

 private:

  struct Bucket {
    double time = 0.0;
    std::vector<Event> events;
    size_t head = 0;
  };

  // Equal times have equal keys (0.0 and -0.0 included).
  static uint64_t key_of(double time) { return std::bit_cast<uint64_t>(time + 0.0); }

  bool stale(const Event& event) const {
    return !live_seq_.empty() && live_seq_[event.tb] != event.seq;
  }

  int new_bucket(double time) {
    int id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = static_cast<int>(buckets_.size());
      buckets_.emplace_back();
    }
    buckets_[id].time = time;
    // Buckets have distinct times, so the heap orders them by time alone.
    times_.push(Event{time, 0, id});
    return id;
  }

  void free_bucket(int id) {
    Bucket& bucket = buckets_[id];
    index_.erase(key_of(bucket.time));
    if (last_id_ == id) last_id_ = -1;
    bucket.events.clear();
    if (bucket.events.capacity() > 4 * drained_slack_) bucket.events.shrink_to_fit();
    bucket.head = 0;
    free_.push_back(id);
  }

  void pop_head() {
    const int id = times_.top().tb;
    Bucket& bucket = buckets_[id];
    --size_;
    if (++bucket.head < bucket.events.size()) {
      // The earliest bucket can keep receiving events of its own time while it is drained (flows
      // re-timed to the same end): the drained front goes once it is half the bucket.
      if (bucket.head >= drained_slack_ && 2 * bucket.head >= bucket.events.size()) {
        bucket.events.erase(bucket.events.begin(),
                            bucket.events.begin() + static_cast<std::ptrdiff_t>(bucket.head));
        bucket.head = 0;
      }
      return;
    }
    free_bucket(id);
    times_.pop();
  }

  // Keeps the head live: a replaced event is dropped when it comes first.
  void drop_stale() {
    while (size_ > 0 && stale(top())) {
      --stale_;
      pop_head();
    }
  }

  // Drops every stale event, keeping each bucket's order, and rebuilds the heap of times.
  void remove_stale() {
    times_.clear();
    for (const auto& [key, id] : std::vector<std::pair<uint64_t, int>>(index_.begin(),
                                                                        index_.end())) {
      Bucket& bucket = buckets_[id];
      const auto first = bucket.events.begin() + static_cast<std::ptrdiff_t>(bucket.head);
      const auto kept = std::remove_if(first, bucket.events.end(),
                                       [this](const Event& e) { return stale(e); });
      bucket.events.erase(kept, bucket.events.end());
      bucket.events.erase(bucket.events.begin(), first);
      bucket.head = 0;
      if (bucket.events.empty()) {
        free_bucket(id);
      } else {
        times_.push(Event{bucket.time, 0, id});
      }
    }
    size_ -= stale_;
    stale_ = 0;
  }

  std::vector<Bucket> buckets_;
  std::vector<int> free_;
  std::unordered_map<uint64_t, int> index_;  // time -> bucket
  EventHeap times_;                          // one entry per bucket, its id in `tb`
  std::vector<int64_t> live_seq_;            // after track(): seq of each threadblock's event
  uint64_t last_key_ = 0;                    // the bucket the last push went to
  int last_id_ = -1;
  size_t size_ = 0;   // events in buckets from their heads on, stale ones included
  size_t stale_ = 0;  // of those, replaced by set()
  size_t max_stale_per_live_;
  size_t slack_;
  size_t drained_slack_;
};

}  // namespace ccsynth::sim
