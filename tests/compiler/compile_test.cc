#include "ccsynth/compiler/compile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <tuple>

#include "ccsynth/compiler/instances.h"
#include "ccsynth/core/error.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"
#include "compiler/deadlock_check.h"
#include "compiler/limits.h"
#include "compiler/lowered.h"
#include "compiler/sort_key.h"
#include "test_algorithms.h"

namespace ccsynth::compiler {
namespace {

using namespace testing;  // NOLINT: the reference algorithms

struct Case {
  std::string name;
  std::function<Algorithm(int, int)> make;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"ring_allgather", ring_allgather},
      {"direct_allgather", direct_allgather},
      {"ring_reducescatter", [](int R, int C) { return ring_reducescatter(R, C); }},
      {"direct_reducescatter", direct_reducescatter},
      {"ring_allreduce", ring_allreduce},
      {"direct_allreduce", direct_allreduce},
      {"direct_alltoall", direct_alltoall},
      {"ring_alltoall", ring_alltoall},
      {"chain_broadcast", [](int R, int C) { return chain_broadcast(R, C, R / 2); }},
      {"chain_reduce", [](int R, int C) { return chain_reduce(R, C, R - 1); }},
      {"direct_gather", [](int R, int C) { return direct_gather(R, C, 1 % R); }},
      {"direct_scatter", [](int R, int C) { return direct_scatter(R, C, 0); }},
  };
  return all;
}

// Every structural property the runtimes require, independent of the verifier.
void expect_well_formed(const Program& p, const CompileOptions& o) {
  ASSERT_EQ(static_cast<int>(p.gpus.size()), p.num_ranks);
  int max_channel = 0;
  for (const GpuProgram& g : p.gpus) {
    EXPECT_LE(static_cast<int>(g.threadblocks.size()), o.max_threadblocks_per_rank);
    std::set<std::tuple<int, int, int>> connections;  // (peer, channel, direction)
    for (size_t t = 0; t < g.threadblocks.size(); ++t) {
      const Threadblock& tb = g.threadblocks[t];
      EXPECT_EQ(tb.id, static_cast<int>(t));
      EXPECT_NE(tb.send_peer, g.rank);
      EXPECT_NE(tb.recv_peer, g.rank);
      if (tb.send_peer >= 0) {
        EXPECT_TRUE(connections.insert({tb.send_peer, tb.channel, 0}).second);
      }
      if (tb.recv_peer >= 0) {
        EXPECT_TRUE(connections.insert({tb.recv_peer, tb.channel, 1}).second);
      }
      max_channel = std::max(max_channel, tb.channel);
      EXPECT_LE(static_cast<int>(tb.steps.size()), o.max_steps_per_threadblock);
      for (size_t i = 0; i < tb.steps.size(); ++i) {
        const Step& s = tb.steps[i];
        if (s.type == StepType::kNop) {
          EXPECT_GE(s.dep_tb, 0) << "a nop without dependency is useless";
          ASSERT_LT(i + 1, tb.steps.size());
          EXPECT_GE(tb.steps[i + 1].dep_tb, 0) << "executor: the step after nops needs a dep";
          continue;
        }
        EXPECT_GE(s.count, 1);
        EXPECT_LE(s.count, o.max_count);
        if (sends(s.type)) {
          EXPECT_GE(tb.send_peer, 0);
        }
        if (receives(s.type)) {
          EXPECT_GE(tb.recv_peer, 0);
        }
        if (s.dep_tb >= 0) {
          ASSERT_LT(s.dep_tb, static_cast<int>(g.threadblocks.size()));
          EXPECT_NE(s.dep_tb, static_cast<int>(t));
          ASSERT_LT(s.dep_step, static_cast<int>(g.threadblocks[s.dep_tb].steps.size()));
          EXPECT_TRUE(g.threadblocks[s.dep_tb].steps[s.dep_step].has_dep);
        }
      }
    }
  }
  EXPECT_EQ(p.num_channels, max_channel + 1);
  EXPECT_LE(p.num_channels, o.max_channels);
}

using Params =
    std::tuple<int /*case*/, int /*ranks*/, int /*chunks*/, int /*instances*/, bool /*inplace*/>;

class CompileMatrix : public ::testing::TestWithParam<Params> {};

TEST_P(CompileMatrix, CompiledProgramVerifies) {
  const auto [index, R, C, instances, inplace] = GetParam();
  const Case& c = cases()[index];
  const Algorithm algorithm = c.make(R, C);
  const auto algo_report = verify::verify_algorithm(algorithm);
  ASSERT_TRUE(algo_report.ok()) << c.name << "\n" << algo_report.summary();
  CompileOptions options;
  options.instances = instances;
  options.inplace = inplace;
  const Program program = compile(algorithm, options);
  expect_well_formed(program, options);
  EXPECT_EQ(program.collective, algorithm.collective.kind);
  EXPECT_EQ(program.inplace, inplace);
  const auto report = verify::verify_program(program);
  EXPECT_TRUE(report.ok()) << c.name << " R=" << R << " C=" << C << " instances=" << instances
                           << (inplace ? " in-place" : "") << "\n"
                           << report.summary() << program;
  EXPECT_TRUE(formats::check_dialect(program, formats::XmlDialect::kExecutor).empty());
  if (program.collective != CollectiveKind::kGather &&
      program.collective != CollectiveKind::kScatter) {  // classic has no name for these
    for (const formats::XmlIssue& issue :
         formats::check_dialect(program, formats::XmlDialect::kClassic)) {
      ADD_FAILURE() << "classic: " << issue.element << ": " << issue.message;
    }
  }
  // Deadlock freedom must not rely on deep FIFOs: two slots (a fused rcs/rrs needs one free slot
  // while its receiver still holds the previous message, as in every MSCCL ring).
  options.fifo_slots = 2;
  const Program tight_program = compile(algorithm, options);
  verify::VerifyProgramOptions one_slot;
  one_slot.fifo_slots = 2;
  const auto tight = verify::verify_program(tight_program, one_slot);
  EXPECT_TRUE(tight.ok()) << c.name << " with two FIFO slots\n" << tight.summary();
}

std::string param_name(const ::testing::TestParamInfo<Params>& info) {
  const auto [index, R, C, instances, inplace] = info.param;
  return cases()[index].name + "_R" + std::to_string(R) + "_C" + std::to_string(C) + "_x" +
         std::to_string(instances) + (inplace ? "_inplace" : "_outofplace");
}

INSTANTIATE_TEST_SUITE_P(All, CompileMatrix,
                         ::testing::Combine(::testing::Range(0, 12), ::testing::Values(2, 3, 4, 8),
                                            ::testing::Values(1, 2), ::testing::Values(1, 2),
                                            ::testing::Bool()),
                         param_name);

std::vector<StepType> types(const Threadblock& tb) {
  std::vector<StepType> out;
  for (const Step& s : tb.steps) out.push_back(s.type);
  return out;
}

