#include "ccsynth/compiler/compile.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ccsynth/compiler/schedule_order.h"
#include "ccsynth/core/error.h"
#include "compiler/aggregation.h"
#include "compiler/channel_assignment.h"
#include "compiler/gather.h"
#include "compiler/instruction_generation.h"
#include "compiler/limits.h"
#include "compiler/scheduling.h"

namespace ccsynth::compiler {

namespace {

// How every error of a program over the runtime limits starts (runtime_limits_violation).
const std::string kOverLimits = "cannot fit the runtime limits: ";

void check_options(const CompileOptions& o) {
  if (o.instances < 1) throw UserError("", "instances", "must be >= 1");
  if (o.max_channels < 1 || o.max_channels > 32) {
    throw UserError("", "max_channels", "must be in 1..32 (MSCCL channels)");
  }
  if (o.max_steps_per_threadblock < 1) throw UserError("", "max_steps", "must be >= 1");
  if (o.max_threadblocks_per_rank < 1) throw UserError("", "max_threadblocks", "must be >= 1");
  if (o.max_count < 1) throw UserError("", "max_count", "must be >= 1");
  if (o.fifo_slots < 1) throw UserError("", "fifo_slots", "must be >= 1");
  if (o.min_bytes < 0) throw UserError("", "min_bytes", "must be >= 0");
  if (o.max_bytes < 0) throw UserError("", "max_bytes", "must be >= 0");
  if (o.max_bytes > 0 && o.max_bytes < o.min_bytes) {
    throw UserError("", "max_bytes", "must be >= min_bytes (or 0 = unlimited)");
  }
  if (o.instances > o.max_channels) {
    throw UserError(
        "", "instances",
        "each instance needs its own channel; at most " + std::to_string(o.max_channels));
  }
}

// Names the program and applies the options that do not change its steps.
Program finish(Program program, const Algorithm& algorithm, const CompileOptions& options) {
  program.name = options.name.empty() ? algorithm.name : options.name;
  if (program.name.empty()) program.name = algorithm.collective.name;
  program.protocol = options.protocol;
  program.min_bytes = options.min_bytes;
  program.max_bytes = options.max_bytes;
  return program;
}

// Transfers one connection may put on a channel, tried in turn while a threadblock is over the
// step limit: first a little under the limit (dependency nops and final copies share the
// threadblocks, so a schedule at the limit can end a few steps over it), then in eighths of the
// limit down to a quarter (a threadblock pairing a receive and a send connection runs both, so
// the fit is often a little under half the limit), then halving.
std::vector<int> channel_capacities(int max_steps) {
  std::vector<int> out = {max_steps};
  if (max_steps >= 16) out.push_back(max_steps - max_steps / 16);
  for (int eighths = 7; eighths >= 2 && max_steps >= 8; --eighths)
    out.push_back(max_steps * eighths / 8);
  for (int c = max_steps / 2; c >= 1; c /= 2) out.push_back(c);
  std::sort(out.begin(), out.end(), std::greater<>());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The next capacity to try after `capacities[at]` gave a threadblock of `longest` steps: the
// next one in `capacities` at most capacity x limit / longest (the steps of a threadblock
// shrink about in proportion) and at most `shortening` (shortening_capacity: above it the
// threadblocks over the limit keep their transfers), skipping the ones that would surely be
// too long again.
size_t next_capacity(const std::vector<int>& capacities, size_t at, int longest, int max_steps,
                     int64_t shortening) {
  const double target =
      std::min(static_cast<double>(capacities[at]) * max_steps / std::max(longest, 1),
               static_cast<double>(shortening));
  size_t next = at + 1;
  while (next + 1 < capacities.size() && capacities[next] > target) ++next;
  return next;
}

// Passes 1-2: buffers and instructions, then gathering and aggregation (MSCCLang sec. 4,
// TACCL sec. 6.2).
Lowered lower(const Algorithm& algorithm, const CompileOptions& options,
              const Relocations& relocations) {
  Lowered lowered = generate_instructions(algorithm, options.inplace, relocations);
  share_hinted_channels(lowered);
  if (options.aggregate) {
    gather_strays(lowered, options.max_count);
    aggregate(lowered, options.max_count);
  }
  group_by_rank(lowered);
  return lowered;
}

}  // namespace

struct Lowering::State {
  const Algorithm* algorithm = nullptr;  // the caller's, or `ordered`
  std::optional<Algorithm> ordered;      // in start-time order (CompileOptions::schedule_order)
  CompileOptions options;
  Lowered lowered;
  // Held by a compilation: scheduling changes `lowered` in place while it runs (schedule()).
  std::mutex scheduling_mutex;

  // The scheduling index of `lowered`, made by the first compilation that needs it and shared
  // by the others (the fused and unfused variants of a lowering: indexing the 1024-rank mesh
  // allgather costs about a tenth of a compilation). The fusion candidates are added by the
  // first fused one, before any fused compilation reads them (unfused ones never do).
  // Called by a compilation, which holds scheduling_mutex.
  const SchedulingIndex& index(bool fuse) {
    if (!scheduling_index) scheduling_index = index_for_scheduling(lowered, false);
    if (fuse && !has_candidates) add_fusion_candidates(*scheduling_index, lowered);
    has_candidates = has_candidates || fuse;
    return *scheduling_index;
  }

