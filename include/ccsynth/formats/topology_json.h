#pragma once
// Topology JSON, "format": "ccsynth-topology", "version": 1, exactly as docs/formats.md
// sec. 1 describes it: name, ranks, nodes, directed links (src, dst, lanes, alpha_us,
// beta_us_per_mb, kind) and switches (name, ranks, alpha_us, port_beta_us_per_mb, kind), plus
// ccsynth's optional switch "port_group" (ports shared by several ranks; docs/topologies.md).

#include <string>

#include "ccsynth/core/topology.h"
#include "ccsynth/formats/json_io.h"

namespace ccsynth::formats {

/// The JSON document of a topology (every field written, links in stored order).
Json topology_to_json(const Topology& topology);

/// Reads a topology document and validates it (core's validate); errors are UserErrors naming
/// `file`, the field ("links[3].lanes") and the reason. Optional fields: "nodes" (default: one
/// node with every rank), "switches" (none), a link's "lanes" (1) and "kind" ("generic"), a
/// switch's "kind" ("switch") and "port_group" (empty: one port per rank); "extra" is ignored.
Topology topology_from_json(const Json& json, const std::string& file);

/// read_json_file + topology_from_json.
Topology read_topology_file(const std::string& path);

/// Pretty JSON text of a topology with one link or switch per line (diff-friendly, compact).
std::string write_topology_json(const Topology& topology);

}  // namespace ccsynth::formats
