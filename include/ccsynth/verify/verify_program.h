#pragma once
// Verification of a Program (MSCCL-IR) by symbolic execution (docs/verifier.md). Every chunk
// cell of every rank's buffers holds a SymbolicValue (the multiset of input contributions it is
// made of); connections are FIFOs with bounded slots per (sender, receiver, channel);
// threadblocks run their steps in order, honour cross-threadblock dependencies and are
// scheduled round-robin. Reported: structure defects, out-of-range offsets, deadlocks (with what
// each stuck step waits for), reads of cells holding no value, races between threadblocks of a
// rank, and the collective's postcondition.

#include "ccsynth/core/collective.h"
#include "ccsynth/core/program.h"
#include "ccsynth/verify/report.h"

namespace ccsynth::verify {

/// The built-in collective a program implements (core/program.h).
using ccsynth::collective_of;

/// Options of verify_program.
struct VerifyProgramOptions {
  /// The collective to check against; nullptr = collective_of(program).
  const Collective* collective = nullptr;
  /// Messages a connection buffers before a send blocks (NCCL's FIFO slots, MSCCLang sec. 6.1:
  /// 1..8 depending on the protocol).
  int fifo_slots = 8;
};

/// Verifies `program`. Structure and bounds defects are found first; when there are fatal ones
/// (the program cannot be executed meaningfully) execution is skipped. Each kind is reported at
/// most 100 times; a final entry of that kind then says how many were left out.
VerifyReport verify_program(const Program& program, const VerifyProgramOptions& options = {});

}  // namespace ccsynth::verify