const Threadblock& comm_tb(const GpuProgram& g) {
  for (const Threadblock& tb : g.threadblocks)
    if (tb.send_peer >= 0 || tb.recv_peer >= 0) return tb;
  throw std::runtime_error("no communicating threadblock");
}

TEST(Compile, RingAllGatherFusesForwardsIntoRcs) {
  const Program p = compile(ring_allgather(4, 1), {});
  using enum StepType;
  for (const GpuProgram& g : p.gpus) {
    // One ring threadblock plus the local copy of the rank's own chunk into the output.
    ASSERT_EQ(g.threadblocks.size(), 2u);
    const Threadblock& ring = comm_tb(g);
    EXPECT_EQ(ring.send_peer, (g.rank + 1) % 4);
    EXPECT_EQ(ring.recv_peer, (g.rank + 3) % 4);
    EXPECT_EQ(types(ring), (std::vector<StepType>{kSend, kRecvCopySend, kRecvCopySend, kRecv}));
    EXPECT_EQ(ring.steps[0].src_buffer, Buffer::kInput);
    EXPECT_EQ(ring.steps[0].src_offset, 0);
    const Threadblock& local = g.threadblocks[1];
    ASSERT_EQ(local.steps.size(), 1u);
    EXPECT_EQ(local.steps[0].type, kCopy);
    EXPECT_EQ(local.steps[0].dst_offset, g.rank);
    EXPECT_EQ(g.input_chunks, 1);
    EXPECT_EQ(g.output_chunks, 4);
    EXPECT_EQ(g.scratch_chunks, 0);
  }
}

// NCCL's rings as synth::nccl_ring writes them: ring k forwards chunk k of every rank along
// `orders[k]`, on channel k (no hint with one ring).
Algorithm nccl_style_rings(const std::vector<std::vector<int>>& orders) {
  const int n = static_cast<int>(orders.front().size());
  const int rings = static_cast<int>(orders.size());
  Algorithm a;
  a.name = "ring_allgather";
  a.collective = make_collective(CollectiveKind::kAllGather, n, rings);
  for (int k = 0; k < rings; ++k) {
    const std::vector<int>& order = orders[static_cast<size_t>(k)];
    for (int hop = 0; hop < n - 1; ++hop) {
      for (int at = 0; at < n; ++at) {
        ChunkOp op{order[static_cast<size_t>(at)] * rings + k,
                   order[static_cast<size_t>((at + hop) % n)],
                   order[static_cast<size_t>((at + hop + 1) % n)], OpKind::kCopy, hop};
        op.channel = rings == 1 ? -1 : k;
        a.ops.push_back(op);
      }
    }
  }
  return a;
}

// compile() builds NCCL's ring allgather directly (compile_ring_allgather): exactly the program
// the lowering and scheduling make, for one ring, a ring and its reverse, and four shuffled
// rings, within the step limit and beyond it (the nccl reference's ring at thousands of ranks),
// and it verifies. Where the options or the algorithm ask for something else it stays out.
TEST(Compile, RingAllgatherFastPathGivesTheCompiledProgram) {
  std::mt19937 random(7);
  for (const int n : {3, 4, 8, 17, 70}) {
    std::vector<int> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::vector<int> shuffled = order;
    std::shuffle(shuffled.begin(), shuffled.end(), random);
    const std::vector<std::vector<int>> reversed = {order, {order.rbegin(), order.rend()}};
    for (const std::vector<std::vector<int>>& orders :
         {std::vector<std::vector<int>>{order}, reversed,
          std::vector<std::vector<int>>{shuffled,
                                        order,
                                        {shuffled.rbegin(), shuffled.rend()},
                                        {order.rbegin(), order.rend()}}}) {
      const Algorithm a = nccl_style_rings(orders);
      SCOPED_TRACE(std::to_string(n) + " ranks, " + std::to_string(orders.size()) + " rings");
      ASSERT_TRUE(verify::verify_algorithm(a).ok());
      CompileOptions unlimited;
      unlimited.name = "nccl_ring";
      unlimited.protocol = Protocol::kLL;
      unlimited.max_steps_per_threadblock = 1 << 20;
      unlimited.min_bytes = 4096;
      CompileOptions two_slots = unlimited;
      two_slots.fifo_slots = 2;
      for (const CompileOptions& o : {unlimited, CompileOptions{}, two_slots}) {
        const std::optional<Program> fast = compile_ring_allgather(a, o);
        EXPECT_EQ(fast.has_value(), n <= o.max_steps_per_threadblock);
        EXPECT_EQ(compiles_as_ring_allgather(a, o), fast.has_value());
        if (!fast) continue;
        EXPECT_EQ(*fast, compile(Lowering(a, o), o));
        EXPECT_EQ(compile(a, o), *fast);
        EXPECT_TRUE(verify::verify_program(*fast).ok());
      }
      for (const auto& change : std::vector<std::function<void(CompileOptions&)>>{
               [](CompileOptions& o) { o.instances = 2; },
               [](CompileOptions& o) { o.fuse = false; },
               [](CompileOptions& o) { o.inplace = true; },
               [](CompileOptions& o) { o.schedule_order = true; },
               [](CompileOptions& o) { o.fifo_slots = 1; }}) {
        CompileOptions o = unlimited;
        change(o);
        EXPECT_FALSE(compile_ring_allgather(a, o).has_value());
      }
    }
  }
  // Not NCCL's rings: two ranks (a send and a receive on threadblocks of their own), several
  // chunks on one ring, and a chunk that leaves one step late.
  CompileOptions unlimited;
  unlimited.max_steps_per_threadblock = 1 << 20;
  EXPECT_FALSE(compile_ring_allgather(nccl_style_rings({{0, 1}}), unlimited));
  EXPECT_FALSE(compile_ring_allgather(ring_allgather(5, 2), unlimited));
  Algorithm late = nccl_style_rings({{0, 1, 2, 3}});
  late.ops.back().step += 1;
  EXPECT_FALSE(compile_ring_allgather(late, unlimited));
  EXPECT_EQ(compile(late, unlimited), compile(Lowering(late, unlimited), unlimited));
}

TEST(Compile, InPlaceRingAllGatherNeedsNoCopy) {
  CompileOptions o;
  o.inplace = true;
  const Program p = compile(ring_allgather(4, 1), o);
  for (const GpuProgram& g : p.gpus) {
    ASSERT_EQ(g.threadblocks.size(), 1u);
    EXPECT_EQ(g.input_chunks, 0);  // in-place allgather uses only the output buffer
    EXPECT_EQ(g.threadblocks[0].steps[0].src_buffer, Buffer::kOutput);
    EXPECT_EQ(g.threadblocks[0].steps[0].src_offset, g.rank);
  }
}

