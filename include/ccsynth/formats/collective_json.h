#pragma once
// Collective JSON, "format": "ccsynth-collective", "version": 1 (docs/collectives.md): a
// collective as SCCL's pre/post relation over (rank, buffer index) slots, so that custom
// collectives such as AllToNext (MSCCLang sec. 7.4) can be given in a file.

#include <string>

#include "ccsynth/core/collective.h"
#include "ccsynth/formats/json_io.h"

namespace ccsynth::formats {

/// The JSON document of a collective (built-in or custom).
Json collective_to_json(const Collective& collective);

/// Reads a collective document and validates it (core's validate). A "kind" other than
/// "custom" must match make_collective(kind, ranks, chunks_per_rank, root) exactly. Errors are
/// UserErrors naming `file`, the field and the reason.
Collective collective_from_json(const Json& json, const std::string& file);

/// read_json_file + collective_from_json.
Collective read_collective_file(const std::string& path);

/// A built-in collective by name (allgather, ..., alltonext) built for `num_ranks`, or a
/// collective JSON file when `name_or_path` names an existing file or ends in ".json". A file
/// must have `num_ranks` ranks, and when chunks_per_rank > 1 it must match the file's
/// chunks_per_rank; `root` is ignored for files (the file fixes its slots).
Collective resolve_collective(const std::string& name_or_path, int num_ranks,
                              int chunks_per_rank = 1, int root = 0);

}  // namespace ccsynth::formats
