#pragma once
// Shared by the planner's evaluation tests: where they simulate (small_and_large) and a faulty
// compiler (EvaluateOptions::compile) whose wrong program simulates exactly as fast as the
// right one, so only the verifier can tell.

#include <functional>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/program.h"
#include "ccsynth/core/topology.h"
#include "ccsynth/plan/evaluate.h"

namespace ccsynth::plan::testing {

/// Simulated on `t` at 1 KB and 64 MiB per rank.
inline EvaluateOptions small_and_large(const Topology& t) {
  EvaluateOptions eo;
  eo.topology = &t;
  eo.sizes = {int64_t{1} << 10, int64_t{64} << 20};
  return eo;
}

/// compiler::compile, but a fused program writes GPU 0's first received output chunk one slot
/// off (same time, wrong data); counts the programs it corrupted in `corrupted`.
inline std::function<Program(const Algorithm&, const compiler::CompileOptions&)>
corrupting_fused_compiler(int& corrupted) {
  return [&corrupted](const Algorithm& a, const compiler::CompileOptions& o) {
    Program p = compiler::compile(a, o);
    if (!o.fuse) return p;
    for (Step& s : p.gpus[0].threadblocks[0].steps) {
      if (!receives(s.type) || s.dst_buffer != Buffer::kOutput) continue;
      s.dst_offset = (s.dst_offset + 1) % p.gpus[0].output_chunks;
      ++corrupted;
      break;
    }
    return p;
  };
}

}  // namespace ccsynth::plan::testing
