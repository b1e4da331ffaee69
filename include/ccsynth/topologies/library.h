#pragma once
// The built-in topology library: named machines (DGX-1, NDv2, DGX-2, NDv4, DGX H100, AMD Z52),
// multi-node clusters of them (`dgx2x2`) and parameterized shapes (`ring:8`, `mesh2d:4x4`,
// `rfs:2x4x8@gbps=200/100/50`). docs/topologies.md describes every topology, its numbering and
// every default cost.

#include <string>
#include <vector>

#include "ccsynth/core/topology.h"

namespace ccsynth::topologies {

/// One entry of the catalog printed by `ccsynth topo list`.
struct BuiltinInfo {
  std::string name;         // a name ("dgx1") or a pattern ("ring:N", "dgx2xN")
  std::string description;  // one line
};

/// Builds a built-in topology from its name, case-insensitively: "dgx1", "ring:8",
/// "mesh2d:4x4@alpha=0.5,gbps=50", "dgx2x2". The result is validated and its `name` is the
/// canonical (lower-case) spelling. Throws UserError (field "topology") for unknown names or bad
/// parameters; the message lists the known names.
Topology make_builtin(const std::string& name);

/// The names and patterns make_builtin accepts, in catalog order (for `topo list`).
std::vector<std::string> builtin_names();

/// builtin_names() with a one-line description each.
std::vector<BuiltinInfo> builtin_catalog();

/// A topology JSON file when `name_or_path` names an existing file or ends in ".json"
/// (read with formats::read_topology_file, then validated), otherwise make_builtin(name).
Topology resolve_topology(const std::string& name_or_path);

}  // namespace ccsynth::topologies
