#pragma once
// The planner's small thread pool (private to src/plan): the tuner's variant compilations and
// simulations, and the planner's variants and nccl reference, run on it.

#include <atomic>
#include <cstddef>
#include <functional>

namespace ccsynth::plan {

/// Runs job(i) for every i in [0, count) on up to `threads` threads, the calling one included
/// (threads <= 1: one after the other, in index order). Jobs are handed out in index order; an
/// exception thrown by a job is rethrown here, the one of the lowest index, after every
/// started job has finished.
void parallel_for(int threads, size_t count, const std::function<void(size_t)>& job);

/// The machine's hardware threads (at least 1).
int hardware_threads();

/// The threads a caller asking for `threads` may use: those, or with 0 the hardware threads.
int thread_limit(int threads);

/// How many threads are running parallel_for jobs now, over every pool of the process (a thread
/// running a job that runs a nested pool counts once), plus those in a BusyThread.
int busy_threads();

/// Waits until fewer than `threads` threads are busy (true) or give_up_waiting() is called on
/// `give_up` (false).
bool wait_for_idle_thread(int threads, const std::atomic<bool>& give_up);

/// Sets `give_up` and wakes the wait_for_idle_thread() calls waiting on it.
void give_up_waiting(std::atomic<bool>& give_up);

/// Leaves the calling thread out of busy_threads() while it lives: a busy thread that only
/// waits for another one.
class WaitingThread {
 public:
  WaitingThread();
  ~WaitingThread();
  WaitingThread(const WaitingThread&) = delete;
  WaitingThread& operator=(const WaitingThread&) = delete;

 private:
  bool was_counted_;
};

/// Counts the calling thread in busy_threads() while it lives (once, however nested): for work
/// started beside the pools' jobs.
class BusyThread {
 public:
  BusyThread();
  ~BusyThread();
  BusyThread(const BusyThread&) = delete;
  BusyThread& operator=(const BusyThread&) = delete;

 private:
  bool counted_;
};

}  // namespace ccsynth::plan
