#include "parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace ccsynth::plan {

namespace {

std::atomic<int> busy{0};
thread_local bool thread_counted = false;
std::mutex idle_mutex;  // with idle_changed: wait_for_idle_thread()
std::condition_variable idle_changed;

void wake_idle_waiters() {
  { const std::lock_guard<std::mutex> lock(idle_mutex); }
  idle_changed.notify_all();
}

// Counts the calling thread in busy_threads() or leaves it out (then waiters may go on).
void count_thread(bool counted) {
  thread_counted = counted;
  if (counted) {
    ++busy;
    return;
  }
  --busy;
  wake_idle_waiters();
}

}  // namespace

BusyThread::BusyThread() : counted_(!thread_counted) {
  if (counted_) count_thread(true);
}

BusyThread::~BusyThread() {
  if (counted_) count_thread(false);
}

WaitingThread::WaitingThread() : was_counted_(thread_counted) {
  if (was_counted_) count_thread(false);
}

WaitingThread::~WaitingThread() {
  if (was_counted_) count_thread(true);
}

int busy_threads() { return busy.load(); }

bool wait_for_idle_thread(int threads, const std::atomic<bool>& give_up) {
  std::unique_lock<std::mutex> lock(idle_mutex);
  idle_changed.wait(lock, [&] { return busy.load() < threads || give_up.load(); });
  return !give_up.load();
}

void give_up_waiting(std::atomic<bool>& give_up) {
  give_up = true;
  wake_idle_waiters();
}

void parallel_for(int threads, size_t count, const std::function<void(size_t)>& job) {
  std::vector<std::exception_ptr> errors(count);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    const BusyThread counted;
    for (size_t i = next++; i < count; i = next++) {
      try {
        job(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min<size_t>(std::max(threads, 1), count); ++t)
    pool.emplace_back(worker);
  worker();
  {
    const WaitingThread waiting;  // its jobs are done: a core for others while the pool finishes
    for (std::thread& t : pool) t.join();
  }
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

int hardware_threads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int thread_limit(int threads) { return threads > 0 ? threads : hardware_threads(); }

}  // namespace ccsynth::plan