TEST(Compile, RingAllReduceIsTheMscclRing) {
  const int R = 4;
  const Program p = compile(ring_allreduce(R, 1), {});
  using enum StepType;
  for (const GpuProgram& g : p.gpus) {
    ASSERT_EQ(g.threadblocks.size(), 1u);
    // s, rrs x, rrcs, rcs x, r: the MSCCLang ring allreduce (sec. 4.3 fusions).
    EXPECT_EQ(types(g.threadblocks[0]),
              (std::vector<StepType>{kSend, kRecvReduceSend, kRecvReduceSend, kRecvReduceCopySend,
                                     kRecvCopySend, kRecvCopySend, kRecv}));
    EXPECT_EQ(g.scratch_chunks, 0);
  }
  EXPECT_TRUE(verify::verify_program(p).ok());
}

TEST(Compile, AggregationMergesContiguousChunks) {
  const Program p = compile(ring_allgather(4, 3), {});
  const Threadblock& ring = comm_tb(p.gpus[0]);
  ASSERT_EQ(ring.steps.size(), 4u);
  for (const Step& s : ring.steps) EXPECT_EQ(s.count, 3);
  CompileOptions off;
  off.aggregate = false;
  EXPECT_EQ(comm_tb(compile(ring_allgather(4, 3), off).gpus[0]).steps.size(), 12u);
}

int send_steps(const Program& p) {
  int n = 0;
  for (const GpuProgram& g : p.gpus)
    for (const Threadblock& tb : g.threadblocks)
      for (const Step& s : tb.steps) n += sends(s.type) ? 1 : 0;
  return n;
}

// Out-of-place, a rank's own chunk moves to its output slot before it is forwarded together
// with the chunks it received there, so every recursive-doubling step is one send per peer
// (cnt = everything the rank holds), as in place.
TEST(Compile, OutOfPlaceRecursiveDoublingSendsOncePerPeer) {
  for (const int R : {2, 4, 8}) {
    for (const int C : {1, 2}) {
      for (const bool per_chunk : {false, true}) {
        const Algorithm a = rd_allgather(R, C, per_chunk);
        ASSERT_TRUE(verify::verify_algorithm(a).ok());
        CompileOptions in_place;
        in_place.inplace = true;
        const Program out = compile(a, {});
        const Program in = compile(a, in_place);
        const auto report = verify::verify_program(out);
        EXPECT_TRUE(report.ok()) << report.summary() << out;
        int steps = 0;
        for (int bit = 1; bit < R; bit <<= 1) ++steps;
        EXPECT_EQ(send_steps(out), R * steps) << "R=" << R << " C=" << C << "\n" << out;
        EXPECT_EQ(send_steps(out), send_steps(in));
        // The last step sends the half of the output the rank holds, in one piece.
        for (const GpuProgram& g : out.gpus) {
          for (const Threadblock& tb : g.threadblocks) {
            if (tb.send_peer != (g.rank ^ (R / 2))) continue;
            for (const Step& s : tb.steps) {
              if (sends(s.type)) {
                EXPECT_EQ(s.count, R / 2 * C);
              }
            }
          }
        }
      }
    }
  }
}

// A rank that forwards, in one step, chunks it relays (kept in scratch) together with its own
// chunk (input) sends them as one transfer: the own chunk is first copied next to the relayed
// ones (MSCCLang's Two-Step AllToAll, sec. 7.3; docs/compiler.md pass 2).
TEST(Compile, RelayedAndOwnChunksLeaveInOneSend) {
  // Gather to rank 3: ranks 0 and 2 hand their chunks to rank 1, which sends chunks 0..2.
  Algorithm a;
  a.name = "relay_gather";
  a.collective = make_collective(CollectiveKind::kGather, 4, 1, 3);
  a.ops = {
      {0, 0, 1, OpKind::kCopy, 0}, {2, 2, 1, OpKind::kCopy, 0}, {0, 1, 3, OpKind::kCopy, 1, -1, 3}};
  ASSERT_TRUE(verify::verify_algorithm(a).ok());
  for (const bool inplace : {false, true}) {
    for (const int instances : {1, 2}) {
      CompileOptions o;
      o.inplace = inplace;
      o.instances = instances;
      const Program p = compile(a, o);
      const auto report = verify::verify_program(p);
      EXPECT_TRUE(report.ok()) << report.summary() << p;
      if (instances > 1) continue;  // instances expand cnt > 1 into strided single chunks
      std::vector<int> counts;
      int copies = 0;
      for (const Threadblock& tb : p.gpus[1].threadblocks) {
        for (const Step& s : tb.steps) {
          if (sends(s.type) && tb.send_peer == 3) counts.push_back(s.count);
          if (s.type == StepType::kCopy) ++copies;
        }
      }
      EXPECT_EQ(counts, std::vector<int>{3}) << (inplace ? "in place\n" : "") << p;
      EXPECT_EQ(copies, 1) << p;  // the own chunk, into the scratch slot between the relayed
      EXPECT_EQ(p.gpus[1].scratch_chunks, 3);
    }
  }
  CompileOptions off;
  off.aggregate = false;  // without aggregation every chunk is a send of its own
  EXPECT_EQ(send_steps(compile(a, off)), 5);
}

// Gathering on two ranks of one program, on consecutive steps: rank 3 gathers what rank 1's
// gathered send delivered, its own chunk and a third rank's, after rank 1's group changed the
// program (gathering keeps its per-rank index of references across groups); both relays send
// once and the program verifies.
TEST(Compile, TwoRelaysGatherInOneProgram) {
  // Gather to rank 5: ranks 0 and 2 hand their chunks to rank 1, which sends chunks 0..2 to
  // rank 3; rank 4 hands its chunk to rank 3, which sends chunks 0..4 to rank 5.
  Algorithm a;
  a.name = "two_relays";
  a.collective = make_collective(CollectiveKind::kGather, 6, 1, 5);
  a.ops = {{0, 0, 1, OpKind::kCopy, 0},
           {2, 2, 1, OpKind::kCopy, 0},
           {4, 4, 3, OpKind::kCopy, 0},
           {0, 1, 3, OpKind::kCopy, 1, -1, 3},
           {0, 3, 5, OpKind::kCopy, 2, -1, 5}};
  ASSERT_TRUE(verify::verify_algorithm(a).ok());
  for (const bool inplace : {false, true}) {
    CompileOptions o;
    o.inplace = inplace;
    const Program p = compile(a, o);
    const auto report = verify::verify_program(p);
    EXPECT_TRUE(report.ok()) << report.summary() << p;
    for (const auto& [relay, peer, count] : {std::tuple{1, 3, 3}, std::tuple{3, 5, 5}}) {
      std::vector<int> counts;
      for (const Threadblock& tb : p.gpus[relay].threadblocks) {
        for (const Step& s : tb.steps) {
          if (sends(s.type) && tb.send_peer == peer) counts.push_back(s.count);
        }
      }
      EXPECT_EQ(counts, std::vector<int>{count}) << "relay " << relay << "\n" << p;
    }
  }
}

