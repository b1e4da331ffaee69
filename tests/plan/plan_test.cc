// The planner (plan/*.h): runtime limits, variant evaluation, the ring reference, reports and
// the front door plan() that the CLI, the benches and library users share.

#include "ccsynth/plan/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "ccsynth/core/error.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/plan/evaluate.h"
#include "ccsynth/plan/limits.h"
#include "ccsynth/plan/reference.h"
#include "ccsynth/plan/report.h"
#include "ccsynth/plan/tune.h"
#include "ccsynth/sim/bounds.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/synth/tacos.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"
#include "evaluate_testing.h"
#include "plan/parallel.h"

namespace ccsynth::plan {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(Limits, EachDialectHasItsOwnAndOverridesWin) {
  EXPECT_EQ(runtime_limits(formats::XmlDialect::kClassic).max_steps_per_threadblock, 256);
  EXPECT_EQ(runtime_limits(formats::XmlDialect::kClassic).max_threadblocks_per_rank, 216);
  EXPECT_EQ(runtime_limits(formats::XmlDialect::kExecutor).max_steps_per_threadblock, 64);
  EXPECT_EQ(runtime_limits(formats::XmlDialect::kExecutor).max_threadblocks_per_rank, 1024);
  compiler::CompileOptions o;
  apply_runtime_limits(o, formats::XmlDialect::kClassic, {0, 100});
  EXPECT_EQ(o.max_steps_per_threadblock, 256);
  EXPECT_EQ(o.max_threadblocks_per_rank, 100);
}

// The ring allgather with two chunks per rank on `t`.
Algorithm two_chunk_ring_allgather(const Topology& t) {
  return synth::make_baseline(synth::BaselineKind::kRing,
                              make_collective(CollectiveKind::kAllGather, t.num_ranks, 2), t);
}

// The kept result per size is the minimum over the variants, each simulated on its own.
TEST(Evaluate, KeepsTheFastestVariantPerSize) {
  const Topology t = topologies::make_builtin("ring:4");
  const Algorithm ring = two_chunk_ring_allgather(t);
  EvaluateOptions eo = testing::small_and_large(t);
  VariantSpace space;
  space.instances = {1, 2};
  const Evaluated best = evaluate_variants(ring, {}, space, eo);
  ASSERT_TRUE(best.ok());
  ASSERT_EQ(best.results.size(), 2u);
  for (size_t i = 0; i < eo.sizes.size(); ++i) {
    double fastest = 1e300;
    for (int instances : {1, 2}) {
      for (bool fuse : {true, false}) {
        compiler::CompileOptions o;
        o.instances = instances;
        o.fuse = fuse;
        const Evaluated one = evaluate(ring, o, eo);
        ASSERT_TRUE(one.ok());
        fastest = std::min(fastest, one.results[i].time_us);
      }
    }
    EXPECT_DOUBLE_EQ(best.results[i].time_us, fastest) << eo.sizes[i];
    EXPECT_GE(best.results[i].ratio_to_bound(), 0.999);
  }
  // The kept program is the variant fastest at the last size, and its options say which.
  const double again = sim::simulate(best.program, t, eo.sizes.back()).time_us;
  EXPECT_DOUBLE_EQ(again, best.results.back().time_us);
  EXPECT_EQ(best.options.instances, best.results.back().instances);
}

// Only the variants whose results are kept are verified: a wrong program that simulates
// fastest (here the fused one, first in the order, with a corrupted receive) is found, and the
// next fastest correct variant takes its place at every size.
TEST(Evaluate, AWrongFastestVariantGivesWayToTheNextCorrectOne) {
  const Topology t = topologies::make_builtin("ring:4");
  const Algorithm ring = two_chunk_ring_allgather(t);
  EvaluateOptions eo = testing::small_and_large(t);
  int corrupted = 0;
  eo.compile = testing::corrupting_fused_compiler(corrupted);
  const Evaluated best = evaluate_variants(ring, {}, {}, eo);
  EXPECT_GT(corrupted, 0);
  ASSERT_TRUE(best.ok());
  EXPECT_FALSE(best.options.fuse);
  EXPECT_TRUE(verify::verify_program(best.program).ok());
  compiler::CompileOptions unfused;
  unfused.fuse = false;
  const Evaluated plain = evaluate(ring, unfused, eo);
  // The corrupted variant would have won: the correct fused program is as fast or faster and
  // comes first.
  EvaluateOptions correct = eo;
  correct.compile = nullptr;
  EXPECT_LE(evaluate(ring, {}, correct).results.back().time_us, plain.results.back().time_us);
  ASSERT_EQ(best.results.size(), eo.sizes.size());
  for (size_t i = 0; i < eo.sizes.size(); ++i) {
    EXPECT_FALSE(best.results[i].fused) << eo.sizes[i];
    EXPECT_DOUBLE_EQ(best.results[i].time_us, plain.results[i].time_us) << eo.sizes[i];
  }
}

// A TACOS allgather: timed, so its variants are fusion x step / start-time order (2 lowerings).
Algorithm tacos_allgather(const Topology& t) {
  return synth::synthesize_tacos(t, make_collective(CollectiveKind::kAllGather, t.num_ranks, 1))
      .algorithm;
}

// The lowerings run at once, in any order: the kept variant, its program and every size's
// result are those of the one-at-a-time run.
TEST(Evaluate, TheOutcomeDoesNotDependOnTheThreadCount) {
  const Topology t = topologies::make_builtin("torus2d:4x4");
  const Algorithm a = tacos_allgather(t);
  EvaluateOptions eo = testing::small_and_large(t);
  eo.threads = 1;
  const Evaluated one = evaluate_variants(a, {}, {}, eo);
  ASSERT_TRUE(one.ok());
  for (const int threads : {2, 4}) {
    eo.threads = threads;
    const Evaluated many = evaluate_variants(a, {}, {}, eo);
    ASSERT_TRUE(many.ok()) << threads;
    EXPECT_EQ(many.program, one.program) << threads;
    EXPECT_EQ(many.options.fuse, one.options.fuse) << threads;
    EXPECT_EQ(many.options.schedule_order, one.options.schedule_order) << threads;
    ASSERT_EQ(many.results.size(), one.results.size());
    for (size_t i = 0; i < one.results.size(); ++i) {
      EXPECT_EQ(many.results[i].time_us, one.results[i].time_us) << threads << " " << i;
      EXPECT_EQ(many.results[i].fused, one.results[i].fused) << threads << " " << i;
      EXPECT_EQ(many.results[i].schedule_order, one.results[i].schedule_order);
    }
    EXPECT_EQ(many.algorithm, a);
  }
}

// Each of the four variants is compiled once, simulated at most once per size, and only the
// kept one is verified (one size: one winner).
TEST(Evaluate, EachVariantIsCompiledOnceAndOnlyTheKeptOneVerified) {
  const Topology t = topologies::make_builtin("torus2d:4x4");
  EvaluateOptions eo;
  eo.topology = &t;
  eo.sizes = {kMiB};
  for (const int threads : {1, 2}) {
    eo.threads = threads;
    const Evaluated e = evaluate_variants(tacos_allgather(t), {}, {}, eo);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e.stages.compilations, 4) << threads;
    EXPECT_EQ(e.stages.over_limits, 0) << threads;
    EXPECT_GE(e.stages.simulations, 1) << threads;
    EXPECT_LE(e.stages.simulations, 4) << threads;
    EXPECT_EQ(e.stages.program_verifications, 1) << threads;
  }
}

