#include "ccsynth/compiler/compile.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ccsynth/compiler/instances.h"
#include "ccsynth/compiler/schedule_order.h"
#include "ccsynth/core/error.h"
#include "compiler/aggregation.h"
#include "compiler/channel_assignment.h"
#include "compiler/deadlock_check.h"
#include "compiler/dependency_insertion.h"
#include "compiler/fusion.h"
#include "compiler/gather.h"
#include "compiler/instruction_generation.h"
#include "compiler/limits.h"
#include "compiler/threadblock_assignment.h"

namespace ccsynth::compiler {

namespace {

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

// Decisions that remove bounded-FIFO deadlocks: receives not to fuse, connections not to pair.
struct DeadlockFixes {
  std::set<int> no_fuse;
  std::set<Unpaired> unpaired;
  int rounds = 0;
};

// Un-fuses the fused steps stuck in the deadlock (after a few rounds, every fused step of a
// stuck threadblock); failing that, gives stuck receive connections their own threadblock.
bool fix_deadlock(const Lowered& l, const Program& p, const StepOrigins& origins,
                  const std::vector<BlockedStep>& blocked, DeadlockFixes& fixes) {
  constexpr int kPreciseRounds = 8;
  bool changed = false;
  const bool whole_tb = ++fixes.rounds > kPreciseRounds;
  for (const BlockedStep& b : blocked) {
    const auto& steps = origins[b.rank][b.threadblock];
    for (size_t s = whole_tb ? 0 : b.step; s < (whole_tb ? steps.size() : b.step + 1); ++s) {
      const int i = steps[s];
      if (i >= 0 && l.instructions[i].fused_send >= 0) changed |= fixes.no_fuse.insert(i).second;
    }
  }
  if (changed) return true;
  for (const BlockedStep& b : blocked) {
    const Threadblock& tb = p.gpus[b.rank].threadblocks[b.threadblock];
    if (tb.send_peer >= 0 && tb.recv_peer >= 0) {
      changed |= fixes.unpaired.insert({b.rank, tb.recv_peer, tb.channel}).second;
    }
  }
  return changed;
}

// Last resort against a deadlock: stuck receives that wait for another threadblock (e.g. for
// the send that reads their in-place slot) write fresh scratch instead. Returns whether any
// receive was added to `relocations`.
bool relocate_receives(const Lowered& l, const Program& p, const StepOrigins& origins,
                       const std::vector<BlockedStep>& blocked, Relocations& relocations) {
  bool changed = false;
  for (const BlockedStep& b : blocked) {
    const Threadblock& tb = p.gpus[b.rank].threadblocks[b.threadblock];
    size_t s = b.step;
    while (s < tb.steps.size() && tb.steps[s].type == StepType::kNop) ++s;  // nops wait for it
    if (s == tb.steps.size() || tb.steps[s].dep_tb < 0 || !receives(tb.steps[s].type)) continue;
    const Instruction& in = l.instructions[origins[b.rank][b.threadblock][s]];
    changed |= relocations.insert({in.rank, in.key.op}).second;
  }
  return changed;
}

// The scheduling passes (MSCCLang sec. 5.2) for one channel capacity, repeated until the
// program runs with the runtime's FIFO depth. Returns nullopt after adding receives to
// `relocations` (the caller lowers again).
std::optional<Program> schedule(const Lowered& lowered, int capacity, const CompileOptions& o,
                                Relocations& relocations) {
  // Channels and fusion candidates do not depend on the deadlock fixes: found once.
  Lowered channeled = lowered;
  assign_channels(channeled, capacity, o.max_channels / o.instances);
  std::vector<FusionCandidate> candidates;
  if (o.fuse) candidates = find_fusion_candidates(channeled);
  DeadlockFixes fixes;
  for (;;) {
    Lowered l = channeled;
    const ConnectionPlan plan =
        pair_connections(l, candidates, o.max_threadblocks_per_rank / o.instances, fixes.unpaired);
    if (o.fuse) fuse_instructions(l, candidates, plan, fixes.no_fuse);
    assign_threadblocks(l, plan);
    StepOrigins origins;
    Program program = insert_dependencies(l, &origins);
    const auto blocked = find_fifo_deadlock(program, o.fifo_slots, o.instances > 1);
    if (blocked.empty()) return replicate_instances(program, o.instances);
    if (!fix_deadlock(l, program, origins, blocked, fixes)) {
      if (relocate_receives(l, program, origins, blocked, relocations)) return std::nullopt;
      const BlockedStep& b = blocked.front();
      throw UserError("", "program",
                      "deadlocks with " + std::to_string(o.fifo_slots) +
                          " FIFO slots per connection (rank " + std::to_string(b.rank) +
                          " threadblock " + std::to_string(b.threadblock) + " step " +
                          std::to_string(b.step) + " is stuck)");
    }
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

// The next capacity to try after `capacity` gave a threadblock of `longest` steps: the next
// one in `capacities` at most capacity x limit / longest (the steps of a threadblock shrink
// about in proportion), skipping the ones that would surely be too long again.
size_t next_capacity(const std::vector<int>& capacities, size_t at, int longest, int max_steps) {
  const double target = static_cast<double>(capacities[at]) * max_steps / std::max(longest, 1);
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
  return lowered;
}

}  // namespace

struct Lowering::State {
  const Algorithm* algorithm = nullptr;  // the caller's, or `ordered`
  std::optional<Algorithm> ordered;      // in start-time order (CompileOptions::schedule_order)
  CompileOptions options;
  Lowered lowered;
};

Lowering::Lowering(const Algorithm& algorithm, const CompileOptions& options)
    : state_(std::make_unique<State>()) {
  state_->options = options;
  state_->algorithm = &algorithm;
  if (options.schedule_order) {
    const int channels = options.max_channels / std::max(options.instances, 1);
    state_->ordered = order_by_start_times(algorithm, channels);
    state_->algorithm = &*state_->ordered;
  }
  check_options(options);
  validate(algorithm.collective);
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
  return compile(Lowering(algorithm, options), options);
}

Program compile(const Lowering& lowering, const CompileOptions& options) {
  CCSYNTH_CHECK(lowering.matches(options)) << "compile: options that change the lowering";
  check_options(options);
  const Algorithm& algorithm = *lowering.state_->algorithm;
  Relocations relocations;
  std::optional<Lowered> relowered;  // once the deadlock check moved receives to scratch
  for (;;) {
    const Lowered& lowered = relowered ? *relowered : lowering.state_->lowered;
    // Scheduling, retried with fewer steps per connection (more channels) while a
    // threadblock exceeds the runtime's step limit.
    if (const std::string shortfall = channel_capacity_shortfall(lowered, options);
        !shortfall.empty()) {
      throw UserError("", "program", "cannot fit the runtime limits: " + shortfall);
    }
    std::string violation;
    bool relower = false;
    const std::vector<int> capacities = channel_capacities(options.max_steps_per_threadblock);
    // A pair that must spill fills its channels to the limit at the first capacity, and the
    // threadblock that also runs the paired connection (or a nop) is then over it: start a
    // little under the limit.
    const bool spills = busiest_pair_transfers(lowered) > capacities.front();
    for (size_t at = spills && capacities.size() > 1 ? 1 : 0; at < capacities.size();) {
      const int capacity = capacities[at];
      std::optional<Program> program;
      try {
        program = schedule(lowered, capacity, options, relocations);
      } catch (const UserError& e) {
        if (violation.empty()) throw;
        // More channels per connection cannot help any more: report both reasons.
        throw UserError(
            "", "program",
            "cannot fit the runtime limits: " + violation + "; with more channels: " + e.reason());
      }
      if (!program) {
        relower = true;
        break;
      }
      violation = limit_violation(*program, options);
      if (violation.empty()) return finish(std::move(*program), algorithm, options);
      if (!only_steps_exceeded(*program, options)) break;
      at = next_capacity(capacities, at, longest_threadblock(*program),
                         options.max_steps_per_threadblock);
    }
    if (!relower) throw UserError("", "program", "cannot fit the runtime limits: " + violation);
    relowered = lower(algorithm, options, relocations);
  }
}

}  // namespace ccsynth::compiler