TEST(Compile, InstancesReplicateThreadblocksOnOwnChannels) {
  CompileOptions o;
  o.instances = 3;
  const Program p = compile(ring_allgather(4, 1), o);
  EXPECT_EQ(p.num_channels, 3);
  EXPECT_EQ(p.gpus[0].input_chunks, 3);
  EXPECT_EQ(p.gpus[0].output_chunks, 12);
  EXPECT_EQ(p.chunks_per_loop, 12);
  int comm = 0;
  for (const Threadblock& tb : p.gpus[0].threadblocks) comm += tb.send_peer >= 0;
  EXPECT_EQ(comm, 3);
  EXPECT_TRUE(verify::verify_program(p).ok());
}

TEST(Compile, InPlaceAllToAllWaitsForTheSendBeforeOverwriting) {
  CompileOptions o;
  o.inplace = true;
  const Program p = compile(direct_alltoall(3, 1), o);
  int deps = 0;
  for (const GpuProgram& g : p.gpus)
    for (const Threadblock& tb : g.threadblocks)
      for (const Step& s : tb.steps) deps += s.dep_tb >= 0;
  EXPECT_GE(deps, 6);  // every receive waits for the send reading its slot
  EXPECT_TRUE(verify::verify_program(p).ok()) << verify::verify_program(p).summary();
}

TEST(Compile, LongThreadblocksSpillOntoMoreChannels) {
  CompileOptions o;
  o.max_steps_per_threadblock = 4;
  o.aggregate = false;
  const Program p = compile(ring_allgather(8, 1), o);  // 8 steps per ring threadblock
  EXPECT_GT(p.num_channels, 1);
  expect_well_formed(p, o);
  EXPECT_TRUE(verify::verify_program(p).ok()) << verify::verify_program(p).summary();
  o.max_channels = 1;
  EXPECT_THROW(compile(ring_allgather(8, 1), o), UserError);
}

TEST(Compile, TooManyThreadblocksIsAUserError) {
  CompileOptions o;
  o.max_threadblocks_per_rank = 2;
  EXPECT_THROW(compile(direct_alltoall(8, 1), o), UserError);
}

TEST(Compile, ChannelHintsAreHonoured) {
  Algorithm a = ring_allgather(4, 1);
  for (ChunkOp& op : a.ops) op.channel = 2;
  const Program p = compile(a, {});
  EXPECT_EQ(p.num_channels, 3);
  EXPECT_EQ(comm_tb(p.gpus[1]).channel, 2);
}

TEST(Compile, ReadingAChunkNotHeldIsAUserError) {
  Algorithm a = ring_allgather(4, 1);
  for (ChunkOp& op : a.ops) op.step = 0;
  EXPECT_THROW(compile(a, {}), UserError);
  a = ring_allgather(4, 1);
  a.ops[0].dst = a.ops[0].src;
  EXPECT_THROW(compile(a, {}), UserError);
}

TEST(Compile, OptionsAreChecked) {
  CompileOptions o;
  o.instances = 0;
  EXPECT_THROW(compile(ring_allgather(2, 1), o), UserError);
  o = {};
  o.min_bytes = 100;
  o.max_bytes = 10;
  EXPECT_THROW(compile(ring_allgather(2, 1), o), UserError);
}

TEST(Compile, ProgramFieldsFollowOptions) {
  CompileOptions o;
  o.name = "mine";
  o.protocol = Protocol::kLL128;
  o.min_bytes = 1024;
  o.max_bytes = 1 << 20;
  const Program p = compile(ring_allgather(2, 1), o);
  EXPECT_EQ(p.name, "mine");
  EXPECT_EQ(p.protocol, Protocol::kLL128);
  EXPECT_EQ(p.min_bytes, 1024);
  EXPECT_EQ(p.max_bytes, 1 << 20);
  EXPECT_TRUE(p.outofplace);
}

TEST(Compile, CustomCollectiveAllToNext) {
  Algorithm a;
  a.collective = make_alltonext(4, 2);
  for (int r = 0; r + 1 < 4; ++r) a.ops.push_back({2 * r, r, r + 1, OpKind::kCopy, 0, -1, 2});
  ASSERT_TRUE(verify::verify_algorithm(a).ok());
  const Program p = compile(a, {});
  EXPECT_EQ(p.collective, CollectiveKind::kCustom);
  verify::VerifyProgramOptions vo;
  vo.collective = &a.collective;
  EXPECT_TRUE(verify::verify_program(p, vo).ok()) << verify::verify_program(p, vo).summary();
}

}  // namespace
}  // namespace ccsynth::compiler