// The ops of `a` whose chunk is in the first half: a wrong algorithm that moves half the data.
Algorithm first_half(const Algorithm& in) {
  Algorithm a = in;
  const int half = a.collective.num_chunks() / 2;
  std::erase_if(a.ops, [half](const ChunkOp& op) { return op.chunk >= half; });
  return a;
}

// `a` run twice, one run after the other: correct, with twice the traffic.
Algorithm twice(const Algorithm& in) {
  Algorithm a = in;
  const int steps = a.num_steps();
  const size_t n = a.ops.size();
  for (size_t i = 0; i < n; ++i) {
    ChunkOp again = a.ops[i];
    again.step += steps;
    a.ops.push_back(again);
  }
  return a;
}

// The variants (fused first, then unfused) of the two-chunk ring allgather on ring:4 at
// 64 MiB, each compiled from the ring changed by `fused` or `unfused`.
Evaluated race_changed_variants(const std::function<Algorithm(const Algorithm&)>& fused,
                                const std::function<Algorithm(const Algorithm&)>& unfused) {
  static const Topology t = topologies::make_builtin("ring:4");
  EvaluateOptions eo;
  eo.topology = &t;
  eo.sizes = {64 * kMiB};
  eo.compile = [&](const Algorithm& a, const compiler::CompileOptions& o) {
    return compiler::compile(o.fuse ? fused(a) : unfused(a), o);
  };
  return evaluate_variants(two_chunk_ring_allgather(t), {}, {}, eo);
}

Algorithm unchanged(const Algorithm& a) { return a; }

// A variant whose load bound is above the best time simulated so far is not simulated; when
// the variant that set that time turns out wrong, the pruned one is simulated and wins. Here
// the fused variant (compiled first) moves half the data: it is fast and wrong, and at 64 MiB
// the unfused one's bound (all the data over the ring's links) is above its time.
TEST(Evaluate, APrunedVariantIsSimulatedWhenTheOneThatPrunedItIsWrong) {
  const Topology t = topologies::make_builtin("ring:4");
  const Algorithm ring = two_chunk_ring_allgather(t);
  const int64_t bytes = 64 * kMiB;
  const Evaluated best = race_changed_variants(first_half, unchanged);
  ASSERT_TRUE(best.ok());
  EXPECT_FALSE(best.options.fuse);
  compiler::CompileOptions unfused;
  unfused.fuse = false;
  const Program plain = compiler::compile(ring, unfused);
  const double fused_half =
      sim::simulate(compiler::compile(first_half(ring), {}), t, bytes).time_us;
  EXPECT_GT(program_load(plain, t).lower_bound_us(bytes), fused_half);  // it was pruned
  EXPECT_DOUBLE_EQ(best.results[0].time_us, sim::simulate(plain, t, bytes).time_us);
  EXPECT_EQ(best.stages.simulations, 2);            // the wrong one, then the pruned one
  EXPECT_EQ(best.stages.program_verifications, 2);  // the wrong one, then the winner
}

// A correct variant whose load bound is above the best time already simulated is never
// simulated: the unfused variant here sends everything twice.
TEST(Evaluate, AVariantThatCannotWinIsNotSimulated) {
  const Topology t = topologies::make_builtin("ring:4");
  const Algorithm ring = two_chunk_ring_allgather(t);
  const Evaluated best = race_changed_variants(unchanged, twice);
  ASSERT_TRUE(best.ok());
  EXPECT_TRUE(best.options.fuse);
  compiler::CompileOptions unfused;
  unfused.fuse = false;
  const Program heavy = compiler::compile(twice(ring), unfused);
  ASSERT_TRUE(verify::verify_program(heavy).ok());
  EXPECT_GT(program_load(heavy, t).lower_bound_us(64 * kMiB), best.results[0].time_us);
  EXPECT_EQ(best.stages.compilations, 2);
  EXPECT_EQ(best.stages.simulations, 1);
  EXPECT_EQ(best.stages.program_verifications, 1);
}

// The pool runs every index once and rethrows the error of the lowest failing index.
TEST(Parallel, RunsEveryJobOnceAndRethrowsTheFirstError) {
  for (const int threads : {1, 3}) {
    std::vector<int> runs(50, 0);
    parallel_for(threads, runs.size(), [&](size_t i) { ++runs[i]; });
    EXPECT_EQ(std::count(runs.begin(), runs.end(), 1), 50) << threads;
    try {
      parallel_for(threads, 10, [](size_t i) {
        if (i == 3 || i == 7) throw UserError("", "job", std::to_string(i));
      });
      ADD_FAILURE() << "no error rethrown";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find('3'), std::string::npos) << e.what();
    }
  }
}

