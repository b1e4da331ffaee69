#include "ccsynth/lang/program.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/compiler/instances.h"
#include "ccsynth/core/error.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"

namespace ccsynth::lang {
namespace {

using ::testing::HasSubstr;

ProgramOptions named(const std::string& name) {
  ProgramOptions o;
  o.name = name;
  return o;
}

ProgramOptions in_place() {
  ProgramOptions o;
  o.inplace = true;
  return o;
}

Directives on_channel(int channel, int sendtb = -1) {
  Directives d;
  d.channel = channel;
  d.sendtb = sendtb;
  return d;
}

Directives send_tb(int sendtb) { return on_channel(-1, sendtb); }

std::string error_of(const std::function<void()>& f);

// Ring allgather: every rank's chunk travels around the ring into every output.
void ring_allgather(DslProgram& p, int ranks) {
  for (int r = 0; r < ranks; ++r) {
    ChunkRef c = p.chunk(r, Buffer::input(), 0);
    c = c.copy(r, Buffer::output(), r);
    for (int s = 1; s < ranks; ++s) c = c.copy((r + s) % ranks, Buffer::output(), r);
  }
}

// Ring allreduce on chunk i = rank i's share: reduce around the ring, then copy around.
void ring_allreduce(DslProgram& p, int ranks, Directives d = {}) {
  for (int i = 0; i < ranks; ++i) {
    ChunkRef c = p.chunk((i + 1) % ranks, Buffer::input(), i);
    for (int s = 2; s <= ranks; ++s) {
      c = p.chunk((i + s) % ranks, Buffer::input(), i).reduce(c, d);
    }
    for (int s = 1; s < ranks; ++s) c = c.copy((i + s) % ranks, Buffer::input(), i, d);
  }
}

// Compiles and verifies, returning the program.
Program compile_verified(const Algorithm& algorithm, bool inplace = false, int instances = 1) {
  EXPECT_TRUE(verify::verify_algorithm(algorithm).ok())
      << verify::verify_algorithm(algorithm).summary();
  compiler::CompileOptions options;
  options.inplace = inplace;
  options.instances = instances;
  const Program program = compiler::compile(algorithm, options);
  const Collective replicated = compiler::replicate_collective(algorithm.collective, instances);
  verify::VerifyProgramOptions verify_options;
  verify_options.collective = &replicated;
  const verify::VerifyReport report = verify::verify_program(program, verify_options);
  EXPECT_TRUE(report.ok()) << report.summary();
  return program;
}

TEST(DslProgram, RingAllGatherTracesIntoARingAlgorithm) {
  DslProgram p(make_collective(CollectiveKind::kAllGather, 4), named("ring_ag"));
  ring_allgather(p, 4);
  const Algorithm a = p.to_algorithm();
  EXPECT_EQ(a.name, "ring_ag");
  ASSERT_EQ(a.ops.size(), 12u);  // 4 chunks x 3 hops; the local input->output copy is no op
  EXPECT_EQ(a.num_steps(), 3);
  for (const ChunkOp& op : a.ops) {
    EXPECT_EQ(op.dst, (op.src + 1) % 4);
    EXPECT_EQ(op.kind, OpKind::kCopy);
  }
  compile_verified(a);
  EXPECT_EQ(p.operations().size(), 16u);
}

TEST(DslProgram, ChunkDagRecordsTrueAndFalseDependencies) {
  DslProgram p(make_collective(CollectiveKind::kAllGather, 3));
  ChunkRef c = p.chunk(0, Buffer::input(), 0);
  ChunkRef d = c.copy(1, Buffer::scratch(), 0);                  // op 0
  d.copy(2, Buffer::output(), 0);                                // op 1: reads op 0's write
  p.chunk(1, Buffer::input(), 0).copy(1, Buffer::scratch(), 0);  // op 2: overwrites what 1 read
  const auto& ops = p.operations();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_THAT(ops[1].depends_on, ::testing::ElementsAre(0));
  EXPECT_THAT(ops[2].depends_on, ::testing::ElementsAre(0, 1));
  EXPECT_EQ(p.scratch_sizes().at("scratch"), 1);
}

TEST(DslProgram, InPlaceRingAllReduceHasReduceThenCopyPhases) {
  DslProgram p(make_collective(CollectiveKind::kAllReduce, 4), in_place());
  ring_allreduce(p, 4);
  const Algorithm a = p.to_algorithm();
  EXPECT_EQ(a.num_steps(), 6);  // 3 reduce hops + 3 copy hops
  int reduces = 0;
  for (const ChunkOp& op : a.ops) reduces += op.kind == OpKind::kReduce;
  EXPECT_EQ(reduces, 12);
  compile_verified(a, /*inplace=*/true);
}

TEST(DslProgram, ChannelsAndThreadblocksBecomeHints) {
  DslProgram p(make_collective(CollectiveKind::kAllReduce, 3), in_place());
  ring_allreduce(p, 3, on_channel(1));
  for (const ChunkOp& op : p.to_algorithm().ops) EXPECT_EQ(op.channel, 1);
}

// The threadblock with `id` on `gpu`.
const Threadblock& threadblock(const GpuProgram& gpu, int id) {
  for (const Threadblock& tb : gpu.threadblocks) {
    if (tb.id == id) return tb;
  }
  ADD_FAILURE() << "rank " << gpu.rank << " has no threadblock " << id;
  static const Threadblock none;
  return none;
}

TEST(DslProgram, ThreadblockDirectivesAreKeptInTheProgram) {
  // A ring allgather whose sends run on threadblock 1 and receives on threadblock 0 of every
  // rank (the reverse of what the compiler would number them), all on channel 0.
  const int n = 4;
  DslProgram p(make_collective(CollectiveKind::kAllGather, n));
  for (int r = 0; r < n; ++r) {
    ChunkRef c = p.chunk(r, Buffer::input(), 0).copy(r, Buffer::output(), r);
    for (int s = 1; s < n; ++s) c = c.copy((r + s) % n, Buffer::output(), r, {0, 1, 0});
  }
  const Algorithm a = p.to_algorithm();
  for (const ChunkOp& op : a.ops) {
    EXPECT_EQ(op.send_tb, 1);
    EXPECT_EQ(op.recv_tb, 0);
  }
  const Program program = compile_verified(a);
  for (const GpuProgram& gpu : program.gpus) {
    EXPECT_EQ(threadblock(gpu, 1).send_peer, (gpu.rank + 1) % n);
    EXPECT_EQ(threadblock(gpu, 0).recv_peer, (gpu.rank + n - 1) % n);
  }
}

TEST(DslProgram, ParallelizeRefinesChunksOntoDisjointChannels) {
  DslProgram p(make_collective(CollectiveKind::kAllReduce, 3), in_place());
  {
    auto scope = p.parallelize(2);
    ring_allreduce(p, 3);
  }
  const Algorithm a = p.to_algorithm();
  EXPECT_EQ(a.collective.num_chunks(), 6);
  EXPECT_EQ(a.collective, make_collective(CollectiveKind::kAllReduce, 3, 2));
  ASSERT_EQ(a.ops.size(), 24u);  // twice the 12 ops of a 3-rank ring allreduce
  for (const ChunkOp& op : a.ops) {
    EXPECT_EQ(op.count, 1);
    EXPECT_EQ(op.channel, op.chunk % 2) << op;  // instance i moves sub-chunk i on channel i
  }
  compile_verified(a, true);
}

TEST(DslProgram, ParallelizedMultiCountReferencesSplitIntoContiguousSlices) {
  // 2 ranks, 4 chunks; rank 0 sends chunks 0..3 in one reference, parallelized 2 ways: each
  // instance moves one contiguous half (4 sub-chunks), not every other sub-chunk.
  DslProgram p(make_collective(CollectiveKind::kAllGather, 2, 4));
  {
    auto scope = p.parallelize(2);
    for (int r = 0; r < 2; ++r) {
      ChunkRef c = p.chunk(r, Buffer::input(), 0, 4);
      c.copy(r, Buffer::output(), 4 * r);
      c.copy(1 - r, Buffer::output(), 4 * r);
    }
  }
  const Algorithm a = p.to_algorithm();
  ASSERT_EQ(a.ops.size(), 4u);
  EXPECT_EQ(a.ops[0].chunk, 0);
  EXPECT_EQ(a.ops[0].count, 4);
  EXPECT_EQ(a.ops[1].chunk, 4);
  EXPECT_EQ(a.ops[1].channel, 1);
  compile_verified(a);
}

TEST(DslProgram, ParallelInstancesAvoidEveryChannelTheProgramNames) {
  // Channel 0 parallelized 2 ways beside an unparallelized channel 1 (the hierarchical
  // allreduce's shape): instance 1 of channel 0 must not land on channel 1.
  DslProgram p(make_collective(CollectiveKind::kAllReduce, 3), in_place());
  {
    auto scope = p.parallelize(2);
    ring_allreduce(p, 3, on_channel(0));
  }
  p.chunk(0, Buffer::input(), 0).copy(1, Buffer::scratch(), 0, on_channel(1));
  std::set<int> channels;
  for (const ChunkOp& op : p.to_algorithm().ops) channels.insert(op.channel);
  EXPECT_EQ(channels, (std::set<int>{0, 1, 2}));  // instance 1 of channel 0 is channel 0 + 1*2
  DslProgram wide(make_collective(CollectiveKind::kAllReduce, 3), in_place());
  {
    auto scope = wide.parallelize(4);
    ring_allreduce(wide, 3, on_channel(9));  // instance 3 would need 9 + 3 * 10 = 39
  }
  EXPECT_THAT(error_of([&] { wide.to_algorithm(); }), HasSubstr("needs channel 39"));
}

TEST(DslProgram, MultiCountReferencesAggregateIntoOneOp) {
  DslProgram p(make_collective(CollectiveKind::kAllGather, 2, 2));
  for (int r = 0; r < 2; ++r) {
    ChunkRef c = p.chunk(r, Buffer::input(), 0, 2);
    c.copy(r, Buffer::output(), 2 * r);
    c.copy(1 - r, Buffer::output(), 2 * r);
  }
  const Algorithm a = p.to_algorithm();
  ASSERT_EQ(a.ops.size(), 2u);
  EXPECT_EQ(a.ops[0].count, 2);
  compile_verified(a);
}

TEST(DslProgram, ScratchPartialsAndLocalReductionsLowerToRemoteReduces) {
  // All-pairs allreduce (MSCCLang sec. 7): each rank sends its contribution to chunk r to rank
  // r's scratch, r reduces them locally, then sends the result to everyone.
  const int n = 4;
  DslProgram p(make_collective(CollectiveKind::kAllReduce, n), in_place());
  for (int r = 0; r < n; ++r) {
    for (int q = 0; q < n; ++q) {
      if (q != r) p.chunk(q, Buffer::input(), r).copy(r, Buffer::scratch(), q);
    }
  }
  for (int r = 0; r < n; ++r) {
    ChunkRef c = p.chunk(r, Buffer::input(), r);
    for (int q = 0; q < n; ++q) {
      if (q != r) c = c.reduce(p.chunk(r, Buffer::scratch(), q));
    }
    for (int q = 0; q < n; ++q) {
      if (q != r) c.copy(q, Buffer::input(), r);
    }
  }
  const Algorithm a = p.to_algorithm();
  EXPECT_EQ(a.num_steps(), 2);
  for (const ChunkOp& op : a.ops) {
    EXPECT_EQ(op.kind, op.step == 0 ? OpKind::kReduce : OpKind::kCopy) << op;
  }
  compile_verified(a, true);
}

TEST(DslProgram, CustomCollectiveAllToNext) {
  DslProgram p(make_alltonext(3, 2));
  for (int r = 0; r + 1 < 3; ++r)
    p.chunk(r, Buffer::input(), 0, 2).copy(r + 1, Buffer::output(), 0);
  const Algorithm a = p.to_algorithm();
  ASSERT_EQ(a.ops.size(), 2u);
  EXPECT_EQ(a.ops[0].count, 2);
  compile_verified(a);
}

// --- errors -------------------------------------------------------------------------------

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(DslProgramErrors, StaleReferenceNamesOperationRankBufferIndexAndLine) {
  DslProgram p(make_collective(CollectiveKind::kAllGather, 2));
  ChunkRef old = p.chunk(0, Buffer::input(), 0);
  old.copy(0, Buffer::output(), 0);
  ChunkRef out0 = p.chunk(0, Buffer::output(), 0);
  p.chunk(1, Buffer::input(), 0).copy(0, Buffer::output(), 0);  // overwrites rank 0 output[0]
  const std::string message = error_of([&] { out0.copy(1, Buffer::output(), 0); });
  EXPECT_THAT(message, HasSubstr("program_test.cc:"));
  EXPECT_THAT(message, HasSubstr("copy"));
  EXPECT_THAT(message, HasSubstr("stale reference: rank 0 output[0]"));
  EXPECT_THAT(message, HasSubstr("overwritten by the copy at program_test.cc:"));
}

TEST(DslProgramErrors, UninitializedChunk) {
  DslProgram p(make_collective(CollectiveKind::kAllGather, 2));
  EXPECT_THAT(error_of([&] { p.chunk(1, Buffer::output(), 0); }),
              HasSubstr("rank 1 output[0] is uninitialized"));
  EXPECT_THAT(error_of([&] { p.chunk(2, Buffer::input(), 0); }), HasSubstr("rank 2 outside 0..1"));
  EXPECT_THAT(error_of([&] { p.chunk(0, Buffer::input(), 1); }),
              HasSubstr("index 1 outside input[0..0]"));
}

TEST(DslProgramErrors, MissedPostconditionNamesTheSlot) {
  DslProgram p(make_collective(CollectiveKind::kAllGather, 3), named("short"));
  for (int r = 0; r < 3; ++r) p.chunk(r, Buffer::input(), 0).copy(r, Buffer::output(), r);
  p.chunk(0, Buffer::input(), 0).copy(1, Buffer::output(), 0);
  const std::string message = error_of([&] { p.to_algorithm(); });
  EXPECT_THAT(message, HasSubstr("short: postcondition: rank 2 output[0] must hold chunk 0"));
  EXPECT_THAT(message, HasSubstr("holds nothing"));
}

TEST(DslProgramErrors, ThreadblockDirectiveConflicts) {
  DslProgram p(make_collective(CollectiveKind::kAllGather, 3));
  p.chunk(0, Buffer::input(), 0).copy(1, Buffer::output(), 0, on_channel(0, 0));
  const std::string two_tbs = error_of(
      [&] { p.chunk(0, Buffer::input(), 0).copy(1, Buffer::scratch(), 0, on_channel(0, 1)); });
  EXPECT_THAT(two_tbs, HasSubstr("two sends on the connection 0 -> 1 channel 0 in different "
                                 "threadblocks (0 and 1 of rank 0)"));
  const std::string two_peers =
      error_of([&] { p.chunk(0, Buffer::input(), 0).copy(2, Buffer::output(), 0, send_tb(0)); });
  EXPECT_THAT(two_peers, HasSubstr("threadblock 0 of rank 0 already sends to rank 1"));
  EXPECT_THAT(error_of([&] {
                p.chunk(0, Buffer::input(), 0).copy(2, Buffer::output(), 0, on_channel(32));
              }),
              HasSubstr("channel 32 is over the runtime's 32 channels"));
}

TEST(DslProgramErrors, BadReductions) {
  DslProgram ag(make_collective(CollectiveKind::kAllGather, 2));
  EXPECT_THAT(
      error_of([&] { ag.chunk(0, Buffer::input(), 0).reduce(ag.chunk(1, Buffer::input(), 0)); }),
      HasSubstr("not a combining collective"));
  DslProgram ar(make_collective(CollectiveKind::kAllReduce, 2));
  ChunkRef c = ar.chunk(1, Buffer::input(), 0).reduce(ar.chunk(0, Buffer::input(), 0));
  EXPECT_THAT(error_of([&] { c.reduce(ar.chunk(0, Buffer::input(), 0)); }),
              HasSubstr("counted twice"));
  EXPECT_THAT(
      error_of([&] { ar.chunk(0, Buffer::input(), 0).reduce(ar.chunk(0, Buffer::input(), 1)); }),
      HasSubstr("only contributions to the same chunk"));
}

TEST(DslProgramErrors, ParallelizeLimits) {
  DslProgram p(make_collective(CollectiveKind::kAllGather, 2));
  EXPECT_THAT(error_of([&] { p.begin_parallelize(0); }), HasSubstr("factor must be in 1..32"));
  p.begin_parallelize(8);
  EXPECT_THAT(error_of([&] { p.begin_parallelize(8); }), HasSubstr("multiply to 64"));
  EXPECT_THAT(error_of([&] { p.check(); }), HasSubstr("still open"));
  p.end_parallelize();
  EXPECT_THAT(error_of([&] { p.end_parallelize(); }), HasSubstr("without a matching begin"));
}

TEST(Refine, BuiltinsRefineToMoreChunksPerRank) {
  for (CollectiveKind kind : builtin_collective_kinds()) {
    EXPECT_EQ(refine(make_collective(kind, 3, 2, 1), 3), make_collective(kind, 3, 6, 1))
        << to_string(kind);
  }
}

}  // namespace
}  // namespace ccsynth::lang
