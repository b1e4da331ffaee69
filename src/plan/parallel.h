#pragma once
// The planner's small thread pool (private to src/plan): the tuner's variant compilations and
// simulations, and the planner's variants and nccl reference, run on it.

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

}  // namespace ccsynth::plan