// A thread running pool jobs counts once in busy_threads(), however deeply the pools nest, and
// not after its jobs or while it only waits (WaitingThread); wait_for_idle_thread() returns at
// once when fewer are busy, and gives up when told to while every thread is busy.
TEST(Parallel, BusyThreadsCountEachThreadOnceAndIdleWaitsGiveUp) {
  ASSERT_EQ(busy_threads(), 0);
  std::atomic<int> most{0};
  parallel_for(1, 2, [&](size_t) {
    parallel_for(1, 2, [&](size_t) { most = std::max(most.load(), busy_threads()); });
  });
  EXPECT_EQ(most.load(), 1);
  EXPECT_EQ(busy_threads(), 0);
  std::atomic<bool> give_up{false};
  EXPECT_TRUE(wait_for_idle_thread(1, give_up));
  bool waited = true;
  parallel_for(1, 1, [&](size_t) {
    std::thread waiter([&] { waited = wait_for_idle_thread(1, give_up); });
    give_up_waiting(give_up);
    waiter.join();
  });
  EXPECT_FALSE(waited);
  EXPECT_EQ(busy_threads(), 0);
  // A busy thread that only waits for another one is not counted meanwhile.
  parallel_for(1, 1, [&](size_t) {
    EXPECT_EQ(busy_threads(), 1);
    {
      const WaitingThread waiting;
      EXPECT_EQ(busy_threads(), 0);
      give_up = false;
      EXPECT_TRUE(wait_for_idle_thread(1, give_up));
    }
    EXPECT_EQ(busy_threads(), 1);
  });
  // A thread whose jobs are done is not busy while its pool finishes, even inside an outer
  // pool's job: job 1 sees an idle thread whichever thread ran job 0 (a watchdog gives up after
  // 20 s instead of hanging).
  for (int repeat = 0; repeat < 20; ++repeat) {
    std::atomic<bool> watchdog_fired{false};
    std::atomic<bool> saw_idle{false};
    std::atomic<bool> job_1_started{false};
    parallel_for(1, 1, [&](size_t) {
      parallel_for(2, 2, [&](size_t job) {
        if (job == 0) {  // ends once job 1 runs on the other thread
          while (!job_1_started) std::this_thread::yield();
          return;
        }
        job_1_started = true;
        std::thread watchdog([&] {
          for (int i = 0; i < 200 && !saw_idle; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
          if (!saw_idle) give_up_waiting(watchdog_fired);
        });
        saw_idle = wait_for_idle_thread(2, watchdog_fired);
        watchdog.join();
      });
    });
    EXPECT_TRUE(saw_idle) << repeat;
  }
}

// Races tacos on the 16x16 mesh (130K steps: verified beside a simulation where a thread is
// idle) with `space` and `memory_budget_bytes`, on one thread (never beside) and on two: the
// same winner, times and verdict, the winner's verdict its own, at most `most_verifications`.
void expect_verifying_beside_keeps_the_outcome(const VariantSpace& space,
                                               int64_t memory_budget_bytes,
                                               int most_verifications) {
  const Topology t = topologies::make_builtin("mesh2d:16x16");
  const Algorithm a = tacos_allgather(t);
  EvaluateOptions eo;
  eo.topology = &t;
  eo.sizes = {kMiB};
  eo.memory_budget_bytes = memory_budget_bytes;
  eo.threads = 1;
  const Evaluated one = evaluate_variants(a, {}, space, eo);
  eo.threads = 2;
  const Evaluated two = evaluate_variants(a, {}, space, eo);
  ASSERT_TRUE(one.ok());
  ASSERT_TRUE(two.ok());
  EXPECT_GE(two.program.total_steps(), 100000);
  EXPECT_EQ(two.options.fuse, one.options.fuse);
  EXPECT_EQ(two.options.schedule_order, one.options.schedule_order);
  ASSERT_EQ(two.results.size(), 1u);
  EXPECT_EQ(two.results[0].time_us, one.results[0].time_us);
  EXPECT_EQ(one.stages.program_verifications, 1);
  EXPECT_GE(two.stages.program_verifications, 1);
  EXPECT_LE(two.stages.program_verifications, most_verifications);
  EXPECT_TRUE(two.program_report.ok());
  EXPECT_TRUE(verify::verify_program(two.program).ok());
}

// Room for two evaluations, one lowering: beside the last variant's simulation, the best
// program so far is verified if it is not yet, else the last variant's; then the winner if
// that was another one.
TEST(Evaluate, VerifyingBesideTheLastSimulationKeepsTheOutcome) {
  VariantSpace space;
  space.schedule_orders = {false};
  expect_verifying_beside_keeps_the_outcome(space, kDefaultMemoryBudgetBytes, 2);
}

// One evaluation at a time (a budget of 1 byte), the two lowerings (step and start-time order)
// one after the other: the best program so far may be verified beside the step order's unfused
// simulation, and the last variant beside its own; at most those two before the winner.
TEST(Evaluate, VerifyingTheBestSoFarBesideTheNextSimulationKeepsTheOutcome) {
  VariantSpace space;
  space.schedule_orders = {false, true};
  expect_verifying_beside_keeps_the_outcome(space, 1, 3);
}

// One evaluation at a time, but room for a lowering group's two programs with their
// simulations (20 MB against 13 MB at about 100 bytes per op for each; two evaluations would
// need 130 MB): the fused and unfused programs are compiled first and simulated at once. The
// same outcome, with one lowering (the last program verified beside) and two.
TEST(Evaluate, SimulatingALoweringsProgramsAtOnceKeepsTheOutcome) {
  constexpr int64_t kRoomForTwoSimulations = 20'000'000;
  ASSERT_TRUE(one_evaluation_at_a_time(65'280, kRoomForTwoSimulations));  // mesh2d:16x16
  VariantSpace one_lowering;
  one_lowering.schedule_orders = {false};
  expect_verifying_beside_keeps_the_outcome(one_lowering, kRoomForTwoSimulations, 2);
  VariantSpace two_lowerings;
  two_lowerings.schedule_orders = {false, true};
  expect_verifying_beside_keeps_the_outcome(two_lowerings, kRoomForTwoSimulations, 3);
}

// At thousands of ranks the evaluations run one at a time (memory), at small sizes as many as
// asked for and there are jobs.
TEST(Evaluate, ConcurrencyIsCappedByJobsAndMemory) {
  EXPECT_EQ(concurrent_evaluations(4, 2, 1000), 2);
  EXPECT_EQ(concurrent_evaluations(1, 4, 1000), 1);
  EXPECT_EQ(concurrent_evaluations(8, 8, 16'773'120), 1);  // mesh2d:64x64 allgather
  EXPECT_GE(concurrent_evaluations(0, 1, 10), 1);
  // The budget is the caller's: a large one runs the 64x64 mesh's evaluations at once, a tiny
  // one any algorithm's one at a time.
  EXPECT_EQ(concurrent_evaluations(8, 8, 16'773'120, int64_t{1} << 40), 8);
  EXPECT_EQ(concurrent_evaluations(8, 8, 1000, 1), 1);
  EXPECT_TRUE(one_evaluation_at_a_time(1000, 1));
  EXPECT_FALSE(one_evaluation_at_a_time(1000));
  EXPECT_TRUE(one_evaluation_at_a_time(16'773'120));
}

TEST(Evaluate, WithoutATopologyOnlyVerifies) {
  const Topology t = topologies::make_builtin("ring:4");
  const Algorithm ring = synth::make_baseline(synth::BaselineKind::kRing,
                                              make_collective(CollectiveKind::kAllReduce, 4, 1), t);
  const Evaluated e = evaluate(ring, {}, {});
  EXPECT_TRUE(e.ok());
  EXPECT_TRUE(e.results.empty());
  EXPECT_TRUE(verify::verify_program(e.program).ok());
}

TEST(Evaluate, AWrongAlgorithmIsNotCompiled) {
  const Topology t = topologies::make_builtin("ring:4");
  Algorithm broken = synth::make_baseline(synth::BaselineKind::kRing,
                                          make_collective(CollectiveKind::kAllGather, 4, 1), t);
  broken.ops.pop_back();
  EvaluateOptions eo;
  eo.topology = &t;
  eo.sizes = {kMiB};
  const Evaluated e = evaluate(broken, {}, eo);
  EXPECT_FALSE(e.ok());
  EXPECT_FALSE(e.compiled);
  EXPECT_FALSE(e.algorithm_report.ok());
  EXPECT_TRUE(e.results.empty());
}

TEST(Evaluate, OverTheLimitsInEveryVariantIsAUserError) {
  const Topology t = topologies::make_builtin("ring:8");
  const Algorithm ring = synth::make_baseline(synth::BaselineKind::kRing,
                                              make_collective(CollectiveKind::kAllReduce, 8, 1), t);
  compiler::CompileOptions tight;
  apply_runtime_limits(tight, RuntimeLimits{1, 1});
  EXPECT_THROW(evaluate_variants(ring, tight, {}, {}), UserError);
}

TEST(Evaluate, EmptyOrInvalidVariantSpacesAreUserErrors) {
  const Topology t = topologies::make_builtin("ring:4");
  const Algorithm ring = synth::make_baseline(synth::BaselineKind::kRing,
                                              make_collective(CollectiveKind::kAllGather, 4, 1), t);
  VariantSpace none;
  none.instances = {};
  EXPECT_THROW(evaluate_variants(ring, {}, none, {}), UserError);
  VariantSpace zero;
  zero.instances = {0};
  EXPECT_THROW(evaluate_variants(ring, {}, zero, {}), UserError);
  EvaluateOptions no_topology;
  no_topology.sizes = {1024};
  EXPECT_THROW(evaluate(ring, {}, no_topology), UserError);
}

// The nccl reference's ring: within 10% of the bound at 64 MB on a ring and a torus (one ring
// with one chunk was 2.1x and 4.2x).
TEST(Reference, RingIsNcclLike) {
  for (const std::string name : {"ring:16", "torus2d:4x4", "dgx1"}) {
    const Topology t = topologies::make_builtin(name);
    const Collective ag = make_collective(CollectiveKind::kAllGather, t.num_ranks);
    const std::vector<NcclCandidate> nccl = reference_nccl(ag, t);
    ASSERT_EQ(nccl.size(), 1u) << name;
    EXPECT_EQ(nccl[0].algo, "ring");
    EvaluateOptions eo;
    eo.topology = &t;
    eo.sizes = {64 * kMiB};
    const Evaluated e = evaluate(nccl[0].algorithm, {}, eo);
    ASSERT_TRUE(e.ok()) << name;
    EXPECT_LT(e.results[0].ratio_to_bound(), 1.1) << name;
  }
  const Topology t = topologies::make_builtin("ring:4");
  const Collective custom = make_collective(CollectiveKind::kAllGather, 4);
  Collective c = custom;
  c.kind = CollectiveKind::kCustom;
  EXPECT_TRUE(reference_nccl(c, t).empty());
}

// What NCCL runs per collective: ring; ring and the double binary tree for allreduce on
// clusters; p2p (direct) for alltoall, gather, scatter; the ring pipeline (chain) for rooted
// broadcast / reduce. Every candidate verifies.
TEST(Reference, NcclAlgorithmPerCollective) {
  using CK = CollectiveKind;
  struct Case {
    std::string topology;
    CK kind;
    std::vector<std::string> algos;
  };
  const std::vector<Case> cases = {
      {"dgx1", CK::kAllGather, {"ring"}},   {"dgx1", CK::kReduceScatter, {"ring"}},
      {"dgx1", CK::kAllReduce, {"ring"}},   {"ndv4x2", CK::kAllReduce, {"ring", "dbt"}},
      {"dgx1", CK::kAllToAll, {"direct"}},  {"dgx2x2", CK::kAllToAll, {"direct"}},
      {"dgx1", CK::kBroadcast, {"chain"}},  {"ring:8", CK::kReduce, {"chain"}},
      {"dgx1", CK::kGather, {"direct"}},    {"ndv4", CK::kScatter, {"direct"}},
      {"dgx2x2", CK::kAllGather, {"ring"}}, {"ndv2x2", CK::kReduceScatter, {"ring"}},
  };
  for (const Case& c : cases) {
    const Topology t = topologies::make_builtin(c.topology);
    const Collective collective = make_collective(c.kind, t.num_ranks, 1, 0);
    const std::vector<NcclCandidate> nccl = reference_nccl(collective, t);
    std::vector<std::string> algos;
    for (const NcclCandidate& n : nccl) {
      algos.push_back(n.algo);
      EXPECT_TRUE(verify::verify_algorithm(n.algorithm, &t).ok()) << c.topology << " " << n.algo;
    }
    EXPECT_EQ(algos, c.algos) << c.topology << " " << to_string(c.kind);
  }
}

// NCCL's rings use every NIC of a cluster: the ring allgather at 32 MB on dgx2x2 was 14.2x the
// bound with one ring (7 of 8 NICs idle), now 1.8x; ndv4x2 7.0x -> 1.8x.
TEST(Reference, ClusterRingIsNearTheBound) {
  for (const std::string name : {"dgx2x2", "ndv4x2"}) {
    const Topology t = topologies::make_builtin(name);
    const Collective ag = make_collective(CollectiveKind::kAllGather, t.num_ranks);
    const std::vector<NcclCandidate> nccl = reference_nccl(ag, t);
    ASSERT_EQ(nccl.size(), 1u) << name;
    EvaluateOptions eo;
    eo.topology = &t;
    eo.sizes = {32 * kMiB};
    const Evaluated e = evaluate_variants(nccl[0].algorithm, {}, VariantSpace{{2}}, eo);
    ASSERT_TRUE(e.ok()) << name;
    EXPECT_LT(e.results[0].ratio_to_bound(), 2.5) << name;
  }
}

// A program's protocols are simulated likely winner first (the lowest bound): at 1 KiB NCCL's
// ring in LL, whose alpha is half of Simple's and LL128's, so their bounds (14 sends one after
// another around the ring, each at least one alpha) are above its time and they are not
// simulated. The outcome is the one of LL alone, and Simple still wins at 64 MiB, where the
// order puts it first there too (one size each).
TEST(Evaluate, ProtocolsAreSimulatedLikelyWinnerFirst) {
  const Topology t = topologies::make_builtin("dgx1");
  const Collective ar = make_collective(CollectiveKind::kAllReduce, t.num_ranks);
  const Algorithm ring = synth::make_baseline(synth::BaselineKind::kRing, ar, t);
  EvaluateOptions eo;
  eo.topology = &t;
  eo.protocols = kNcclProtocols;
  for (const int64_t bytes : {int64_t{1} << 10, int64_t{64} << 20}) {
    eo.sizes = {bytes};
    const Evaluated all = evaluate(ring, {}, eo);
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all.results.size(), 1u);
    const bool small = bytes < (int64_t{1} << 20);
    EXPECT_EQ(all.results[0].protocol, small ? Protocol::kLL : Protocol::kSimple) << bytes;
    EXPECT_EQ(all.stages.simulations, 1) << bytes;
    EvaluateOptions alone = eo;
    alone.protocols = {all.results[0].protocol};
    EXPECT_EQ(evaluate(ring, {}, alone).results[0].time_us, all.results[0].time_us) << bytes;
  }
}

// evaluate_nccl keeps per size the faster of NCCL's allreduce ring and tree on a cluster.
TEST(Reference, EvaluateNcclKeepsTheFasterPerSize) {
  const Topology t = topologies::make_builtin("ndv4x2");
  const Collective ar = make_collective(CollectiveKind::kAllReduce, t.num_ranks);
  const EvaluateOptions eo = testing::small_and_large(t);
  const std::optional<Evaluated> nccl = evaluate_nccl(ar, t, {}, VariantSpace{}, eo);
  ASSERT_TRUE(nccl.has_value());
  ASSERT_TRUE(nccl->ok());
  ASSERT_EQ(nccl->results.size(), 2u);
  for (const NcclCandidate& c : reference_nccl(ar, t)) {
    const Evaluated e = evaluate_variants(c.algorithm, {}, VariantSpace{}, eo);
    ASSERT_TRUE(e.ok()) << c.algo;
    for (size_t i = 0; i < 2; ++i) EXPECT_LE(nccl->results[i].time_us, e.results[i].time_us);
  }
  EXPECT_EQ(nccl->options.name.rfind("nccl_", 0), 0u) << nccl->options.name;
}

// A caller's time to beat that nothing reaches changes nothing: the later candidates (the
// tree after the ring) still race against the earlier ones' times, one time per size.
TEST(Reference, ACallersTimeToBeatLeavesTheCandidatesRaceAsItWas) {
  const Topology t = topologies::make_builtin("ndv4x2");
  const Collective ar = make_collective(CollectiveKind::kAllReduce, t.num_ranks);
  EvaluateOptions eo = testing::small_and_large(t);
  const std::optional<Evaluated> free = evaluate_nccl(ar, t, {}, VariantSpace{}, eo);
  eo.time_to_beat = {1e12, 1e12};
  const std::optional<Evaluated> beaten = evaluate_nccl(ar, t, {}, VariantSpace{}, eo);
  ASSERT_TRUE(free && free->ok() && beaten && beaten->ok());
  ASSERT_EQ(free->results.size(), beaten->results.size());
  for (size_t i = 0; i < free->results.size(); ++i)
    EXPECT_EQ(free->results[i].time_us, beaten->results[i].time_us);
  EXPECT_EQ(free->options.name, beaten->options.name);
  EXPECT_EQ(free->stages.compilations, beaten->stages.compilations);
}

// NCCL's rings that no variant fits into the runtime's limits (here 2 channels x 2 steps for a
// 16-rank ring's 15 transfers per rank; the executor's 32 x 64 at 4096 ranks) are evaluated
// without them, as NCCL's own kernels run: the same times as compiled with no limits; the
// reference says so. Within the limits nothing changes.
TEST(Reference, NcclRingsOverTheRuntimeLimitsAreEvaluatedWithoutThem) {
  const Topology t = topologies::make_builtin("ring:16");
  const Collective ag = make_collective(CollectiveKind::kAllGather, t.num_ranks);
  const EvaluateOptions eo = testing::small_and_large(t);
  compiler::CompileOptions tight;
  tight.max_channels = 2;
  tight.max_steps_per_threadblock = 2;
  const std::optional<Evaluated> nccl = evaluate_nccl(ag, t, tight, single_variant(tight), eo);
  ASSERT_TRUE(nccl && nccl->ok());
  EXPECT_TRUE(beyond_runtime_limits(*nccl));
  compiler::CompileOptions unlimited = tight;
  unlimited.max_steps_per_threadblock = kNcclUnlimited;
  unlimited.max_threadblocks_per_rank = kNcclUnlimited;
  const std::optional<Evaluated> direct =
      evaluate_nccl(ag, t, unlimited, single_variant(unlimited), eo);
  ASSERT_TRUE(direct && direct->ok());
  ASSERT_EQ(nccl->results.size(), direct->results.size());
  for (size_t i = 0; i < nccl->results.size(); ++i)
    EXPECT_EQ(nccl->results[i].time_us, direct->results[i].time_us);
  EXPECT_GT(nccl->program.gpus[0].threadblocks[0].steps.size(), 2u);
  const std::optional<Evaluated> fits = evaluate_nccl(ag, t, {}, single_variant({}), eo);
  ASSERT_TRUE(fits && fits->ok());
  EXPECT_FALSE(beyond_runtime_limits(*fits));
}

// Where only the times are kept and NCCL's rings are identical rings on links of their own (a
// ring and its reverse on ring:N, meshes and tori), over the runtime's limits, the reference
// times its first ring alone at size / rings (evaluate_nccl_times): exactly the whole ring's
// results, every field, in every collective NCCL runs as a ring alone, in every variant and
// protocol. A size that does not split evenly (1001 bytes over 2 or 4 rings), a machine whose
// rings differ (dgx1's NVLink lanes) and variants with too few channels per instance for one
// per ring take the whole ring, with the same results.
TEST(Reference, TimesOfRingsThatTimeAlikeAreThoseOfTheWholeRing) {
  struct Case {
    std::string topology;
    CollectiveKind kind;
    bool one_ring;     // the first ring alone is evaluated
    int max_channels;  // x 2 steps per threadblock: no ring of 12 or more ranks fits 4
  };
  const std::vector<Case> cases = {
      {"ring:16", CollectiveKind::kAllGather, true, 4},
      {"mesh2d:4x4", CollectiveKind::kAllGather, true, 4},
      {"mesh2d:3x4", CollectiveKind::kReduceScatter, true, 4},
      {"torus2d:4x4", CollectiveKind::kAllReduce, true, 4},
      {"mesh2d:4x4", CollectiveKind::kAllReduce, true, 4},
      {"dgx1", CollectiveKind::kAllGather, false, 16},
      {"torus2d:4x4", CollectiveKind::kAllGather, false, 4},  // 4 rings x 2 instances > 4
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.topology + " " + to_string(c.kind));
    const Topology t = topologies::make_builtin(c.topology);
    const Collective collective = make_collective(c.kind, t.num_ranks);
    compiler::CompileOptions tight;
    tight.max_channels = c.max_channels;
    tight.max_steps_per_threadblock = 2;
    for (const std::vector<int64_t>& sizes :
         {std::vector<int64_t>{int64_t{1} << 10, int64_t{64} << 20}, {1001, 1 << 20}}) {
      EvaluateOptions eo = testing::small_and_large(t);
      eo.sizes = sizes;
      VariantSpace space;
      if (!c.one_ring && c.topology == "torus2d:4x4") space.instances = {1, 2};
      const std::optional<Evaluated> whole = evaluate_nccl(collective, t, tight, space, eo);
      const std::optional<Evaluated> timed = evaluate_nccl_times(collective, t, tight, space, eo);
      ASSERT_TRUE(whole && whole->ok()) << (whole ? whole->program_report.summary() : "none");
      ASSERT_TRUE(timed && timed->ok()) << (timed ? timed->program_report.summary() : "none");
      const size_t whole_ops = whole->algorithm.ops.size();
      const size_t rings = synth::nccl_rings(t).rings.size();
      const bool split = sizes.front() % rings == 0 && c.one_ring;
      EXPECT_EQ(timed->algorithm.ops.size(), split ? whole_ops / rings : whole_ops);
      EXPECT_TRUE(timed->program.gpus.empty());
      ASSERT_EQ(timed->results.size(), whole->results.size());
      for (size_t i = 0; i < sizes.size(); ++i) {
        const SizedResult& a = timed->results[i];
        const SizedResult& b = whole->results[i];
        EXPECT_EQ(a.bytes, b.bytes);
        EXPECT_EQ(a.time_us, b.time_us) << sizes[i];
        EXPECT_DOUBLE_EQ(a.algbw_gbps, b.algbw_gbps);
        EXPECT_DOUBLE_EQ(a.busbw_gbps, b.busbw_gbps);
        EXPECT_DOUBLE_EQ(a.lower_bound_us, b.lower_bound_us);
        EXPECT_EQ(a.instances, b.instances);
        EXPECT_EQ(a.fused, b.fused);
        EXPECT_EQ(a.protocol, b.protocol);
      }
    }
  }
}

// NCCL picks the protocol per size: the reference runs in Simple, LL128 and LL and keeps the
// fastest, so at 1 KB (latency-bound: LL halves alpha) it beats the Simple-only reference, and
// at 64 MB (bandwidth-bound: LL doubles beta, LL128 adds 1/15) it gains little over Simple.
TEST(Reference, EvaluateNcclPicksTheProtocolPerSize) {
  const Topology t = topologies::make_builtin("ndv2x2");
  const Collective ar = make_collective(CollectiveKind::kAllReduce, t.num_ranks);
  const EvaluateOptions eo = testing::small_and_large(t);
  const std::optional<Evaluated> any = evaluate_nccl(ar, t, {}, VariantSpace{}, eo);
  const std::optional<Evaluated> simple =
      evaluate_nccl(ar, t, {}, VariantSpace{}, eo, {Protocol::kSimple});
  ASSERT_TRUE(any && any->ok() && simple && simple->ok());
  EXPECT_LT(any->results[0].time_us, 0.9 * simple->results[0].time_us);
  EXPECT_LE(any->results[1].time_us, simple->results[1].time_us);
  EXPECT_GT(any->results[1].time_us, 0.9 * simple->results[1].time_us);
  EXPECT_EQ(simple->program.protocol, Protocol::kSimple);
}

// A protocol is simulated only at sizes where its lower bound is below the time to beat: LL
// (beta x 2) cannot beat a Simple program 1% above the Simple bound at 1 GiB, but can at 1 KB
// (alpha x 0.5); with nothing to beat every size is tried.
TEST(Reference, ProtocolIsTriedOnlyWhereItsBoundCanWin) {
  const Topology t = topologies::make_builtin("ndv2x2");
  const Collective ar = make_collective(CollectiveKind::kAllReduce, t.num_ranks);
  const std::vector<int64_t> sizes = {1024, 1024 * kMiB};
  std::vector<double> best_us;
  for (const int64_t bytes : sizes) {
    best_us.push_back(1.01 * sim::lower_bound(t, ar, bytes).lower_bound_us);
  }
  EXPECT_EQ(sizes_protocol_can_win(ar, false, t, Protocol::kLL, sizes, best_us),
            std::vector<int64_t>{1024});
  EXPECT_EQ(sizes_protocol_can_win(ar, false, t, Protocol::kLL, sizes, {}), sizes);
}

// NCCL's alltoall is p2p: on a DGX-1 the pairs without NVLink go over PCIe (the host switch),
// not relayed over NVLink, so at 64 MB the reference is over 2x slower than the relaying direct.
TEST(Reference, AlltoallIsPointToPointOverPcie) {
  const Topology t = topologies::make_builtin("dgx1");
  const Collective a2a = make_collective(CollectiveKind::kAllToAll, t.num_ranks);
  const std::vector<NcclCandidate> nccl = reference_nccl(a2a, t);
  ASSERT_EQ(nccl.size(), 1u);
  EXPECT_TRUE(nccl[0].algorithm.routed);
  EvaluateOptions eo;
  eo.topology = &t;
  eo.sizes = {64 * kMiB};
  const Evaluated p2p = evaluate(nccl[0].algorithm, {}, eo);
  const Evaluated relayed =
      evaluate(synth::make_baseline(synth::BaselineKind::kDirect, a2a, t), {}, eo);
  ASSERT_TRUE(p2p.ok() && relayed.ok());
  EXPECT_GT(p2p.results[0].time_us, 2 * relayed.results[0].time_us);
}

TEST(Planner, SynthesizesVerifiesSimulatesAndComparesWithNccl) {
  PlanRequest request;
  request.topology = topologies::make_builtin("dgx1");
  request.method = "tacos";
  request.sizes = {4096, 64 * kMiB};
  const PlanResult r = plan(request);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.collective.kind, CollectiveKind::kAllGather);
  ASSERT_TRUE(r.nccl.has_value());
  EXPECT_TRUE(r.nccl->ok());
  ASSERT_EQ(r.program->results.size(), 2u);
  EXPECT_EQ(r.program->program.name, "tacos_allgather");
  EXPECT_GT(r.best_time_us(), 0);
  EXPECT_DOUBLE_EQ(r.best_time_us(), r.program->results.back().time_us);
  // The XML is the kept program, in the request's dialect.
  const Program back = formats::read_msccl_xml(r.xml(), "plan.xml");
  EXPECT_EQ(back.gpus.size(), 8u);
  EXPECT_TRUE(verify::verify_program(back).ok());
  // A 2-step TACOS allgather beats the 7-step rings at 4 KB.
  EXPECT_LT(r.program->results[0].time_us, r.nccl->results[0].time_us);
}