namespace ccsynth::compiler {
namespace {

TEST(Compile, DependenciesAreNeeded) {
  // Without the inserted write-after-read dependencies the in-place alltoall would overwrite
  // chunks before sending them: the verifier must then complain, so the dependencies matter.
  CompileOptions o;
  o.inplace = true;
  Program p = compile(testing::direct_alltoall(4, 1), o);
  ASSERT_TRUE(verify::verify_program(p).ok());
  for (GpuProgram& g : p.gpus)
    for (Threadblock& tb : g.threadblocks)
      for (Step& s : tb.steps) s.dep_tb = s.dep_step = -1, s.has_dep = false;
  EXPECT_FALSE(verify::verify_program(p).ok());
}

TEST(Compile, ManyUnaggregatedSendsDoNotOverflowTheFifo) {
  // 9 sends per step into a ring of fused rcs would need 10 FIFO slots; the deadlock check
  // un-fuses or un-pairs until it runs with the runtime's 8.
  CompileOptions o;
  o.aggregate = false;
  for (const Algorithm& a : {testing::ring_allgather(4, 9), testing::ring_allreduce(3, 9)}) {
    const Program p = compile(a, o);
    EXPECT_TRUE(find_fifo_deadlock(p, 8, false).empty());
    EXPECT_TRUE(verify::verify_program(p).ok()) << verify::verify_program(p).summary();
  }
}

// A ring of 70 ranks sends 69 chunks over every connection, one step over the executor's 64 once
// the final receive shares the threadblock. The compiler first retries a little under the limit
// (60 transfers per channel: 2 channels) instead of halving it (32: 3 channels).
TEST(Compile, JustOverTheStepLimitSpillsIntoOneMoreChannel) {
  const Algorithm a = ring_allgather(70, 1);
  const Program p = compile(a);
  EXPECT_EQ(p.num_channels, 2);
  for (const GpuProgram& g : p.gpus) {
    for (const Threadblock& tb : g.threadblocks) EXPECT_LE(tb.steps.size(), 64u);
  }
  EXPECT_TRUE(verify::verify_program(p).ok());
}

// 149 transfers per connection over a 64-step limit: three channels of about 50 each (spread
// evenly), where filling channels in turn would leave threadblocks of 64, 64 and 21 transfers.
TEST(Compile, ASpilledConnectionSpreadsEvenlyOverItsChannels) {
  const Program p = compile(ring_allgather(150, 1));
  EXPECT_EQ(p.num_channels, 3);
  size_t shortest = 1000, longest = 0;
  for (const GpuProgram& g : p.gpus) {
    for (const Threadblock& tb : g.threadblocks) {
      if (tb.send_peer < 0 && tb.recv_peer < 0) continue;  // the local threadblock
      shortest = std::min(shortest, tb.steps.size());
      longest = std::max(longest, tb.steps.size());
    }
  }
  EXPECT_LE(longest, 64u);
  EXPECT_LE(longest - shortest, 2u);
  EXPECT_TRUE(verify::verify_program(p).ok());
}

// A pair of ranks with more transfers than all channels x the step limit hold fails before
// scheduling, naming the pair, the steps it needs and what would fit.
TEST(Compile, AConnectionOverChannelsTimesStepsFailsEarlyNamingTheOptions) {
  CompileOptions o;
  o.max_channels = 2;
  o.max_steps_per_threadblock = 4;
  try {
    compile(ring_allgather(10, 1), o);  // 9 transfers per pair > 2 x 4
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    // Known from the algorithm's steps, before lowering.
    const std::string what = e.what();
    EXPECT_NE(what.find("sends at least 9 transfers to rank"), std::string::npos) << what;
    EXPECT_NE(what.find("at least 5 steps per threadblock"), std::string::npos) << what;
    EXPECT_NE(what.find("classic dialect"), std::string::npos) << what;
  }
  o.max_channels = 8;  // 8 x 4 >= 9: schedules over more channels
  EXPECT_NO_THROW(compile(ring_allgather(10, 1), o));
}

// The step limit's shortfall read from the algorithm alone: a pair sending in more different steps
// than an instance's channels x steps hold; ops of one step count once (one transfer).
TEST(Compile, StepLimitShortfallCountsEachPairsDifferentSteps) {
  CompileOptions o;
  o.max_channels = 2;
  o.max_steps_per_threadblock = 4;
  const Algorithm ring = ring_allgather(10, 1);  // 9 steps per pair
  const std::string over = step_limit_shortfall(ring, o);
  EXPECT_NE(over.find("sends at least 9 transfers to rank"), std::string::npos) << over;
  o.max_channels = 3;  // 3 x 4 >= 9
  EXPECT_EQ(step_limit_shortfall(ring, o), "");
  o.instances = 2;  // one channel per instance: 1 x 4 < 9
  EXPECT_NE(step_limit_shortfall(ring, o).find("with fewer instances"), std::string::npos);
  Algorithm one_step = ring;  // every pair's ops in one step: one transfer each
  for (ChunkOp& op : one_step.ops) op.step = 0;
  EXPECT_EQ(step_limit_shortfall(one_step, o), "");
}

// A pair of ranks whose transfers fit the channels only at the step limit itself (9 transfers,
// 3 channels x 3 steps): at the limit, the ring's threadblocks that pair a receive with a send
// connection run both and are over it; they are split into one threadblock per connection
// instead of trying fewer steps per channel, which would need more channels than there are
// (the mesh2d:64x64 allgather failed this way in the executor dialect, issue 16). A timed
// algorithm's spill order (below) is left out where a threadblock has no room for its nop.
TEST(Compile, APairedThreadblockOverTheLimitIsSplitBeforeChannelsRunOut) {
  CompileOptions o;
  o.max_channels = 3;
  o.max_steps_per_threadblock = 3;
  o.aggregate = false;
  const Program p = compile(ring_allgather(10, 1), o);
  expect_well_formed(p, o);
  EXPECT_EQ(p.num_channels, 3);
  int unpaired = 0;
  for (const Threadblock& tb : p.gpus[0].threadblocks)
    unpaired += tb.send_peer < 0 || tb.recv_peer < 0;
  EXPECT_GT(unpaired, 0);
  EXPECT_TRUE(verify::verify_program(p).ok()) << verify::verify_program(p).summary();
}

// Per rank, the channels after the first of its connection to the next rank whose first send
// waits (in its step or a nop just before it) for the last send of the channel before.
int channels_sent_in_order(const Program& p) {
  int ordered = 0;
  for (const GpuProgram& g : p.gpus) {
    std::map<int, int> by_channel;  // channel -> threadblock sending to the next rank
    for (const Threadblock& tb : g.threadblocks)
      if (tb.send_peer >= 0) by_channel[tb.channel] = tb.id;
    EXPECT_GT(by_channel.size(), 1u) << "rank " << g.rank << " does not spill";
    for (auto it = std::next(by_channel.begin()); it != by_channel.end(); ++it) {
      const Threadblock& before = g.threadblocks[std::prev(it)->second];
      int last_send = -1;
      for (size_t s = 0; s < before.steps.size(); ++s)
        if (sends(before.steps[s].type)) last_send = static_cast<int>(s);
      const Threadblock& tb = g.threadblocks[it->second];
      auto step = std::find_if(tb.steps.begin(), tb.steps.end(),
                               [](const Step& s) { return sends(s.type); });
      if (step == tb.steps.end()) continue;
      for (;; --step) {  // the send and the nops just before it
        if (step->dep_tb == before.id && step->dep_step >= last_send) {
          ++ordered;
          break;
        }
        if (step == tb.steps.begin() || std::prev(step)->type != StepType::kNop) break;
      }
    }
  }
  return ordered;
}

// A timed algorithm's connection spilled over channels to fit the step limit sends in order, as
// one long threadblock would: the first send of each later channel waits for the last send of
// the channel before it. Without the wait the channels' sends ran at once and shared the link,
// out of the order the synthesizer timed (TACOS on mesh2d:40x40: 1.116x the bound instead of
// 1.045x). An untimed algorithm's channels are left to overlap.
TEST(Compile, ATimedConnectionSpilledOverChannelsSendsThemInOrder) {
  CompileOptions o;
  o.max_channels = 8;
  o.max_steps_per_threadblock = 8;
  o.aggregate = false;
  o.fuse = false;
  Algorithm timed = ring_allgather(16, 1);  // 15 transfers per connection
  for (ChunkOp& op : timed.ops) op.start_us = op.step;
  const Program p = compile(timed, o);
  expect_well_formed(p, o);
  EXPECT_TRUE(verify::verify_program(p).ok()) << verify::verify_program(p).summary();
  EXPECT_GE(channels_sent_in_order(p), p.num_ranks);
  EXPECT_EQ(channels_sent_in_order(compile(ring_allgather(16, 1), o)), 0);
  // At the step limit itself (the ring of APairedThreadblockOverTheLimitIsSplitBeforeChannels-
  // RunOut, timed) a wait that needs a nop has no room: it is left out, and the program fits.
  o.max_channels = 3;
  o.max_steps_per_threadblock = 3;
  Algorithm tight = ring_allgather(10, 1);
  for (ChunkOp& op : tight.ops) op.start_us = op.step;
  const Program q = compile(tight, o);
  expect_well_formed(q, o);
  EXPECT_TRUE(verify::verify_program(q).ok()) << verify::verify_program(q).summary();
}

// A threadblock over the step limit gets shorter only once one of its connections spreads over
// more channels: a pair of 50 transfers keeps one channel of 50 down to capacity 50, one of
// 100 two channels of 50, so after capacity 60 the next one worth scheduling is 49 (the
// proportional 60 x 64 / 65 = 59 would schedule 56 and fail alike: TACOS's rfs:8x8x8 allreduce,
// whose receive threadblocks carry 15 dependency nops). A local threadblock sets no bound.
TEST(Compile, TheNextCapacityIsOneThatSpreadsTheLongThreadblocksConnections) {
  Lowered l;
  for (int i = 0; i < 50; ++i) l.transfers.push_back({.src_rank = 0, .dst_rank = 1});
  for (int i = 0; i < 100; ++i) l.transfers.push_back({.src_rank = 2, .dst_rank = 1});
  l.transfers.push_back({.src_rank = 3, .dst_rank = 1, .removed = true});
  Program p;
  p.gpus.resize(4);
  for (int r = 0; r < 4; ++r) p.gpus[r].rank = r;
  Threadblock long_receive;
  long_receive.recv_peer = 0;
  long_receive.steps.resize(65);
  p.gpus[1].threadblocks.push_back(long_receive);
  EXPECT_EQ(shortening_capacity(p, l, 60, 64), 49);
  EXPECT_EQ(shortening_capacity(p, l, 50, 64), 49);
  EXPECT_EQ(shortening_capacity(p, l, 49, 64), 24);  // two channels of 25 already
  long_receive.recv_peer = 2;
  p.gpus[1].threadblocks = {long_receive};
  EXPECT_EQ(shortening_capacity(p, l, 60, 64), 49);
  EXPECT_EQ(shortening_capacity(p, l, 40, 64), 33);  // 3 channels of 34
  Threadblock local;
  local.steps.resize(70);
  p.gpus[1].threadblocks = {local};
  EXPECT_EQ(shortening_capacity(p, l, 60, 64), 59);
  p.gpus[1].threadblocks = {};
  EXPECT_EQ(shortening_capacity(p, l, 60, 64), 59);
}

TEST(DeadlockCheck, FusedRingNeedsTwoSlots) {
  const Program p = compile(testing::ring_allgather(3, 1), {});
  EXPECT_TRUE(find_fifo_deadlock(p, 2, false).empty());
  const auto blocked = find_fifo_deadlock(p, 1, false);
  ASSERT_EQ(blocked.size(), 3u);  // every rank's rcs waits for its successor's full FIFO
  for (const BlockedStep& b : blocked) {
    EXPECT_TRUE(b.on_send);
    EXPECT_EQ(b.step, 1);
  }
  CompileOptions o;
  o.fifo_slots = 1;
  const Program unfused = compile(testing::ring_allgather(3, 1), o);
  EXPECT_TRUE(find_fifo_deadlock(unfused, 1, false).empty());
  verify::VerifyProgramOptions vo;
  vo.fifo_slots = 1;
  EXPECT_TRUE(verify::verify_program(unfused, vo).ok());
}

}  // namespace
}  // namespace ccsynth::compiler

