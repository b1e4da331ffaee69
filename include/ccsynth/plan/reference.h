#pragma once
// The reference every result is compared with, named `nccl`: the algorithms NCCL would run for
// the collective on the topology (docs/baselines.md, "The nccl reference"), built from the
// baselines with NCCL's defaults:
//   allgather, reducescatter  the ring over NCCL's rings (synth::nccl_rings: one ring per NIC on
//                             clusters, synth::kNvswitchRings on an NVSwitch node, every
//                             edge-disjoint ring on point-to-point machines)
//   allreduce                 that ring, and on two or more nodes also NCCL's double binary
//                             tree (dbt); evaluate_nccl keeps the faster per size, as NCCL's
//                             tuner picks per size
//   alltoall, gather, scatter NCCL's point-to-point exchange: the `direct` baseline end to end,
//                             every rank sending straight to every peer, routed by the network
//                             (over Topology::host_switches, PCIe, where no NVLink connects two
//                             GPUs, as NCCL's p2p does)
//   broadcast, reduce         NCCL's ring pipeline: the `chain` baseline from the root over a
//                             ring order, cut into kNcclPipeline pieces
// Each candidate runs in every protocol NCCL has (Simple, LL128, LL) and the fastest per size is
// kept, as NCCL's tuner picks the algorithm and protocol per size.
// `ccsynth baseline --algo ring` without flags builds the same ring.

#include <optional>
#include <string>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/algorithm.h"
#include "ccsynth/core/collective.h"
#include "ccsynth/core/topology.h"
#include "ccsynth/plan/evaluate.h"

namespace ccsynth::plan {

/// Pieces NCCL-like pipelines (broadcast and reduce chains, the allreduce tree) are cut into.
inline constexpr int kNcclPipeline = 8;

/// The protocols NCCL chooses among per size (its tuner; NCCL_PROTO unset).
inline const std::vector<Protocol> kNcclProtocols = {Protocol::kSimple, Protocol::kLL128,
                                                     Protocol::kLL};

/// One algorithm NCCL would run: `algo` is the baseline it comes from (ring, dbt, direct, chain).
struct NcclCandidate {
  std::string algo;
  Algorithm algorithm;
};

/// The algorithms NCCL would run for `collective`'s kind and root on `topology` (above); empty
/// where none applies (custom collectives, no ring or chain through all ranks).
std::vector<NcclCandidate> reference_nccl(const Collective& collective, const Topology& topology);

/// Folds `e` into `best`, matching results by size (`e` may cover only some of best's sizes):
/// per size the faster (best's on a tie); the program of `e` when it is faster at best's last
/// size. `e` replaces a `best` that is missing or wrong.
void keep_faster(std::optional<Evaluated>& best, Evaluated&& e);

/// Steps per threadblock and threadblocks per rank the nccl reference is compiled with when no
/// candidate fits `base`'s runtime limits in any variant: NCCL's own kernels loop over a ring of
/// any length, while an MSCCL program of NCCL's ring on 4096 ranks (4095 transfers per rank and
/// ring) needs more than the executor's 32 channels x 64 steps.
inline constexpr int kNcclUnlimited = 1 << 30;

/// Whether `nccl` (evaluate_nccl's result) was compiled without the runtime's limits
/// (kNcclUnlimited): it is simulated as NCCL would run, but its program is no MSCCL program.
bool beyond_runtime_limits(const Evaluated& nccl);

/// Evaluates every reference_nccl() candidate (compiled as `base` with its name set to
/// "nccl_<algo>", in every variant of `space`, each compiled once and simulated in each of
/// `protocols`: one evaluate_variants call per candidate, EvaluateOptions::protocols) and keeps
/// per size the fastest correct one; the program kept is the fastest at the last size. nullopt when
/// no candidate applies; a candidate that fails verification is returned as is when no
/// candidate is correct. Where every candidate is over `base`'s runtime limits, they are
/// evaluated again without them (kNcclUnlimited). `protocols` = {Simple} is NCCL run with
/// NCCL_PROTO=Simple (SCCL's baseline, SCCL sec. 5.5).
std::optional<Evaluated> evaluate_nccl(const Collective& collective, const Topology& topology,
                                       const compiler::CompileOptions& base,
                                       const VariantSpace& space, const EvaluateOptions& options,
                                       const std::vector<Protocol>& protocols = kNcclProtocols);

/// evaluate_nccl() for a caller that keeps only the times (Evaluated::program is left empty):
/// the same results, with less work where NCCL's ring is compiled without the runtime's limits
/// (thousands of ranks) and its rings time alike (synth::rings_time_alike: identical rings on
/// links of their own, e.g. a mesh's or torus' ring and its reverse). There the first ring alone
/// is evaluated, carrying one chunk per rank at each size / the number of rings: its program
/// is the first ring's part of the whole one and takes the same time, at half the memory and
/// time for a ring and its reverse (mesh2d:64x64: docs/baselines.md). Evaluated::algorithm is
/// then that first ring. Sizes that do not split evenly over the rings take the whole ring.
std::optional<Evaluated> evaluate_nccl_times(
    const Collective& collective, const Topology& topology, const compiler::CompileOptions& base,
    const VariantSpace& space, const EvaluateOptions& options,
    const std::vector<Protocol>& protocols = kNcclProtocols);

}  // namespace ccsynth::plan
