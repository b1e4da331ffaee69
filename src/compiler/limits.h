#pragma once
// Runtime limits (docs/formats.md "Runtime limits"): steps per threadblock, threadblocks per rank,
// channels and cnt. The compiler retries with more channels when a threadblock is too long
// and fails with a UserError naming the limit when the program cannot fit.

#include <cstdint>
#include <string>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/program.h"
#include "compiler/lowered.h"

namespace ccsynth::compiler {

/// Channels one instance may use: max_channels / instances, at least 1.
int channels_per_instance(const CompileOptions& options);

/// The first limit `program` exceeds, as a sentence, or "" when it fits.
std::string limit_violation(const Program& program, const CompileOptions& options);

/// True when only the steps-per-threadblock limit is exceeded (more channels may help).
bool only_steps_exceeded(const Program& program, const CompileOptions& options);

/// The most steps of any threadblock of `program`.
int longest_threadblock(const Program& program);

/// The most transfers between one (src, dst) pair of ranks in `lowered`.
int64_t busiest_pair_transfers(const Lowered& lowered);

/// The largest channel capacity below `capacity` at which every threadblock of `program` (compiled
/// from `lowered` at `capacity`) that is over `max_steps` can get shorter: one of its
/// connections must spread over more channels, and a pair of n transfers spreads over
/// ceil(n / capacity) channels of ceil(n / channels) (assign_channels), which changes only
/// below that share. capacity - 1 when only local threadblocks are over the limit.
int64_t shortening_capacity(const Program& program, const Lowered& lowered, int capacity,
                            int max_steps);

/// Why `lowered` (after aggregation) cannot fit the step limit however its transfers are spread
/// over channels, or "" when it may: a pair of ranks whose transfers need more steps than all
/// of an instance's channels hold (max_channels / instances x max_steps_per_threadblock; with
/// instances > 1 a transfer of cnt chunks takes cnt steps). Names the changes that would fit.
std::string channel_capacity_shortfall(const Lowered& lowered, const CompileOptions& options);

}  // namespace ccsynth::compiler