 private:
  std::optional<SchedulingIndex> scheduling_index;
  bool has_candidates = false;
};

Lowering::Lowering(const Algorithm& algorithm, const CompileOptions& options)
    : state_(std::make_unique<State>()) {
  state_->options = options;
  state_->algorithm = &algorithm;
  check_options(options);
  if (options.schedule_order) {
    std::string overflow;
    state_->ordered = order_by_start_times(algorithm, channels_per_instance(options),
                                           options.max_steps_per_threadblock, &overflow);
    if (!overflow.empty()) {
      throw UserError("", "program", kOverLimits + overflow);
    }
    state_->algorithm = &*state_->ordered;
  }
  validate(algorithm.collective);
  if (const std::string shortfall = step_limit_shortfall(*state_->algorithm, options);
      !shortfall.empty()) {
    throw UserError("", "program", kOverLimits + shortfall);
  }
  state_->lowered = lower(*state_->algorithm, options, {});
}

Lowering::~Lowering() = default;
Lowering::Lowering(Lowering&&) noexcept = default;
Lowering& Lowering::operator=(Lowering&&) noexcept = default;

bool Lowering::matches(const CompileOptions& o) const {
  const CompileOptions& mine = state_->options;
  return o.schedule_order == mine.schedule_order && o.instances == mine.instances &&
         o.max_channels == mine.max_channels && o.inplace == mine.inplace &&
         o.aggregate == mine.aggregate && o.max_count == mine.max_count;
}

Program compile(const Algorithm& algorithm, const CompileOptions& options) {
  check_options(options);
  if (std::optional<Program> ring = compile_ring_allgather(algorithm, options))
    return std::move(*ring);
  return compile(Lowering(algorithm, options), options);
}

Program compile(const Lowering& lowering, const CompileOptions& options) {
  CCSYNTH_CHECK(lowering.matches(options)) << "compile: options that change the lowering";
  check_options(options);
  const Algorithm& algorithm = *lowering.state_->algorithm;
  Relocations relocations;
  std::optional<Lowered> relowered;  // once the deadlock check moved receives to scratch
  // Scheduling changes the lowering in place and gives it back: one compilation at a time.
  const std::lock_guard<std::mutex> lock(lowering.state_->scheduling_mutex);
  for (;;) {
    Lowered& lowered = relowered ? *relowered : lowering.state_->lowered;
    // Scheduling, retried with fewer steps per connection (more channels) while a
    // threadblock exceeds the runtime's step limit.
    if (const std::string shortfall = channel_capacity_shortfall(lowered, options);
        !shortfall.empty()) {
      throw UserError("", "program", kOverLimits + shortfall);
    }
    std::string violation;
    bool relower = false;
    const std::vector<int> capacities = channel_capacities(options.max_steps_per_threadblock);
    // A pair that must spill fills its channels to the limit at the first capacity, and the
    // threadblock that also runs the paired connection (or a nop) is then over it: start a
    // little under the limit.
    const int64_t busiest = busiest_pair_transfers(lowered);
    const bool spills = busiest > capacities.front();
    size_t first = spills && capacities.size() > 1 ? 1 : 0;
    // Unless that capacity leaves the busiest pair more transfers than its channels hold (it
    // would fail in channel assignment): then the limit itself, where a threadblock over it
    // is split into its two connections (scheduling.h).
    const int64_t channels = channels_per_instance(options);
    if (first > 0 && busiest > channels * capacities[first]) first = 0;
    std::optional<SchedulingIndex> own_index;  // of a lowering made again with relocations
    if (relowered) own_index = index_for_scheduling(lowered, options.fuse);
    const SchedulingIndex& index = relowered ? *own_index : lowering.state_->index(options.fuse);
    for (size_t at = first; at < capacities.size();) {
      const int capacity = capacities[at];
      std::optional<Program> program;
      try {
        program = schedule(lowered, index, capacity, options, relocations);
      } catch (const UserError& e) {
        if (violation.empty()) throw;
        // More channels per connection cannot help any more: report both reasons.
        throw UserError("", "program",
                        kOverLimits + violation + "; with more channels: " + e.reason());
      }
      if (!program) {
        relower = true;
        break;
      }
      violation = limit_violation(*program, options);
      if (violation.empty()) return finish(std::move(*program), algorithm, options);
      if (!only_steps_exceeded(*program, options)) break;
      at = next_capacity(
          capacities, at, longest_threadblock(*program), options.max_steps_per_threadblock,
          shortening_capacity(*program, lowered, capacity, options.max_steps_per_threadblock));
    }
    if (!relower) throw UserError("", "program", kOverLimits + violation);
    relowered = lower(algorithm, options, relocations);
  }
}

std::string runtime_limits_violation(const UserError& error) {
  if (error.field() == "program" && error.reason().rfind(kOverLimits, 0) == 0) {
    return error.reason().substr(kOverLimits.size());
  }
  // assign_channels says "channels" where a pair's transfers need more channels than there are.
  return error.field() == "channels" ? error.reason() : "";
}

}  // namespace ccsynth::compiler
