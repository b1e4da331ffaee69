#pragma once
// The runtimes' limits, in one place (docs/formats.md "MSCCL-IR limits"): how many steps one
// threadblock and how many threadblocks one rank may have in each XML dialect. Every front end
// (CLI verbs, benches, the planner, the Communicator's built-in programs) takes them from here.

#include "ccsynth/compiler/compile.h"
#include "ccsynth/formats/msccl_xml.h"

namespace ccsynth::plan {

/// Steps per threadblock and threadblocks per rank a runtime accepts.
struct RuntimeLimits {
  int max_steps_per_threadblock = 0;
  int max_threadblocks_per_rank = 0;
};

/// The limits of `dialect`: classic MSCCL 256 steps and 216 threadblocks, the executor dialect
/// 64 steps (the compiler adds channels to stay under it) and 1024 threadblocks.
RuntimeLimits runtime_limits(formats::XmlDialect dialect);

/// No practical limit: programs that only run on ccsynth's own CPU runtime.
RuntimeLimits unlimited();

/// Sets `options`' limits to `dialect`'s; a positive field of `overrides` replaces the
/// dialect's value.
void apply_runtime_limits(compiler::CompileOptions& options, formats::XmlDialect dialect,
                          const RuntimeLimits& overrides = {});

/// Sets `options`' limits to `limits`.
void apply_runtime_limits(compiler::CompileOptions& options, const RuntimeLimits& limits);

}  // namespace ccsynth::plan