namespace ccsynth::compiler {
namespace {

TEST(Instances, ReplicatedBuiltinCollectiveIsTheFinerBuiltin) {
  for (CollectiveKind kind : builtin_collective_kinds()) {
    const Collective coarse = make_collective(kind, 4, 2, 1);
    EXPECT_EQ(replicate_collective(coarse, 3), make_collective(kind, 4, 6, 1)) << to_string(kind);
  }
  const Collective next = make_alltonext(3, 1);
  EXPECT_EQ(replicate_collective(next, 1), next);
  EXPECT_EQ(replicate_collective(next, 2), make_alltonext(3, 2));
}

TEST(Instances, CustomCollectiveVerifiesAfterReplication) {
  Algorithm a;
  a.collective = make_alltonext(4, 1);
  for (int r = 0; r + 1 < 4; ++r) a.ops.push_back({r, r, r + 1, OpKind::kCopy, 0});
  CompileOptions o;
  o.instances = 2;
  const Program p = compile(a, o);
  const Collective fine = replicate_collective(a.collective, 2);
  verify::VerifyProgramOptions vo;
  vo.collective = &fine;
  EXPECT_TRUE(verify::verify_program(p, vo).ok()) << verify::verify_program(p, vo).summary();
}

}  // namespace
}  // namespace ccsynth::compiler

