#pragma once
// TACCL communication sketches (TACCL sec. 3, appendix A listing 1): which links the synthesizer
// may use (the logical topology), switch-hyperedge policies, algorithm symmetry and
// hyperparameters. The JSON schema is TACCL's, so its published sketch files load unchanged;
// docs/sketches.md documents every field and default.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ccsynth/core/topology.h"

namespace ccsynth::synth {

/// intranode_sketch.strategy. kSwitch: only pairs inside a listed switch are used, each switch
/// a hyperedge with its own policy; kNone: every intra-node connection, no policy; kMinMax /
/// kMaxMin: every intra-node connection, all of them one hyperedge with uc-min / uc-max.
enum class IntranodeStrategy { kNone, kSwitch, kMinMax, kMaxMin };

/// switch_hyperedge_strategy: minimize (uc-min) or maximize (uc-max) the number of used
/// connections of a hyperedge (TACCL sec. 3.2, eq. 9-11); kFree adds nothing to the objective.
enum class SwitchPolicy { kFree, kUcMin, kUcMax };

/// internode_sketch.internode_conn: an explicit sender -> receivers map, every GPU to every GPU
/// of the other nodes ("fully-connected"), or GPU i to GPU i ("direct-map").
enum class InternodeConn { kMap, kFullyConnected, kDirectMap };

std::string to_string(IntranodeStrategy strategy);
std::string to_string(SwitchPolicy policy);
std::string to_string(InternodeConn conn);

/// The intra-node part, in node-local GPU indices.
struct IntranodeSketch {
  IntranodeStrategy strategy = IntranodeStrategy::kNone;
  std::vector<std::vector<int>> switches;  // kSwitch: local GPU sets
  std::vector<SwitchPolicy> policies;      // one per switch (a single entry applies to all)
};

/// The inter-node part, in node-local GPU indices (the same for every pair of nodes).
struct InternodeSketch {
  bool present = false;  // false: the sketch had no internode_sketch
  InternodeConn conn = InternodeConn::kFullyConnected;
  std::map<int, std::vector<int>> conn_map;        // kMap: sender -> receivers
  std::map<int, std::vector<int>> sender_rev_map;  // sender -> GPUs whose chunks it relays
  bool enforce_ordering = false;
  std::map<int, double> beta_split;                       // sender -> beta multiplier (>= 1)
  std::optional<std::pair<int, int>> chunk_to_relay_map;  // [r1, r2] of listing 1
};

/// A parsed sketch. `file` names it in errors.
struct Sketch {
  std::string file;
  std::string name;
  int nnodes = 1;
  IntranodeSketch intranode;
  InternodeSketch internode;
  std::vector<std::pair<int, int>> symmetry_offsets;  // [offset, group size]
  int input_chunkup = 1;
  std::optional<int64_t> input_size;  // per-rank input bytes for the cost model

  /// True if a chunk whose source is local GPU `source` may leave its node through sender
  /// `sender` (gpus_to_sender_rev_map / chunk_to_relay_map; always true without them).
  bool may_relay(int sender, int source) const;
};

/// Parses a sketch document (comments allowed). Throws UserError(file, field, reason) for
/// unknown keys, wrong types, out-of-range values and contradictions (see docs/sketches.md).
Sketch parse_sketch(const nlohmann::json& json, const std::string& file);
/// Parses sketch text; `//` and `/* */` comments are accepted as in TACCL's listing 1.
Sketch parse_sketch_text(const std::string& text, const std::string& file);
/// Reads a sketch file.
Sketch read_sketch_file(const std::string& path);
/// Serializes a sketch in TACCL's schema (parse_sketch(sketch_to_json(s)) == s up to `file`).
nlohmann::json sketch_to_json(const Sketch& sketch);

/// Checks the sketch against a topology: node count, equal node sizes, local indices in range,
/// symmetry group sizes dividing the rank count. Throws UserError naming the sketch file.
void check_sketch_fits(const Sketch& sketch, const Topology& topology);

/// One directed link of the logical topology (TACCL sec. 3.1) with its alpha-beta cost.
struct LogicalLink {
  int src = 0;
  int dst = 0;
  double alpha_us = 0.0;
  double beta_us_per_mb = 0.0;  // already multiplied by the sketch's beta_split
  int lanes = 1;
  bool internode = false;
  int port = -1;       // topology switch index when the hop crosses a switch (one transfer per
                       // port at a time), else -1
  int send_port = -1;  // with port >= 0: the switch port (Switch::port_of_rank) of src, which
  int recv_port = -1;  // ranks sharing it share (eq. 20); of dst (eq. 21)
  int hyperedge =
      -1;  // index into LogicalTopology::policies when a switch-hyperedge policy applies

  double lat_us(double chunk_bytes) const;
};

/// The logical topology a sketch leaves of a physical topology, plus its symmetry group.
struct LogicalTopology {
  int num_ranks = 0;
  std::vector<int> node_of;   // rank -> node index
  std::vector<int> local_of;  // rank -> index inside its node
  std::vector<LogicalLink> links;
  std::vector<SwitchPolicy> policies;   // per hyperedge
  std::vector<std::vector<int>> group;  // rank permutations closed under composition (incl. id)
  bool reversed = false;  // links reversed: a relay is then the link's destination (reversed())

  /// Index of the link src -> dst, or -1.
  int find(int src, int dst) const;
  /// Whether a chunk starting at `source` may use link `link` (relay restrictions).
  bool allows(const Sketch& sketch, int source, int link) const;
};

/// The same logical topology with every link reversed (routing a reducescatter: the inverse of
/// an allgather routed on the reversed links uses the forward ones). Relay restrictions follow
/// the links: a chunk owned by a rank enters the owner's node through the senders that would
/// carry the rank's own chunks out of it.
LogicalTopology reversed(const LogicalTopology& logical);

/// Builds the logical topology of `sketch` over `topology` (calls check_sketch_fits). Throws
/// UserError when the logical topology disconnects some rank or when a symmetry offset is not
/// an automorphism of it (links, costs and relay restrictions must map onto themselves).
LogicalTopology make_logical_topology(const Sketch& sketch, const Topology& topology);

}  // namespace ccsynth::synth
