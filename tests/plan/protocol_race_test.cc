// One evaluation for several protocols (EvaluateOptions::protocols): each variant compiled once
// and simulated in every protocol gives exactly what evaluating the protocols one after the
// other gave (the nccl reference's loop before issues 15/16).

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/error.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/plan/evaluate.h"
#include "ccsynth/plan/reference.h"
#include "ccsynth/plan/tune.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/verify_program.h"
#include "evaluate_testing.h"

namespace ccsynth::plan {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

// evaluate_nccl as it was: one evaluate_variants call per candidate and protocol, each
// compiling every variant again, at the sizes where the protocol can still win.
std::optional<Evaluated> nccl_protocol_by_protocol(const Collective& collective,
                                                   const Topology& topology,
                                                   const VariantSpace& space,
                                                   const EvaluateOptions& options) {
  std::optional<Evaluated> best;
  for (const NcclCandidate& candidate : reference_nccl(collective, topology)) {
    for (const Protocol protocol : kNcclProtocols) {
      compiler::CompileOptions compile;
      compile.name = "nccl_" + candidate.algo;
      compile.protocol = protocol;
      std::vector<double> best_us;
      if (best && best->ok() && best->results.size() == options.sizes.size())
        for (const SizedResult& r : best->results) best_us.push_back(r.time_us);
      EvaluateOptions some = options;
      some.sizes =
          sizes_protocol_can_win(candidate.algorithm.collective, candidate.algorithm.routed,
                                 topology, protocol, options.sizes, best_us);
      if (some.sizes.empty()) continue;
      keep_faster(best, evaluate_variants(candidate.algorithm, compile, space, some));
    }
  }
  return best;
}

void expect_same(const Evaluated& now, const Evaluated& before, const std::string& name) {
  ASSERT_TRUE(now.ok()) << name;
  ASSERT_TRUE(before.ok()) << name;
  ASSERT_EQ(now.results.size(), before.results.size()) << name;
  for (size_t i = 0; i < now.results.size(); ++i) {
    const SizedResult& a = now.results[i];
    const SizedResult& b = before.results[i];
    const std::string at = name + " at " + std::to_string(a.bytes);
    EXPECT_EQ(a.bytes, b.bytes) << at;
    EXPECT_EQ(a.time_us, b.time_us) << at;  // bit for bit: the same simulation
    EXPECT_EQ(a.lower_bound_us, b.lower_bound_us) << at;
    EXPECT_EQ(a.protocol, b.protocol) << at;
    EXPECT_EQ(a.instances, b.instances) << at;
    EXPECT_EQ(a.fused, b.fused) << at;
    EXPECT_EQ(a.schedule_order, b.schedule_order) << at;
  }
  EXPECT_EQ(now.options.name, before.options.name) << name;
  EXPECT_EQ(now.options.protocol, before.options.protocol) << name;
  EXPECT_EQ(now.program.protocol, now.options.protocol) << name;
  EXPECT_EQ(formats::write_msccl_xml(now.program), formats::write_msccl_xml(before.program))
      << name;
}

// NCCL's allgather ring on `t`.
Algorithm nccl_allgather_ring(const Topology& t) {
  const std::vector<NcclCandidate> nccl =
      reference_nccl(make_collective(CollectiveKind::kAllGather, t.num_ranks), t);
  EXPECT_EQ(nccl.size(), 1u);
  return nccl.at(0).algorithm;
}

struct Case {
  std::string topology;
  CollectiveKind kind;
};

// The one-call reference equals the per-protocol loop: time, variant and protocol per size,
// and the program kept, on a point-to-point machine, a cluster ring and a cluster with NCCL's
// double binary tree (allreduce on two nodes: ring and dbt race).
TEST(ProtocolRace, NcclReferenceMatchesTheProtocolByProtocolLoop) {
  const std::vector<Case> cases = {{"dgx1", CollectiveKind::kAllReduce},
                                   {"ndv2x2", CollectiveKind::kAllGather},
                                   {"ndv2x2", CollectiveKind::kAllReduce},
                                   {"ndv4x2", CollectiveKind::kAllReduce}};
  VariantSpace space;
  space.instances = {1, 2};
  for (const Case& c : cases) {
    const Topology t = topologies::make_builtin(c.topology);
    const Collective collective = make_collective(c.kind, t.num_ranks);
    EvaluateOptions eo;
    eo.topology = &t;
    eo.sizes = {kKiB, 64 * kKiB, kMiB, 16 * kMiB, 256 * kMiB};
    const std::optional<Evaluated> now = evaluate_nccl(collective, t, {}, space, eo);
    const std::optional<Evaluated> before = nccl_protocol_by_protocol(collective, t, space, eo);
    ASSERT_TRUE(now && before) << c.topology;
    expect_same(*now, *before, c.topology + " " + to_string(c.kind));
  }
}

// The protocols NCCL picks do differ with the size (else the comparison above would not test
// the pairing of protocol and size): LL at 1 KB, Simple at 256 MB on the DGX-1.
TEST(ProtocolRace, TheWinningProtocolChangesWithTheSize) {
  const Topology t = topologies::make_builtin("dgx1");
  const Collective ar = make_collective(CollectiveKind::kAllReduce, t.num_ranks);
  EvaluateOptions eo;
  eo.topology = &t;
  eo.sizes = {kKiB, 256 * kMiB};
  const std::optional<Evaluated> nccl = evaluate_nccl(ar, t, {}, VariantSpace{}, eo);
  ASSERT_TRUE(nccl && nccl->ok());
  ASSERT_EQ(nccl->results.size(), 2u);
  EXPECT_NE(nccl->results[0].protocol, Protocol::kSimple);
  EXPECT_EQ(nccl->results[1].protocol, Protocol::kSimple);
  EXPECT_EQ(nccl->program.protocol, Protocol::kSimple);
}

// A wrong program (the fused one, with a corrupted receive) that simulates fastest in every
// protocol gives way, in every protocol, to the next correct variant; the pairs it kept from
// being simulated are simulated then. Same outcome as one protocol at a time.
TEST(ProtocolRace, AWrongVariantGivesWayInEveryProtocol) {
  const Topology t = topologies::make_builtin("dgx1");
  const Algorithm ring = nccl_allgather_ring(t);
  EvaluateOptions eo = testing::small_and_large(t);
  int corrupted = 0;
  eo.compile = testing::corrupting_fused_compiler(corrupted);
  EvaluateOptions all = eo;
  all.protocols = kNcclProtocols;
  const Evaluated now = evaluate_variants(ring, {}, VariantSpace{}, all);
  EXPECT_GT(corrupted, 0);
  ASSERT_TRUE(now.ok());
  EXPECT_FALSE(now.options.fuse);
  EXPECT_TRUE(verify::verify_program(now.program).ok());
  std::optional<Evaluated> before;
  for (const Protocol protocol : kNcclProtocols) {
    compiler::CompileOptions compile;
    compile.protocol = protocol;
    keep_faster(before, evaluate_variants(ring, compile, VariantSpace{}, eo));
  }
  ASSERT_TRUE(before);
  expect_same(now, *before, "dgx1 allgather, fused corrupted");
  for (const SizedResult& r : now.results) EXPECT_FALSE(r.fused) << r.bytes;
}

// Where no protocol's bound can beat the time to beat, nothing is simulated and that size has
// no result; a time to beat per size is required.
TEST(ProtocolRace, ASizeNothingCanBeatHasNoResult) {
  const Topology t = topologies::make_builtin("dgx1");
  const Algorithm ring = nccl_allgather_ring(t);
  EvaluateOptions eo = testing::small_and_large(t);
  eo.protocols = kNcclProtocols;
  eo.time_to_beat = {1e9, 1e-3};  // anything beats the first, nothing the second
  const Evaluated e = evaluate_variants(ring, {}, VariantSpace{}, eo);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e.results.size(), 1u);
  EXPECT_EQ(e.results[0].bytes, kKiB);
  eo.time_to_beat = {1.0};
  EXPECT_THROW(evaluate_variants(ring, {}, VariantSpace{}, eo), UserError);
}

