#pragma once
// Planning a program written in the DSL (lang/program.h, docs/lang.md): the program is traced
// into an Algorithm and carried through the same verification, compilation and simulation as a
// synthesized algorithm, compiled as the program asks (its instances, protocol and in-place
// choice; with and without fusion), beside the `nccl` reference on the same topology and sizes.

#include "ccsynth/lang/program.h"
#include "ccsynth/plan/planner.h"

namespace ccsynth::plan {

/// The instance counts the nccl reference is tried with beside a DSL program (the fastest per
/// size is kept, as `ccsynth demo` does).
inline const std::vector<int> kNcclInstances = {1, 2, 4};

/// `request` set to compile exactly as `program` asks: its name, instances, protocol and
/// in-place choice, with and without fusion. Used for the program and for anything compared
/// with it on equal terms (e.g. a baseline of the same algorithm).
PlanRequest compiled_as(const lang::DslProgram& program, PlanRequest request);

/// Traces `program` (UserError when it misses its postcondition or cannot be lowered), then
/// evaluates it on `request.topology` at `request.sizes` (default 1 MiB). The request's method,
/// kind, chunks, root, collective and variants are ignored: the program fixes them.
PlanResult plan_dsl(const lang::DslProgram& program, PlanRequest request);

}  // namespace ccsynth::plan
