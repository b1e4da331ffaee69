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
  /// kDirect, kRing, kDbt: topology-unaware, as ASTRA-sim runs them (TACOS sec. V.A) and as NCCL's
  /// p2p sends do: direct sends every block straight to its destination in one step (no relay,
  /// no multicast, no reduction on the way); ring runs the logical ring in rank order (and its
  /// reverse when bidirectional), dbt places tree position q on rank q. Sends between ranks without a connection are routed by the
  /// network over a shortest path (the Algorithm is `routed`).
  bool end_to_end = false;
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

/// NCCL's cluster rings (docs/baselines.md, "NCCL's rings"): on a topology with two or more
/// nodes whose GPUs reach the other nodes through NICs (the ports of switches of kind "ib"), one
/// ring per NIC of a node. Ring k enters every node at a GPU of a NIC and leaves it at a GPU of
/// a NIC: where a NIC is shared by two or more GPUs, both are NIC k's (its first GPU receives,
/// its second sends, as NCCL's DGX-1/DGX-2 rings do); where every GPU has its own NIC, ring k
/// enters node n at NIC (k + n) mod K and leaves it at NIC (k + n + 1) mod K, so every NIC
/// receives once and sends once and the hops between nodes stay on one NIC index. Inside a node
/// the ring visits every GPU over intra-node connections (NVLink, NVSwitch), preferring lanes no
/// other ring uses; rings share NVSwitch ports as NCCL's channels do. Empty when the topology
/// is not such a cluster (one node, no "ib" switch, NICs spanning nodes, unequal NIC counts, no
/// path through a node between its entry and exit GPUs).
std::vector<std::vector<int>> nic_rings(const Topology& topology);

/// Rings (channels) NCCL runs on a single node whose GPUs all share one switch (NVSwitch: DGX-2,
/// NDv4, DGX H100) and have no other links. NCCL's search finds one ring order and duplicates
/// it over its channels (16 to 24 on NVSwitch A100/H100, NCCL_MIN/MAX_NCHANNELS); the ring
/// search here finds one ring (one switch port per GPU), which nccl_rings() repeats this often.
/// 8 rather than 16-24 keeps the channels of `--instances 2` under the runtime's limits.
inline constexpr int kNvswitchRings = 8;

/// The rings NCCL would build on `topology`: nic_rings() on clusters; on a single NVSwitch node
/// the ring the search finds, kNvswitchRings times; elsewhere (point-to-point machines: DGX-1,
/// rings, meshes, tori) every edge-disjoint ring find_rings finds (at most kMaxNcclRings), used
/// in both directions when that gives as many rings as one direction.
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

/// Whether every ring of `nccl` takes the same time in nccl_ring(), each on links of its own:
/// two or more rings of all ranks whose hops are all direct links (Topology::connection picks
/// no switch) with one alpha, beta and lane count, no link used twice. Ring j then carries
/// chunk j of every rank over links no other ring uses, and the simulator shares nothing else
/// between them but the launch, which every ring pays alike (docs/baselines.md, "The nccl
/// reference").
bool rings_time_alike(const Topology& topology, const NcclRings& nccl);

/// The first ring of nccl_ring() alone: the same ops as that ring's there (channel 0), for the
/// collective with one chunk per rank, i.e. 1 / nccl.count of nccl_ring()'s data.
Algorithm nccl_first_ring(const Topology& topology, CollectiveKind kind, int root,
                          const NcclRings& nccl);

}  // namespace ccsynth::synth
