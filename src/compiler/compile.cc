#include "ccsynth/compiler/compile.h"

#include <set>
#include <string>
#include <vector>

#include "ccsynth/compiler/aggregation.h"
#include "ccsynth/compiler/channel_assignment.h"
#include "ccsynth/compiler/deadlock_check.h"
#include "ccsynth/compiler/dependency_insertion.h"
#include "ccsynth/compiler/fusion.h"
#include "ccsynth/compiler/instances.h"
#include "ccsynth/compiler/instruction_generation.h"
#include "ccsynth/compiler/limits.h"
#include "ccsynth/compiler/threadblock_assignment.h"
#include "ccsynth/core/error.h"

namespace ccsynth::compiler {

namespace {

void check_options(const CompileOptions& o) {
  if (o.instances < 1) throw UserError("", "--instances", "must be >= 1");
  if (o.max_channels < 1 || o.max_channels > 32) {
    throw UserError("", "max_channels", "must be in 1..32 (MSCCL channels)");
  }
  if (o.max_steps_per_threadblock < 1) throw UserError("", "max_steps", "must be >= 1");
  if (o.max_threadblocks_per_rank < 1) throw UserError("", "max_threadblocks", "must be >= 1");
  if (o.max_count < 1) throw UserError("", "max_count", "must be >= 1");
  if (o.fifo_slots < 1) throw UserError("", "fifo_slots", "must be >= 1");
  if (o.min_bytes < 0) throw UserError("", "--min-bytes", "must be >= 0");
  if (o.max_bytes < 0) throw UserError("", "--max-bytes", "must be >= 0");
  if (o.max_bytes > 0 && o.max_bytes < o.min_bytes) {
    throw UserError("", "--max-bytes", "must be >= --min-bytes (or 0 = unlimited)");
  }
  if (o.instances > o.max_channels) {
    throw UserError("", "--instances", "each instance needs its own channel; at most " +
                                           std::to_string(o.max_channels));
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

// The scheduling passes (MSCCLang sec. 5.2) for one channel capacity, repeated until the
// program runs with the runtime's FIFO depth.
Program schedule(const Lowered& lowered, int capacity, const CompileOptions& o) {
  DeadlockFixes fixes;
  for (;;) {
    Lowered l = lowered;
    assign_channels(l, capacity, o.max_channels / o.instances);
    std::vector<FusionCandidate> candidates;
    if (o.fuse) candidates = find_fusion_candidates(l);
    const ConnectionPlan plan =
        pair_connections(l, candidates, o.max_threadblocks_per_rank / o.instances, fixes.unpaired);
    if (o.fuse) fuse_instructions(l, candidates, plan, fixes.no_fuse);
    assign_threadblocks(l, plan);
    StepOrigins origins;
    Program program = insert_dependencies(l, &origins);
    const auto blocked = find_fifo_deadlock(program, o.fifo_slots, o.instances > 1);
    if (blocked.empty()) return replicate_instances(program, o.instances);
    if (!fix_deadlock(l, program, origins, blocked, fixes)) {
      const BlockedStep& b = blocked.front();
      throw UserError("", "program",
                      "deadlocks with " + std::to_string(o.fifo_slots) +
                          " FIFO slots per connection (rank " + std::to_string(b.rank) +
                          " threadblock " + std::to_string(b.threadblock) + " step " +
                          std::to_string(b.step) + " is stuck)");
    }
  }
}

}  // namespace

Program compile(const Algorithm& algorithm, const CompileOptions& options) {
  check_options(options);
  validate(algorithm.collective);
  // Lowering (MSCCLang sec. 4, TACCL sec. 6.2): buffers and instructions, then aggregation.
  Lowered lowered = generate_instructions(algorithm, options.inplace);
  if (options.aggregate) aggregate(lowered, options.max_count);
  // Scheduling, retried with fewer steps per connection (more channels) while a threadblock
  // exceeds the runtime's step limit.
  std::string violation;
  for (int capacity = options.max_steps_per_threadblock; capacity >= 1; capacity /= 2) {
    Program program;
    try {
      program = schedule(lowered, capacity, options);
    } catch (const UserError& e) {
      if (violation.empty()) throw;
      // More channels per connection cannot help any more: report both reasons.
      throw UserError("", "program", "cannot fit the runtime limits: " + violation +
                                         "; with more channels: " + e.reason());
    }
    violation = limit_violation(program, options);
    if (violation.empty()) {
      program.name = options.name.empty() ? algorithm.name : options.name;
      if (program.name.empty()) program.name = algorithm.collective.name;
      program.protocol = options.protocol;
      program.min_bytes = options.min_bytes;
      program.max_bytes = options.max_bytes;
      return program;
    }
    if (!only_steps_exceeded(program, options)) break;
  }
  throw UserError("", "program", "cannot fit the runtime limits: " + violation);
}

}  // namespace ccsynth::compiler
