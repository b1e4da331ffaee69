#pragma once
// Internal to sim: the simulator's event queues. Events are ordered by (time, seq); seq grows
// with every event the simulator makes, so the order is total and every correct queue pops the
// same sequence: the results do not depend on which queue holds them.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
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
/// swapping pairs: much of the simulator's hot loop is spent here, and with std::priority_queue
/// and a binary indexed heap that swapped, NCCL's 512-rank ring in LL (8.5 M step instances)
/// took about 1.6x as long (docs/simulator.md "Performance"). Since (time, seq) is a total
/// order, every correct heap pops the same sequence, so the results do not depend on this.
///
/// With kIndexed (the data ends of transfers through switch ports: one per flow slot, `tb` holds
/// the slot) it keeps each slot's position, so a new share replaces a flow's event in place and the
/// heap never holds stale events (with every share pushed anew, a port with n flows left n stale
/// events per transfer start and end, and the heap grew with their product).
template <bool kIndexed>
class EventHeap {
 public:
  void resize(size_t threadblocks) {
    if constexpr (kIndexed) at_.assign(threadblocks, -1);
  }
  bool empty() const { return heap_.empty(); }
  const Event& top() const { return heap_.front(); }

  void push(const Event& event) {
    heap_.push_back(event);
    sift_up(heap_.size() - 1, event);
  }

  // Schedules (or moves) the one event of `event.tb`.
  void set(const Event& event) requires kIndexed {
    const int i = at_[event.tb];
    if (i < 0) {
      push(event);
    } else if (event < heap_[i]) {
      sift_up(i, event);
    } else {
      sift_down(i, event);
    }
  }

  void pop() {
    if constexpr (kIndexed) at_[heap_.front().tb] = -1;
    const Event last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(0, last);
  }

 private:
  static constexpr size_t kArity = 4;

  void put(size_t i, const Event& event) {
    heap_[i] = event;
    if constexpr (kIndexed) at_[event.tb] = static_cast<int>(i);
  }
  // Places `event` at hole i or above it.
  void sift_up(size_t i, const Event& event) {
    while (i > 0) {
      const size_t parent = (i - 1) / kArity;
      if (!(event < heap_[parent])) break;
      put(i, heap_[parent]);
      i = parent;
    }
    put(i, event);
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
      put(i, heap_[least]);
      i = least;
    }
    put(i, event);
  }

  std::vector<Event> heap_;
  std::vector<int> at_;  // kIndexed: per id (`tb`) its position in heap_, or -1
};

/// A map from a time's bits to a bucket id, open addressing with linear probing and
/// backward-shift deletion: no allocation per entry. Half of a 1024-rank mesh allgather's
/// events open a bucket of their own, and std::unordered_map's node per bucket (a malloc at
/// the push, a free at the pop) was a quarter of the queue's instructions (callgrind).
class TimeIndex {
 public:
  TimeIndex() { slots_.assign(kInitialSlots, Slot{}); }

  // The id stored for `key`, or -1.
  int find(uint64_t key) const {
    for (size_t i = home(key);; i = next(i)) {
      if (slots_[i].id < 0) return -1;
      if (slots_[i].key == key) return slots_[i].id;
    }
  }
  // Stores `id` for `key`, which is not in the map.
  void insert(uint64_t key, int id) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    place(key, id);
    ++size_;
  }
  // Removes `key`, which is in the map: the entries after it in its run move back into the
  // hole unless that would put them before their home slot.
  void erase(uint64_t key) {
    size_t hole = home(key);
    while (slots_[hole].key != key || slots_[hole].id < 0) hole = next(hole);
    for (size_t i = next(hole);; i = next(i)) {
      if (slots_[i].id < 0) break;
      const size_t want = home(slots_[i].key);
      // Movable when its home is not in the cyclic range (hole, i].
      if (((i - want) & mask()) >= ((i - hole) & mask())) {
        slots_[hole] = slots_[i];
        hole = i;
      }
    }
    slots_[hole] = Slot{};
    --size_;
  }

 private:
  struct Slot {
    uint64_t key = 0;
    int id = -1;  // -1: empty
  };
  static constexpr size_t kInitialSlots = 64;

  size_t mask() const { return slots_.size() - 1; }
  size_t next(size_t i) const { return (i + 1) & mask(); }
  // A time's bits vary mostly in the high mantissa: mix them down (the 64-bit finalizer of
  // MurmurHash3).
  size_t home(uint64_t key) const {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ULL;
    key ^= key >> 33;
    return static_cast<size_t>(key) & mask();
  }
  void place(uint64_t key, int id) {
    size_t i = home(key);
    while (slots_[i].id >= 0) i = next(i);
    slots_[i] = Slot{key, id};
  }
  void grow() {
    std::vector<Slot> old(2 * slots_.size(), Slot{});
    old.swap(slots_);
    for (const Slot& slot : old)
      if (slot.id >= 0) place(slot.key, slot.id);
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

/// Events in (time, seq) order, as a heap of the distinct times with a first-in-first-out bucket
/// of events per time. Many events share a time (a symmetric program ends whole rounds of
/// transfers at once: 97% of the events of a 256-rank mesh allgather have the time of the event
/// before them), so most pops and many pushes touch one bucket instead of sifting a heap of every
/// pending event. Events are pushed in increasing seq order, so each bucket is in seq order and
/// the head of the earliest bucket is the (time, seq) minimum: the same sequence a heap of every
/// event pops, so the results do not depend on this structure. (The data ends of transfers on
/// shared groups stay in an indexed EventHeap: they are re-timed whenever a flow joins or leaves,
/// mostly to times no other event has, and a bucket per re-timing simulated the 512-rank rfs
/// allreduce 4.6x as slowly.)
class BucketedEventQueue {
 public:
  /// A bucket's drained front is erased once it is half the bucket and at least
  /// `drained_slack` events (the earliest bucket can keep receiving events while it drains).
  explicit BucketedEventQueue(size_t drained_slack = 1024) : drained_slack_(drained_slack) {}

  bool empty() const { return size_ == 0; }
  const Event& top() const {
    const Bucket& bucket = buckets_[times_.top().tb];
    return bucket.events[bucket.head];
  }

  void push(const Event& event) {
    const uint64_t key = key_of(event.time);
    if (last_id_ < 0 || last_key_ != key) {
      int id = index_.find(key);
      if (id < 0) {
        id = new_bucket(event.time);
        index_.insert(key, id);
      }
      last_key_ = key;
      last_id_ = id;
    }
    buckets_[last_id_].events.push_back(event);
    ++size_;
  }

  void pop() {
    const int id = times_.top().tb;
    Bucket& bucket = buckets_[id];
    --size_;
    if (++bucket.head < bucket.events.size()) {
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

 private:
  struct Bucket {
    double time = 0.0;
    std::vector<Event> events;
    size_t head = 0;
  };

  // Equal times have equal keys (0.0 and -0.0 included).
  static uint64_t key_of(double time) { return std::bit_cast<uint64_t>(time + 0.0); }

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

  std::vector<Bucket> buckets_;
  std::vector<int> free_;
  TimeIndex index_;         // time -> bucket
  EventHeap<false> times_;  // one entry per bucket, its id in `tb`
  uint64_t last_key_ = 0;   // the bucket the last push went to
  int last_id_ = -1;
  size_t size_ = 0;  // events in buckets from their heads on
  size_t drained_slack_;
};

}  // namespace ccsynth::sim
