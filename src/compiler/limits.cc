#include "compiler/limits.h"

#include <string>

namespace ccsynth::compiler {

namespace {

std::string steps_violation(const Program& p, const CompileOptions& o) {
  for (const GpuProgram& g : p.gpus) {
    for (const Threadblock& tb : g.threadblocks) {
      if (static_cast<int>(tb.steps.size()) > o.max_steps_per_threadblock) {
        return "rank " + std::to_string(g.rank) + " threadblock " + std::to_string(tb.id) +
               " has " + std::to_string(tb.steps.size()) + " steps, more than the limit of " +
               std::to_string(o.max_steps_per_threadblock);
      }
    }
  }
  return "";
}

std::string other_violation(const Program& p, const CompileOptions& o) {
  if (p.num_channels > o.max_channels) {
    return "needs " + std::to_string(p.num_channels) + " channels, more than the limit of " +
           std::to_string(o.max_channels);
  }
  for (const GpuProgram& g : p.gpus) {
    if (static_cast<int>(g.threadblocks.size()) > o.max_threadblocks_per_rank) {
      return "rank " + std::to_string(g.rank) + " needs " + std::to_string(g.threadblocks.size()) +
             " threadblocks, more than the limit of " + std::to_string(o.max_threadblocks_per_rank);
    }
    for (const Threadblock& tb : g.threadblocks) {
      for (const Step& s : tb.steps) {
        if (s.count > o.max_count) {
          return "a step of rank " + std::to_string(g.rank) + " moves " + std::to_string(s.count) +
                 " chunks, more than the limit of " + std::to_string(o.max_count);
        }
      }
    }
  }
  return "";
}

}  // namespace

std::string limit_violation(const Program& p, const CompileOptions& o) {
  std::string other = other_violation(p, o);
  return other.empty() ? steps_violation(p, o) : other;
}

bool only_steps_exceeded(const Program& p, const CompileOptions& o) {
  return other_violation(p, o).empty() && !steps_violation(p, o).empty();
}

}  // namespace ccsynth::compiler
