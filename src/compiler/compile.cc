#include "ccsynth/compiler/compile.h"

#include <string>

#include "ccsynth/compiler/aggregation.h"
#include "ccsynth/compiler/channel_assignment.h"
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

// The scheduling passes (MSCCLang sec. 5.2) for one channel capacity.
Program schedule(Lowered lowered, int capacity, const CompileOptions& o) {
  assign_channels(lowered, capacity, o.max_channels / o.instances);
  std::vector<FusionCandidate> candidates;
  if (o.fuse) candidates = find_fusion_candidates(lowered);
  const ConnectionPlan plan =
      pair_connections(lowered, candidates, o.max_threadblocks_per_rank / o.instances);
  if (o.fuse) fuse_instructions(lowered, candidates, plan);
  assign_threadblocks(lowered, plan);
  Program program = insert_dependencies(lowered);
  return replicate_instances(program, o.instances);
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
      if (violation.empty()) violation = e.reason();
      break;  // more channels per connection cannot help any more
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