namespace ccsynth::compiler {
namespace {

using namespace testing;  // NOLINT: the reference algorithms

// Direct allgather on R ranks where rank r sends to r + d and receives from r - d in
// threadblock `tb(d)` (d = 1..R-1), or leaves the threadblock to the compiler where tb(d) < 0.
Algorithm hinted_direct_allgather(int R, const std::function<int(int)>& tb) {
  Algorithm a = direct_allgather(R, 1);
  for (ChunkOp& op : a.ops) {
    const int d = mod(op.dst - op.src, R);
    op.send_tb = tb(d);
    op.recv_tb = tb(d);
  }
  return a;
}

void expect_verifies(const Program& p, int fifo_slots = 8) {
  verify::VerifyProgramOptions vo;
  vo.fifo_slots = fifo_slots;
  const auto report = verify::verify_program(p, vo);
  EXPECT_TRUE(report.ok()) << report.summary() << p;
}

// The UserError `compile` throws for `a`, or a test failure.
UserError compile_error(const Algorithm& a) {
  try {
    compile(a, {});
  } catch (const UserError& e) {
    return e;
  }
  ADD_FAILURE() << "no UserError";
  return UserError("", "", "");
}

TEST(ThreadblockHints, HintedSendAndReceiveConnectionsShareTheirThreadblock) {
  // Without hints the compiler numbers receive-only threadblocks first; the hints pair the send
  // to r + d with the receive from r - d in threadblock R - 1 - d instead.
  const int R = 4;
  const Algorithm a = hinted_direct_allgather(R, [&](int d) { return R - 1 - d; });
  for (const bool inplace : {false, true}) {
    CompileOptions o;
    o.inplace = inplace;
    const Program p = compile(a, o);
    expect_well_formed(p, o);
    expect_verifies(p);
    for (const GpuProgram& g : p.gpus) {
      ASSERT_GE(g.threadblocks.size(), static_cast<size_t>(R - 1));
      for (int d = 1; d < R; ++d) {
        const Threadblock& tb = g.threadblocks[R - 1 - d];
        EXPECT_EQ(tb.send_peer, mod(g.rank + d, R)) << "rank " << g.rank << " tb " << R - 1 - d;
        EXPECT_EQ(tb.recv_peer, mod(g.rank - d, R)) << "rank " << g.rank << " tb " << R - 1 - d;
      }
    }
    o.fifo_slots = 2;
    expect_verifies(compile(a, o), 2);
  }
}

TEST(ThreadblockHints, UnhintedThreadblocksFillTheOtherIds) {
  // Only the sends to r + 1 are hinted, into threadblock 4 of 7 (3 sends, 3 receives, the
  // final copy): the others take ids 0..3, 5, 6 in the compiler's order (receive-only ones,
  // send-only ones, the local one).
  const int R = 4;
  Algorithm a = direct_allgather(R, 1);
  for (ChunkOp& op : a.ops) op.send_tb = op.dst == mod(op.src + 1, R) ? 4 : -1;
  const Program p = compile(a, {});
  expect_well_formed(p, {});
  expect_verifies(p);
  for (const GpuProgram& g : p.gpus) {
    ASSERT_EQ(g.threadblocks.size(), 7u);
    EXPECT_EQ(g.threadblocks[4].send_peer, mod(g.rank + 1, R));
    EXPECT_EQ(g.threadblocks[4].recv_peer, -1);
    EXPECT_EQ(g.threadblocks[5].recv_peer, -1);  // a send-only one moved up
    EXPECT_EQ(g.threadblocks[6].send_peer, -1);  // the local one stays last
    EXPECT_EQ(g.threadblocks[6].recv_peer, -1);
  }
}

TEST(ThreadblockHints, HintsBeyondTheThreadblockCountMoveDownInOrder) {
  // Hints 10 (send to r + 1) and 20 (send to r + 2) on a rank with 7 threadblocks become ids 5
  // and 6: ids stay dense and the hinted threadblocks keep their relative order.
  const int R = 4;
  Algorithm a = direct_allgather(R, 1);
  for (ChunkOp& op : a.ops) {
    const int d = mod(op.dst - op.src, R);
    op.send_tb = d == 1 ? 10 : d == 2 ? 20 : -1;
  }
  const Program p = compile(a, {});
  expect_well_formed(p, {});
  expect_verifies(p);
  for (const GpuProgram& g : p.gpus) {
    ASSERT_EQ(g.threadblocks.size(), 7u);
    EXPECT_EQ(g.threadblocks[5].send_peer, mod(g.rank + 1, R));
    EXPECT_EQ(g.threadblocks[6].send_peer, mod(g.rank + 2, R));
  }
}

TEST(ThreadblockHints, MatchingTheCompilersChoiceChangesNothing) {
  Algorithm a = ring_allreduce(4, 2);
  const Program plain = compile(a, {});
  for (ChunkOp& op : a.ops) op.send_tb = op.recv_tb = 0;
  EXPECT_EQ(compile(a, {}), plain);
}

TEST(ThreadblockHints, UnhintedOpsOfAHintedConnectionFollowIt) {
  Algorithm a = ring_allgather(4, 1);
  for (ChunkOp& op : a.ops) op.send_tb = op.step == 1 ? 1 : -1;  // one op per connection
  CompileOptions o;
  o.inplace = true;
  const Program p = compile(a, o);
  expect_well_formed(p, o);
  expect_verifies(p);
  for (const GpuProgram& g : p.gpus) {
    ASSERT_EQ(g.threadblocks.size(), 2u);
    EXPECT_EQ(g.threadblocks[1].send_peer, mod(g.rank + 1, 4));
    EXPECT_EQ(g.threadblocks[1].steps.size(), 3u);  // every send of the connection
    EXPECT_EQ(g.threadblocks[0].recv_peer, mod(g.rank - 1, 4));
  }
}

TEST(ThreadblockHints, ChannelFollowsTheHintedConnection) {
  // The receive from r - 1 asks for channel 1; the send to r + 1 hinted into the same
  // threadblock without a channel takes channel 1 too.
  Algorithm a = ring_allgather(4, 1);
  for (ChunkOp& op : a.ops) {
    op.send_tb = op.recv_tb = 0;
    if (op.dst == 2) op.channel = 1;
  }
  const Program p = compile(a, {});
  expect_verifies(p);
  const Threadblock& tb = p.gpus[2].threadblocks[0];
  EXPECT_EQ(tb.recv_peer, 1);
  EXPECT_EQ(tb.send_peer, 3);
  EXPECT_EQ(tb.channel, 1);
}

TEST(ThreadblockHints, HintsSurviveInstancesInTheFirstInstance) {
  const int R = 4;
  const Algorithm a = hinted_direct_allgather(R, [&](int d) { return R - 1 - d; });
  CompileOptions o;
  o.instances = 2;
  const Program p = compile(a, o);
  expect_well_formed(p, o);
  const Collective fine = replicate_collective(a.collective, 2);
  verify::VerifyProgramOptions vo;
  vo.collective = &fine;
  EXPECT_TRUE(verify::verify_program(p, vo).ok()) << verify::verify_program(p, vo).summary();
  for (const GpuProgram& g : p.gpus) {
    const int n = static_cast<int>(g.threadblocks.size()) / 2;  // per instance
    for (int d = 1; d < R; ++d) {
      EXPECT_EQ(g.threadblocks[R - 1 - d].send_peer, mod(g.rank + d, R));
      EXPECT_EQ(g.threadblocks[n + R - 1 - d].send_peer, mod(g.rank + d, R));  // instance 1
    }
  }
}

int op_index(const Algorithm& a, int src, int dst, int step = 0) {
  for (size_t i = 0; i < a.ops.size(); ++i) {
    if (a.ops[i].src == src && a.ops[i].dst == dst && a.ops[i].step == step)
      return static_cast<int>(i);
  }
  throw std::runtime_error("no such op");
}

TEST(ThreadblockHints, TwoSendPeersInOneThreadblockIsAUserError) {
  Algorithm a = direct_allgather(4, 1);
  a.ops[op_index(a, 0, 1)].send_tb = 2;
  a.ops[op_index(a, 0, 3)].send_tb = 2;
  const UserError e = compile_error(a);
  EXPECT_EQ(e.field(), "ops[" + std::to_string(op_index(a, 0, 3)) + "].send_tb");
  EXPECT_NE(e.reason().find("ops[" + std::to_string(op_index(a, 0, 1)) + "]"), std::string::npos)
      << e.reason();
  EXPECT_NE(e.reason().find("one send peer"), std::string::npos) << e.reason();
}

TEST(ThreadblockHints, TwoReceivePeersInOneThreadblockIsAUserError) {
  Algorithm a = direct_allgather(4, 1);
  a.ops[op_index(a, 1, 0)].recv_tb = 0;
  a.ops[op_index(a, 2, 0)].recv_tb = 0;
  const UserError e = compile_error(a);
  EXPECT_EQ(e.field(), "ops[" + std::to_string(op_index(a, 2, 0)) + "].recv_tb");
  EXPECT_NE(e.reason().find("one receive peer"), std::string::npos) << e.reason();
}

TEST(ThreadblockHints, OneConnectionInTwoThreadblocksIsAUserError) {
  Algorithm a = ring_allgather(4, 1);
  a.ops[op_index(a, 0, 1, 0)].send_tb = 0;
  a.ops[op_index(a, 0, 1, 2)].send_tb = 1;
  const UserError e = compile_error(a);
  EXPECT_EQ(e.field(), "ops[" + std::to_string(op_index(a, 0, 1, 2)) + "].send_tb");
  EXPECT_NE(e.reason().find("one threadblock"), std::string::npos) << e.reason();
}

TEST(ThreadblockHints, TwoChannelsInOneThreadblockIsAUserError) {
  Algorithm a = ring_allgather(4, 1);
  ChunkOp& in = a.ops[op_index(a, 0, 1)];
  ChunkOp& out = a.ops[op_index(a, 1, 2, 1)];
  in.recv_tb = out.send_tb = 0;
  in.channel = 0;
  out.channel = 1;
  const UserError e = compile_error(a);
  EXPECT_NE(e.field().find("ops["), std::string::npos);
  EXPECT_NE(e.reason().find("one channel"), std::string::npos) << e.reason();
  a.ops[op_index(a, 0, 1)].recv_tb = -2;
  EXPECT_EQ(compile_error(a).field(), "ops[" + std::to_string(op_index(a, 0, 1)) + "].recv_tb");
}

}  // namespace
}  // namespace ccsynth::compiler