// TACOS on a 4x4 mesh at two sizes, compared with nccl.
PlanRequest mesh_request() {
  PlanRequest request;
  request.topology = topologies::make_builtin("mesh2d:4x4");
  request.method = "tacos";
  request.sizes = {64 * 1024, kMiB};
  return request;
}

// Two plans wrote the same XML and have the same times, the nccl reference's included.
void expect_same_output(const PlanResult& a, const PlanResult& b) {
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a.nccl && b.nccl);
  EXPECT_EQ(b.xml(), a.xml());
  ASSERT_EQ(b.program->results.size(), a.program->results.size());
  ASSERT_EQ(b.nccl->results.size(), a.nccl->results.size());
  for (size_t i = 0; i < a.program->results.size(); ++i) {
    EXPECT_EQ(b.program->results[i].time_us, a.program->results[i].time_us) << i;
    EXPECT_EQ(b.nccl->results[i].time_us, a.nccl->results[i].time_us) << i;
  }
}

// The algorithm's lowerings and the nccl reference run at once: same XML and same results.
TEST(Planner, TheOutputDoesNotDependOnTheThreadCount) {
  PlanRequest request = mesh_request();
  request.threads = 1;
  const PlanResult one = plan(request);
  request.threads = 3;
  expect_same_output(one, plan(request));
}

