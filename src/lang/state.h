#pragma once
// The DSL's private state (docs/lang.md): what every buffer location holds while the program
// runs, and what each traced operation saw. Shared by program.cc (recording) and trace.cc
// (lowering to an Algorithm).

#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ccsynth/lang/program.h"

namespace ccsynth::lang {

/// What a location holds: a logical chunk of the collective (-1: uninitialized) and, for
/// combining collectives, the contributions reduced into it (indices into the chunk's pre
/// slots, ascending).
struct Value {
  int chunk = -1;
  std::vector<int> parts;

  bool initialized() const { return chunk >= 0; }
  bool operator==(const Value&) const = default;
};

/// A location after in-place aliasing: (rank, buffer, index) with input/output mapped to the
/// buffer that holds them (core/program.h input_location, output_location).
struct LocationKey {
  int rank = 0;
  BufferKind kind = BufferKind::kInput;
  std::string scratch;  // scratch buffer name; empty otherwise
  int index = 0;

  auto operator<=>(const LocationKey&) const = default;
};

/// One location's contents and history.
struct Location {
  Value value;
  uint64_t version = 0;      // bumped by every write; references remember it
  int last_writer = -1;      // operation index, -1: the precondition
  std::vector<int> readers;  // operations that read the current value
};

/// What an operation saw, per offset of its reference (used by to_algorithm()).
struct TracedValues {
  std::vector<Value> src;         // the values moved (copy) or reduced in (reduce)
  std::vector<Value> dst_before;  // the destination's values before the operation
};

/// A threadblock a directive named: its peers and channel so far (-1: not fixed yet).
struct DirectedThreadblock {
  int send_peer = -1;
  int recv_peer = -1;
  int channel = -1;
  std::string where;  // the first operation that named it
};

/// The channel or threadblock instance `i` of an operation parallelized `factor` times uses:
/// c * factor + i, so the instances' channels do not intersect (MSCCLang sec. 5.1). An
/// unspecified channel (-1) becomes i when parallelized; an unspecified threadblock stays -1.
inline int instance_channel(int channel, int factor, int i) {
  return channel < 0 ? (factor > 1 ? i : -1) : channel * factor + i;
}
inline int instance_threadblock(int tb, int factor, int i) { return tb < 0 ? -1 : tb * factor + i; }

struct DslProgram::State {
  std::map<LocationKey, Location> locations;
  std::map<std::string, int> scratch_sizes;
  std::vector<TracedValues> traced;  // parallel to DslProgram::operations_
  uint64_t next_version = 1;
  // (rank, threadblock) -> what directives fixed; (src, dst, channel) -> send / recv threadblock.
  std::map<std::pair<int, int>, DirectedThreadblock> threadblocks;
  std::map<std::tuple<int, int, int>, int> send_threadblock;
  std::map<std::tuple<int, int, int>, int> recv_threadblock;
};

}  // namespace ccsynth::lang
