#pragma once
// Hand-written baseline algorithms (docs/baselines.md): NCCL-style rings and trees, all-pairs,
// recursive doubling / halving-doubling, double binary trees, hierarchical and two-step
// (MSCCLang sec. 7) algorithms, each produced as an Algorithm over the topology's existing
// connections. Combining variants come from inversion (synth/combine.h, SCCL sec. 3.5).

#include <string>
#include <vector>

#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/collective.h"
#include "ccsynth/core/topology.h"

namespace ccsynth::synth {

/// The baseline families.
enum class BaselineKind {
  kRing,
  kDirect,
  kRecursiveDoubling,
  kRhd,
  kDbt,
  kHier,
  kTwoStep,
  kChain,
  kTree,
  kCooperative  // MSCCLang sec. 7.4: cross-node sends split over every GPU and NIC of the node
};

/// Parses ring, direct, rd, rhd, dbt, hier, twostep, chain, tree, cooperative (case-insensitive);
/// UserError (field "algo") otherwise.
BaselineKind parse_baseline_kind(const std::string& name);
/// The short name parse_baseline_kind accepts ("rd" for kRecursiveDoubling).
std::string to_string(BaselineKind kind);
/// Every kind, in enum order.
std::vector<BaselineKind> all_baseline_kinds();

/// Knobs of the baselines.
struct BaselineOptions {
  /// Pieces the data is cut into for pipelined chains and trees (chain, tree, dbt); clipped to
  /// the number of chunks available.
  int pipeline_chunks = 1;
  /// Rings for kRing: 0 uses as many edge-disjoint rings as the lanes allow (and as there are
  /// chunks per rank to spread over them); otherwise exactly this many (UserError if impossible).
  int rings = 0;
  /// kRing: use every ring in both directions (pairs of a ring and its reverse).
  bool bidirectional = false;
  /// kHier allreduce: parts each group moving inside a node is cut into, on separate channels
  /// (MSCCLang's parallelize(N), sec. 5.1); 0 = the number of nodes, like the paper.
  int parallel = 0;
  /// kRing: use these rings (e.g. nccl_rings().rings) instead of searching; each must be a
  /// cycle through every rank over the topology's connections (the verifier checks the links).
  std::vector<std::vector<int>> ring_list;
};

/// Why `kind` cannot build `collective` on `topology`, or "" when it can.
std::string baseline_inapplicable_reason(BaselineKind kind, const Collective& collective,
                                         const Topology& topology);

/// True when make_baseline(kind, collective, topology) succeeds.
bool baseline_applies(BaselineKind kind, const Collective& collective, const Topology& topology);

/// Builds the baseline. Every op uses a single-hop connection of `topology`; patterns that need
/// other pairs either relay through intermediate ranks (direct, twostep) or are rejected.
/// Throws UserError (field "algo") with the reason when the baseline does not apply.
Algorithm make_baseline(BaselineKind kind, const Collective& collective, const Topology& topology,
                        const BaselineOptions& options = {});

/// Edge-disjoint directed Hamiltonian rings over `topology`, using each link's lanes and each
/// switch port once per ring (NCCL-style ring search); at most `max_rings` (0 = no limit).
/// With `bidirectional`, rings come in pairs (a ring, then its reverse).
std::vector<std::vector<int>> find_rings(const Topology& topology, int max_rings = 0,
                                         bool bidirectional = false);

/// The rings NCCL would build on `topology`: every edge-disjoint ring find_rings finds (at most
/// kMaxNcclRings), used in both directions when that gives as many rings as one direction.
struct NcclRings {
  int count = 1;                        // rings (a reversed ring counts as one); at least 1
  bool bidirectional = false;           // the rings come in pairs of a ring and its reverse
  std::vector<std::vector<int>> rings;  // the rings found (empty when none)
};
inline constexpr int kMaxNcclRings = 16;
NcclRings nccl_rings(const Topology& topology);

/// The ring baseline with its defaults for `kind` (and `root`) on `topology`: nccl_rings(), one
/// chunk per ring, searched once. UserError when the ring baseline does not build it.
Algorithm nccl_ring(const Topology& topology, CollectiveKind kind, int root = 0);

}  // namespace ccsynth::synth