// Where only one evaluation fits in memory (thousands of ranks at the default budget), the nccl
// reference goes first and keeps its times but not its program, and each lowering is let go
// before its last program is simulated: the same XML and times, with no more compilations.
TEST(Planner, OneEvaluationAtATimeGivesTheSameOutputWithoutTheReferencesProgram) {
  PlanRequest request = mesh_request();
  request.threads = 2;
  const PlanResult roomy = plan(request);
  request.memory_budget_bytes = 1;
  const PlanResult tight = plan(request);
  expect_same_output(roomy, tight);
  ASSERT_TRUE(roomy.nccl && tight.nccl);
  EXPECT_EQ(roomy.nccl->program.gpus.size(), 16u);
  EXPECT_TRUE(tight.nccl->program.gpus.empty());
  EXPECT_TRUE(tight.nccl->ok());
  // The best program is held either way: not compiled again for its verification and the XML.
  EXPECT_EQ(tight.program->stages.compilations, roomy.program->stages.compilations);
  request.memory_budget_bytes = 0;
  EXPECT_THROW(plan(request), UserError);
}

TEST(Planner, ReportsAMethodThatFindsNothing) {
  PlanRequest request;
  request.topology = topologies::make_builtin("dgx1");
  request.method = "sccl";
  request.synth.params = {{"steps", 1}};  // no 1-step allgather on DGX-1
  const PlanResult r = plan(request);
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.program.has_value());
  EXPECT_EQ(r.synthesis.status, SynthStatus::kInfeasible);
}