// A protocol in which the simulator refuses a correct program (LL's 32 KB slices at 128 GiB
// per rank: over the simulator's step-instance cap) leaves the race and the others keep theirs,
// as an evaluation in that protocol alone fails.
TEST(ProtocolRace, AProtocolTheSimulatorRefusesLeavesTheRace) {
  const Topology t = topologies::make_builtin("ring:4");
  const Algorithm ring = nccl_allgather_ring(t);
  EvaluateOptions eo;
  eo.topology = &t;
  eo.sizes = {int64_t{128} << 30};
  eo.protocols = {Protocol::kLL, Protocol::kSimple};  // LL first: nothing prunes it
  const Evaluated e = evaluate_variants(ring, {}, single_variant({}), eo);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e.results.size(), 1u);
  EXPECT_EQ(e.results[0].protocol, Protocol::kSimple);
  EXPECT_EQ(e.program.protocol, Protocol::kSimple);
  eo.protocols = {Protocol::kLL};
  EXPECT_THROW(evaluate_variants(ring, {}, single_variant({}), eo), UserError);
}

// A program is not simulated in a later protocol where its bound there is above the time the
// same program already simulated in an earlier protocol: NCCL's ring on ring:4 at 64 MiB in
// Simple beats LL128's and LL's load bounds (the same bytes at more microseconds per byte), so
// one simulation instead of three. (The 512-rank ring of `synth -t torus3d:8x8x8` spent 10 s
// simulating LL at 1 MB that way, issue 16.) The skipped protocols could not have won.
TEST(ProtocolRace, AProtocolThatCannotBeatTheSameProgramsEarlierProtocolIsNotSimulated) {
  const Topology t = topologies::make_builtin("ring:4");
  const Algorithm ring = nccl_allgather_ring(t);
  const int64_t bytes = 64 * kMiB;
  EvaluateOptions eo;
  eo.topology = &t;
  eo.sizes = {bytes};
  eo.protocols = kNcclProtocols;
  ASSERT_EQ(eo.protocols.front(), Protocol::kSimple);
  const Evaluated e = evaluate_variants(ring, {}, single_variant({}), eo);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e.results.size(), 1u);
  EXPECT_EQ(e.results[0].protocol, Protocol::kSimple);
  EXPECT_EQ(e.stages.compilations, 1);
  EXPECT_EQ(e.stages.simulations, 1);
  for (const Protocol protocol : {Protocol::kLL128, Protocol::kLL}) {
    compiler::CompileOptions options;
    options.protocol = protocol;
    const Program program = compiler::compile(ring, options);
    EXPECT_GT(program_load(program, t).lower_bound_us(bytes), e.results[0].time_us);
    EXPECT_GT(sim::simulate(program, t, bytes).time_us, e.results[0].time_us);
  }
}

}  // namespace
}  // namespace ccsynth::plan

