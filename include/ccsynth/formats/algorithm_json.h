#pragma once
// Algorithm JSON, "format": "ccsynth-algorithm", "version": 1 (docs/algorithm-json.md): an
// abstract Algorithm (core/algorithm.h) as synthesizers emit it and `ccsynth compile` reads it.
// The collective is either a built-in given by kind/ranks/chunks_per_rank/root or an embedded
// ccsynth-collective document (custom relations such as AllToNext).

#include <string>

#include "ccsynth/core/algorithm.h"
#include "ccsynth/formats/json_io.h"

namespace ccsynth::formats {

/// The JSON document of an algorithm. Optional op fields are written only when set
/// (start_us >= 0, count > 1, channel >= 0).
Json algorithm_to_json(const Algorithm& algorithm);

/// Reads an algorithm document. Unknown keys, wrong types and bad values (ranks, chunks,
/// counts, steps, kinds, reduces in non-combining collectives, self sends) are UserErrors
/// naming `file`, the field (e.g. "ops[3].dst") and the reason.
Algorithm algorithm_from_json(const Json& json, const std::string& file);

/// read_json_file + algorithm_from_json.
Algorithm read_algorithm_file(const std::string& path);

}  // namespace ccsynth::formats