TEST(Planner, BadRequestsAreUserErrors) {
  PlanRequest request;
  request.topology = topologies::make_builtin("ring:4");
  request.method = "magic";
  EXPECT_THROW(plan(request), UserError);
  request.method = "tacos";
  request.synth.params = {{"steps", 3}};
  EXPECT_THROW(plan(request), UserError);
}

TEST(Planner, ClassicDialectLimitsApply) {
  PlanRequest request;
  request.topology = topologies::make_builtin("ring:4");
  request.method = "ring";
  request.dialect = formats::XmlDialect::kClassic;
  EXPECT_EQ(compile_options(request).max_threadblocks_per_rank, 216);
  const PlanResult r = plan(request);
  ASSERT_TRUE(r.ok());
  const Program back = formats::read_msccl_xml(r.xml(), "classic.xml");
  EXPECT_TRUE(verify::verify_program(back).ok());
}

// The trees allreduce on a 4x4 mesh with 6 steps per threadblock: the default 8 chunks per rank
// (2 trees per root x 4 pieces) cannot fit, 4 do. A chunk count the caller gave is kept, and
// where no count fits the last error stands.
TEST(Planner, ADefaultChunkCountOverTheRuntimeLimitsGivesWayToFewer) {
  PlanRequest request;
  request.topology = topologies::make_builtin("mesh2d:4x4");
  request.method = "trees";
  request.kind = CollectiveKind::kAllReduce;
  request.compare_with_nccl = false;
  request.limit_overrides.max_steps_per_threadblock = 6;
  std::vector<std::string> said;
  request.synth.progress = [&said](const std::string& line) { said.push_back(line); };
  const PlanResult r = plan(request);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.collective.chunks_per_rank, 4);
  const auto retry = std::find_if(said.begin(), said.end(), [](const std::string& line) {
    return line.rfind(
               "plan: the program of 8 chunks per rank (the method's default) is over "
               "the runtime limits (",
               0) == 0 &&
           line.find("; trying 4") != std::string::npos;
  });
  EXPECT_NE(retry, said.end());
  const Program back = formats::read_msccl_xml(r.xml(), "fewer.xml");
  EXPECT_TRUE(verify::verify_program(back).ok());
  for (const GpuProgram& gpu : back.gpus) {
    for (const Threadblock& tb : gpu.threadblocks) EXPECT_LE(tb.steps.size(), 6u);
  }
  request.chunks = 8;  // the caller's count: no retry
  EXPECT_THROW(plan(request), UserError);
  request.chunks = 0;
  request.synth.params = {{"trees", 8}};  // 8 trees of one piece: nothing to halve, 8's error
  try {
    plan(request);
    ADD_FAILURE() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_FALSE(compiler::runtime_limits_violation(e).empty()) << e.what();
  }
  request.synth.params = nlohmann::json::object();
  request.limit_overrides.max_steps_per_threadblock = 2;  // not even 2 chunks fit
  try {
    plan(request);
    ADD_FAILURE() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_FALSE(compiler::runtime_limits_violation(e).empty()) << e.what();
  }
}

