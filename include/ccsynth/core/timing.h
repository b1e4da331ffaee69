#pragma once
// Wall-clock timing of solver stages and synthesis runs (reported in stats, never used for
// decisions that change results).

#include <chrono>

namespace ccsynth {

/// Seconds elapsed on the steady clock since `start`.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace ccsynth
