#pragma once
// The DSL's private state (docs/lang.md): what every buffer location holds while the program
// runs, and what each traced operation saw. Shared by program.cc (recording) and trace.cc
// (lowering to an Algorithm).

#include <algorithm>
#include <compare>
#include <cstdint>
#include <iterator>
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

/// "copy" or "reduce", as messages name an operation.
inline std::string op_name(OpKind kind) { return kind == OpKind::kCopy ? "copy" : "reduce"; }

/// Whether two ascending contribution lists share no element.
inline bool disjoint(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> common;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
  return common.empty();
}

/// The union of two ascending contribution lists, ascending.
inline std::vector<int> merged(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

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

/// Channels and threadblocks of parallel instances (MSCCLang sec. 5.1: the instances of a
/// parallelized operation do not share channels). As the compiler does for `instances`,
/// instance i of channel c uses channel c + i*K, where K is one more than the largest channel
/// any operation names (so instances never meet another operation's channel either), and
/// instance i of threadblock t uses t + i*T likewise. An unspecified channel of a parallelized
/// operation counts as channel 0; an unspecified threadblock stays unspecified.
struct InstanceLayout {
  int channel_stride = 1;
  int threadblock_stride = 1;

  int channel(int base, int factor, int i) const {
    if (factor == 1) return base;
    return std::max(base, 0) + i * channel_stride;
  }
  int threadblock(int base, int factor, int i) const {
    return base < 0 || factor == 1 ? base : base + i * threadblock_stride;
  }
};

/// Keys for the directive checks while the program runs, before the strides are known: each
/// parallel instance of a channel or threadblock is its own key (base + i * limit).
inline int instance_key(int base, int i, int limit) { return base + i * limit; }

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
