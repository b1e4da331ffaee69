#include "ccsynth/plan/limits.h"

namespace ccsynth::plan {

RuntimeLimits runtime_limits(formats::XmlDialect dialect) {
  if (dialect == formats::XmlDialect::kClassic) return {256, 216};
  return {64, 1024};
}

RuntimeLimits unlimited() { return {1 << 20, 1 << 20}; }

void apply_runtime_limits(compiler::CompileOptions& options, const RuntimeLimits& limits) {
  options.max_steps_per_threadblock = limits.max_steps_per_threadblock;
  options.max_threadblocks_per_rank = limits.max_threadblocks_per_rank;
}

void apply_runtime_limits(compiler::CompileOptions& options, formats::XmlDialect dialect,
                          const RuntimeLimits& overrides) {
  RuntimeLimits limits = runtime_limits(dialect);
  if (overrides.max_steps_per_threadblock > 0) {
    limits.max_steps_per_threadblock = overrides.max_steps_per_threadblock;
  }
  if (overrides.max_threadblocks_per_rank > 0) {
    limits.max_threadblocks_per_rank = overrides.max_threadblocks_per_rank;
  }
  apply_runtime_limits(options, limits);
}

}  // namespace ccsynth::plan