namespace ccsynth::plan {
namespace {

// A variant that compiles to the program an earlier variant of its lowering compiled to is not
// simulated again: direct allgather on fully connected ranks relays nothing, so fusion finds nothing and the fused and
// unfused programs are the same (trees' allgather on 1024 ranks spent 4.5 s simulating such a
// twin, issue 15). The evaluation equals the fused variant's alone; a ring, whose relays fuse,
// races both.
TEST(ProtocolRace, AVariantWithAnEarlierVariantsProgramIsNotSimulatedAgain) {
  const Topology t = topologies::make_builtin("fc:4");
  const Collective ag = make_collective(CollectiveKind::kAllGather, t.num_ranks);
  const Algorithm direct = synth::make_baseline(synth::BaselineKind::kDirect, ag, t);
  EvaluateOptions eo = testing::small_and_large(t);
  eo.protocols = kNcclProtocols;
  VariantSpace both;
  both.instances = {1};
  both.fusion = {true, false};
  const Evaluated raced = evaluate_variants(direct, {}, both, eo);
  ASSERT_TRUE(raced.ok());
  EXPECT_EQ(raced.stages.twins, 1);
  EXPECT_EQ(raced.stages.compilations, 2);
  VariantSpace fused = both;
  fused.fusion = {true};
  const Evaluated alone = evaluate_variants(direct, {}, fused, eo);
  EXPECT_EQ(raced.stages.simulations, alone.stages.simulations);
  expect_same(raced, alone, "fc:4 direct allgather");
  const Evaluated ring = evaluate_variants(nccl_allgather_ring(t), {}, both, eo);
  EXPECT_EQ(ring.stages.twins, 0);
  EXPECT_EQ(ring.stages.compilations, 2);
}

}  // namespace
}  // namespace ccsynth::plan
