#pragma once
// Runtime limits (docs/formats.md "Runtime limits"): steps per threadblock, threadblocks per rank,
// channels and cnt. The compiler retries with more channels when a threadblock is too long
// and fails with a UserError naming the limit when the program cannot fit.

#include <string>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/program.h"

namespace ccsynth::compiler {

/// The first limit `program` exceeds, as a sentence, or "" when it fits.
std::string limit_violation(const Program& program, const CompileOptions& options);

/// True when only the steps-per-threadblock limit is exceeded (more channels may help).
bool only_steps_exceeded(const Program& program, const CompileOptions& options);

}  // namespace ccsynth::compiler
