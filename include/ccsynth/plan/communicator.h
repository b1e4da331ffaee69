#pragma once
// A Communicator wired to the rest of the library: its built-in fallback programs are the ring
// baseline over a ring of the ranks (chain for broadcast / reduce when no ring applies),
// compiled without runtime limits, and MSCCL XML files load straight into it.

#include <string>

#include "ccsynth/runtime/communicator.h"

namespace ccsynth::plan {

/// The built-in programs: the compiled ring (or chain) baseline on ring:N, one chunk per rank.
runtime::BuiltinPrograms builtin_programs();

/// A communicator of `num_ranks` ranks with builtin_programs() as its fallback.
runtime::Communicator make_communicator(int num_ranks, runtime::ExecOptions exec = {});

/// Reads an MSCCL XML file (either dialect) and loads it; returns its index.
int load_xml_file(runtime::Communicator& communicator, const std::string& path);

}  // namespace ccsynth::plan