TEST(Planner, PlansAnAlgorithmMadeElsewhere) {
  PlanRequest request;
  request.topology = topologies::make_builtin("ring:4");
  request.sizes = {kMiB};
  const Algorithm a =
      synth::make_baseline(synth::BaselineKind::kDirect,
                           make_collective(CollectiveKind::kAllToAll, 4), request.topology);
  const PlanResult r = plan_algorithm(a, request);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.synthesis.stats.empty());
  ASSERT_TRUE(r.nccl.has_value()) << "nccl's p2p alltoall";
  EXPECT_TRUE(r.nccl->ok());
}

TEST(Report, TableAndJsonNameTheFastestPerSize) {
  PlanRequest request;
  request.topology = topologies::make_builtin("ring:4");
  request.method = "tacos";
  request.sizes = {1024, 64 * kMiB};
  const PlanResult r = plan(request);
  ASSERT_TRUE(r.ok() && r.nccl);
  const std::vector<std::string> names = {"tacos", "nccl"};
  const std::vector<const Evaluated*> rows = {&*r.program, &*r.nccl};
  const std::vector<BestAtSize> best = best_per_size(names, rows);
  ASSERT_EQ(best.size(), 2u);
  for (size_t i = 0; i < best.size(); ++i) {
    const double t0 = r.program->results[i].time_us;
    const double t1 = r.nccl->results[i].time_us;
    EXPECT_DOUBLE_EQ(best[i].time_us, std::min(t0, t1));
    EXPECT_DOUBLE_EQ(best[i].speedup_vs_nccl, t1 / std::min(t0, t1));
  }
  const nlohmann::json j = best_json(names, rows);
  EXPECT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["best"], names[best[0].best]);
  const std::string table = results_table(names, rows);
  EXPECT_NE(table.find("tacos us"), std::string::npos);
  EXPECT_NE(table.find("nccl us"), std::string::npos);
  EXPECT_NE(table.find("vs nccl"), std::string::npos);
  EXPECT_TRUE(j[0].contains("speedup_vs_nccl"));
  EXPECT_NE(table.find("64M"), std::string::npos);
  EXPECT_EQ(to_json(*r.program)["results"].size(), 2u);
}

}  // namespace
}  // namespace ccsynth::plan