namespace ccsynth::compiler {
namespace {

using namespace testing;  // NOLINT: the reference algorithms

// One lowering serves every compilation that differs only in what is decided after it
// (fusion, FIFO depth, step limit, name): the programs equal compiling from scratch.
TEST(Lowering, SharedLoweringCompilesLikeCompile) {
  for (const Algorithm& a : {ring_allreduce(4, 2), direct_alltoall(4, 1), rd_allgather(8, 1)}) {
    for (const int instances : {1, 2}) {
      CompileOptions base;
      base.instances = instances;
      const Lowering lowering(a, base);
      for (const bool fuse : {true, false}) {
        for (const int fifo_slots : {2, 8}) {
          CompileOptions o = base;
          o.fuse = fuse;
          o.fifo_slots = fifo_slots;
          o.max_steps_per_threadblock = 16;
          o.name = "shared";
          ASSERT_TRUE(lowering.matches(o));
          const Program shared = compile(lowering, o);
          EXPECT_EQ(shared, compile(a, o)) << a.name << " fuse " << fuse;
          const Collective replicated = replicate_collective(a.collective, instances);
          EXPECT_TRUE(verify::verify_program(shared, {&replicated, fifo_slots}).ok());
        }
      }
    }
  }
}

TEST(Lowering, OptionsThatChangeTheLoweringAreRefused) {
  const Algorithm a = ring_allgather(4, 1);
  const Lowering lowering(a, CompileOptions{});
  CompileOptions in_place;
  in_place.inplace = true;
  EXPECT_FALSE(lowering.matches(in_place));
  EXPECT_THROW(compile(lowering, in_place), InternalError);
  CompileOptions no_aggregation;
  no_aggregation.aggregate = false;
  EXPECT_FALSE(lowering.matches(no_aggregation));
  CompileOptions two;
  two.instances = 2;
  EXPECT_FALSE(lowering.matches(two));
}

// Packed keys sort like the tuples of ints they pack, negative ones included.
TEST(SortKey, PackedKeysSortLikeTheirTuples) {
  const std::vector<int> values = {-2147483647 - 1, -5, -1, 0, 1, 7, 2147483647};
  for (const int a : values) {
    for (const int b : values) {
      EXPECT_EQ(pack(a, 0) < pack(b, 0), a < b) << a << " " << b;
      EXPECT_EQ(pack(3, a) < pack(3, b), a < b) << a << " " << b;
      EXPECT_EQ(pack(a, b, -1, 2) < pack(b, a, -1, 2), std::make_pair(a, b) < std::make_pair(b, a));
      EXPECT_EQ(pack(0, 0, a, b) < pack(0, 0, b, a), std::make_pair(a, b) < std::make_pair(b, a));
    }
    EXPECT_EQ(unpack_lo(pack(9, a)), a);
  }
}

// Sorting in runs of one lead value gives std::sort's order, whether the runs come in
// increasing order (sorted one by one) or not (sorted at once).
TEST(SortKey, SortingInRunsGivesTheSortedOrder) {
  std::mt19937 random(7);
  for (const bool runs_in_order : {true, false}) {
    std::vector<std::pair<int, int>> keys;
    for (int step = 0; step < 50; ++step) {
      const int lead = runs_in_order ? step : (step * 17) % 50;
      for (int k = 0; k < 40; ++k) keys.emplace_back(lead, static_cast<int>(random() % 100) - 50);
    }
    std::vector<std::pair<int, int>> expected = keys;
    std::sort(expected.begin(), expected.end());
    sort_in_runs(keys, [](const std::pair<int, int>& k) { return k.first; });
    EXPECT_EQ(keys, expected) << runs_in_order;
  }
}

// Grouping by rank puts each rank's instructions together in their order before, and every
// transfer's ends still name the same instructions, whether into a copy or in place.
TEST(GroupByRank, KeepsEachRanksOrderAndTheTransfersEnds) {
  const Collective allgather = make_collective(CollectiveKind::kAllGather, 3, 1);
  Lowered l;
  l.collective = &allgather;
  auto add = [&l](int rank, int step) {
    Instruction in;
    in.rank = rank;
    in.key = {step, 0, static_cast<int>(l.instructions.size()), 0};
    l.instructions.push_back(in);
    return static_cast<int>(l.instructions.size()) - 1;
  };
  for (int step = 0; step < 4; ++step) {
    for (int src = 0; src < 3; ++src) {
      Transfer t;
      t.src_rank = src;
      t.dst_rank = (src + 1) % 3;
      t.sender = add(t.src_rank, step);
      t.receiver = add(t.dst_rank, step);
      l.transfers.push_back(t);
    }
  }
  const Lowered before = l;
  Lowered in_place = l;
  group_by_rank(l);
  group_by_rank(in_place, 0);  // the way of the largest lowerings: the same result
  EXPECT_TRUE(in_place.instructions == l.instructions && in_place.transfers == l.transfers);
  ASSERT_EQ(l.instructions.size(), before.instructions.size());
  for (size_t i = 1; i < l.instructions.size(); ++i) {
    const Instruction& a = l.instructions[i - 1];
    const Instruction& b = l.instructions[i];
    EXPECT_TRUE(a.rank < b.rank || (a.rank == b.rank && a.key.op < b.key.op)) << i;
  }
  for (size_t t = 0; t < l.transfers.size(); ++t) {
    EXPECT_EQ(l.instructions[l.transfers[t].sender].key,
              before.instructions[before.transfers[t].sender].key);
    EXPECT_EQ(l.instructions[l.transfers[t].receiver].key,
              before.instructions[before.transfers[t].receiver].key);
  }
}

}  // namespace
}  // namespace ccsynth::compiler
