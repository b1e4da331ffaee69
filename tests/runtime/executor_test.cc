// The CPU executor on hand-made and compiled programs: every instruction type, slicing,
// dependencies, in-place calls, and broken programs that must fail cleanly (no hang) with a
// message naming the waiting steps.

#include "ccsynth/runtime/cpu_executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "../verify/test_programs.h"
#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/error.h"
#include "ccsynth/runtime/harness.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/topologies/library.h"

namespace ccsynth::runtime {
namespace {

Program ring_program(CollectiveKind kind, int ranks, bool inplace = false, int instances = 1) {
  const Topology t = topologies::make_builtin("ring:" + std::to_string(ranks));
  compiler::CompileOptions o;
  o.inplace = inplace;
  o.instances = instances;
  return compiler::compile(
      synth::make_baseline(synth::BaselineKind::kRing, make_collective(kind, ranks), t), o);
}

HarnessOptions checked(DataType dtype = DataType::kFloat32, ReduceOp op = ReduceOp::kSum) {
  HarnessOptions o;
  o.check = true;
  o.iters = 1;
  o.exec.dtype = dtype;
  o.exec.op = op;
  o.exec.timeout_s = 20;
  return o;
}

TEST(CpuExecutor, RingAllreduceIsCorrect) {
  const Program p = ring_program(CollectiveKind::kAllReduce, 4);
  const HarnessResult r = run_program(p, 4 * 1024, checked());
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_TRUE(r.checked);
  EXPECT_EQ(r.checked_elements, 4 * 1024);  // 4 ranks x 1024 output floats
  EXPECT_EQ(r.mismatches, 0);
}

}  // namespace
}  // namespace ccsynth::runtime

namespace ccsynth::runtime {
namespace {

using ccsynth::testing::make_step;

// A custom program of `ranks` ranks with `chunks` input and output chunks each and no
// threadblocks yet.
Program custom_program(const std::string& name, int ranks, int chunks) {
  Program p;
  p.name = name;
  p.collective = CollectiveKind::kCustom;
  p.num_ranks = ranks;
  p.gpus.resize(ranks);
  for (int r = 0; r < ranks; ++r) {
    p.gpus[r].rank = r;
    p.gpus[r].input_chunks = chunks;
    p.gpus[r].output_chunks = chunks;
  }
  return p;
}

Threadblock make_tb(int id, int send, int recv, std::vector<Step> steps, int channel = 0) {
  Threadblock tb;
  tb.id = id;
  tb.send_peer = send;
  tb.recv_peer = recv;
  tb.channel = channel;
  tb.steps = std::move(steps);
  return tb;
}

// A 3-rank custom program using every instruction type (int32 sums, values checked by hand):
//   rank 0: tb0 -> 1: s i[0], s i[1];   tb1 <- 2: r o[0]
//   rank 1: tb0 0 -> 1 -> 2: rrs (recv + i[0]) , rcs o[1]
//           tb1 local: cpy i[1] -> o[0] (after tb0 step 1), re o[0] += i[0], nop (dep tb0 step 0)
//   rank 2: tb0 1 -> 2 -> 0: rrcs o[0] = recv + i[0] (sent on), r o[1] ... (recv from 1)
// Rank 2 receives twice from rank 1 but sends once to rank 0.
Program every_type_program() {
  const Buffer I = Buffer::kInput;
  const Buffer O = Buffer::kOutput;
  Program p = custom_program("every_type", 3, 2);
  p.gpus[0].threadblocks = {
      make_tb(0, 1, -1,
              {make_step(StepType::kSend, I, 0, O, -1), make_step(StepType::kSend, I, 1, O, -1)}),
      make_tb(1, -1, 2, {make_step(StepType::kRecv, I, -1, O, 0)})};
  p.gpus[1].threadblocks = {make_tb(0, 2, 0,
                                    {make_step(StepType::kRecvReduceSend, I, 0, O, -1),
                                     make_step(StepType::kRecvCopySend, I, -1, O, 1)}),
                            make_tb(1, -1, -1,
                                    {make_step(StepType::kCopy, I, 1, O, 0, 1, 0, 1),
                                     make_step(StepType::kReduce, I, 0, O, 0),
                                     make_step(StepType::kNop, I, -1, O, -1, 0, 0, 0)})};
  p.gpus[1].threadblocks[0].steps[1].has_dep = true;
  p.gpus[1].threadblocks[0].steps[0].has_dep = true;
  p.gpus[2].threadblocks = {make_tb(0, 0, 1,
                                    {make_step(StepType::kRecvReduceCopySend, I, 0, O, 0),
                                     make_step(StepType::kRecv, I, -1, O, 1)})};
  // rank 2 tb0 sends once to rank 0 (its rrcs); rank 0 tb1 receives it.
  return p;
}

struct Buffers {
  std::vector<std::vector<int32_t>> in, out;
  std::vector<RankBuffers> views;
  Buffers(int ranks, int64_t chunk_elems, int chunks) {
    in.assign(ranks, std::vector<int32_t>(chunk_elems * chunks));
    out.assign(ranks, std::vector<int32_t>(chunk_elems * chunks, -1));
    for (int r = 0; r < ranks; ++r) {
      for (size_t e = 0; e < in[r].size(); ++e) in[r][e] = static_cast<int32_t>(1000 * r + e);
      views.push_back({in[r].data(), out[r].data()});
    }
  }
};

TEST(CpuExecutor, EveryInstructionTypeWithSlicesAndOneSlotFifos) {
  CpuExecutor exec(every_type_program());
  for (int workers : {1, 2}) {
    for (int slices : {1, 3}) {
      const int64_t n = 10;  // elements per chunk
      Buffers b(3, n, 2);
      ExecOptions o;
      o.dtype = DataType::kInt32;
      o.slices = slices;
      o.fifo_slots = 1;
      o.workers = workers;
      const ExecResult r = exec.run(b.views, n, o);
      ASSERT_TRUE(r.ok) << r.error;
      EXPECT_EQ(r.slices, slices);
      EXPECT_EQ(r.step_instances, 10 * slices);  // 10 steps in all
      auto x = [&](int rank, int chunk, int e) { return b.in[rank][chunk * n + e]; };
      for (int e = 0; e < n; ++e) {
        const int32_t total = x(0, 0, e) + x(1, 0, e) + x(2, 0, e);
        EXPECT_EQ(b.out[2][e], total);                    // rrcs
        EXPECT_EQ(b.out[0][e], total);                    // r of the rrcs message
        EXPECT_EQ(b.out[2][n + e], x(0, 1, e));           // r of the rcs forward
        EXPECT_EQ(b.out[1][n + e], x(0, 1, e));           // rcs
        EXPECT_EQ(b.out[1][e], x(1, 1, e) + x(1, 0, e));  // cpy then re
        EXPECT_EQ(b.out[0][n + e], -1);                   // untouched
      }
    }
  }
}

TEST(CpuExecutor, ReductionOperatorsAndTypes) {
  // rank 1 computes o[0] = recv (+) i[0] with every operator on every type.
  Program p = custom_program("rrc", 2, 1);
  p.gpus[0].threadblocks = {
      make_tb(0, 1, -1, {make_step(StepType::kSend, Buffer::kInput, 0, Buffer::kOutput, -1)})};
  p.gpus[1].threadblocks = {make_tb(
      0, -1, 0, {make_step(StepType::kRecvReduceCopy, Buffer::kInput, 0, Buffer::kOutput, 0)})};
  CpuExecutor exec(p);
  const double a[] = {3, -2, 250, 7};
  const double b[] = {5, 4, 10, 0.5};
  auto run = [&](DataType t, ReduceOp op, std::vector<double>& got) {
    const size_t e = size_of(t);
    std::vector<std::byte> in0(4 * e), in1(4 * e), out(4 * e), unused(4 * e);
    auto put = [&](std::vector<std::byte>& v, int i, double x) {
      switch (t) {
        case DataType::kFloat32: {
          float f = static_cast<float>(x);
          std::memcpy(&v[i * e], &f, e);
          break;
        }
        case DataType::kFloat64: std::memcpy(&v[i * e], &x, e); break;
        case DataType::kFloat16: {
          uint16_t h = float_to_half(static_cast<float>(x));
          std::memcpy(&v[i * e], &h, e);
          break;
        }
        case DataType::kBFloat16: {
          uint16_t h = float_to_bfloat16(static_cast<float>(x));
          std::memcpy(&v[i * e], &h, e);
          break;
        }
        case DataType::kInt32: {
          int32_t k = static_cast<int32_t>(x);
          std::memcpy(&v[i * e], &k, e);
          break;
        }
        case DataType::kInt64: {
          int64_t k = static_cast<int64_t>(x);
          std::memcpy(&v[i * e], &k, e);
          break;
        }
        case DataType::kUInt8: {
          uint8_t k = static_cast<uint8_t>(x);
          std::memcpy(&v[i * e], &k, e);
          break;
        }
      }
    };
    for (int i = 0; i < 4; ++i) {
      put(in0, i, !is_floating(t) ? std::max(0.0, std::floor(a[i])) : a[i]);
      put(in1, i, !is_floating(t) ? std::floor(b[i]) : b[i]);
    }
    ExecOptions o;
    o.dtype = t;
    o.op = op;
    const ExecResult r = exec.run({{in0.data(), unused.data()}, {in1.data(), out.data()}}, 4, o);
    ASSERT_TRUE(r.ok) << r.error;
    got.clear();
    for (int i = 0; i < 4; ++i) {
      double v = 0;
      switch (t) {
        case DataType::kFloat32: {
          float f;
          std::memcpy(&f, &out[i * e], e);
          v = f;
          break;
        }
        case DataType::kFloat64: std::memcpy(&v, &out[i * e], e); break;
        case DataType::kFloat16: {
          uint16_t h;
          std::memcpy(&h, &out[i * e], e);
          v = half_to_float(h);
          break;
        }
        case DataType::kBFloat16: {
          uint16_t h;
          std::memcpy(&h, &out[i * e], e);
          v = bfloat16_to_float(h);
          break;
        }
        case DataType::kInt32: {
          int32_t k;
          std::memcpy(&k, &out[i * e], e);
          v = k;
          break;
        }
        case DataType::kInt64: {
          int64_t k;
          std::memcpy(&k, &out[i * e], e);
          v = static_cast<double>(k);
          break;
        }
        case DataType::kUInt8: {
          uint8_t k;
          std::memcpy(&k, &out[i * e], e);
          v = k;
          break;
        }
      }
      got.push_back(v);
    }
  };
  std::vector<double> got;
  run(DataType::kFloat32, ReduceOp::kSum, got);
  EXPECT_EQ(got, (std::vector<double>{8, 2, 260, 7.5}));
  run(DataType::kFloat64, ReduceOp::kProd, got);
  EXPECT_EQ(got, (std::vector<double>{15, -8, 2500, 3.5}));
  run(DataType::kFloat16, ReduceOp::kMin, got);
  EXPECT_EQ(got, (std::vector<double>{3, -2, 10, 0.5}));
  run(DataType::kBFloat16, ReduceOp::kMax, got);
  EXPECT_EQ(got, (std::vector<double>{5, 4, 250, 7}));
  run(DataType::kInt32, ReduceOp::kProd, got);
  EXPECT_EQ(got, (std::vector<double>{15, 0, 2500, 0}));
  run(DataType::kInt64, ReduceOp::kMin, got);
  EXPECT_EQ(got, (std::vector<double>{3, 0, 10, 0}));
  run(DataType::kUInt8, ReduceOp::kSum, got);  // 250 + 10 wraps to 4
  EXPECT_EQ(got, (std::vector<double>{8, 4, 4, 7}));
  run(DataType::kFloat16, ReduceOp::kSum, got);  // 250 + 10 = 260 exact in half
  EXPECT_EQ(got, (std::vector<double>{8, 2, 260, 7.5}));
}

// ---- broken programs: clean failures, no hang --------------------------------------------------

Program ring_allgather4() { return ring_program(CollectiveKind::kAllGather, 4); }

// (rank, tb, step) of the first step of `type` in the program.
std::tuple<int, int, int> find_step(const Program& p, StepType type) {
  for (const GpuProgram& g : p.gpus) {
    for (const Threadblock& tb : g.threadblocks) {
      for (size_t s = 0; s < tb.steps.size(); ++s) {
        if (tb.steps[s].type == type) return {g.rank, tb.id, static_cast<int>(s)};
      }
    }
  }
  return {-1, -1, -1};
}

HarnessResult run_checked(const Program& p, int64_t bytes = 4 * 64) {
  HarnessOptions o;
  o.check = true;
  o.iters = 0;
  o.exec.timeout_s = 10;
  const Collective c = make_collective(CollectiveKind::kAllGather, 4);
  o.collective = &c;
  return run_program(p, bytes, o);
}

TEST(CpuExecutorBroken, DeletedSendIsADeadlockNamingTheWaitingReceive) {
  Program p = ring_allgather4();
  auto [rank, tb, step] = find_step(p, StepType::kSend);
  ASSERT_GE(rank, 0);
  p.gpus[rank].threadblocks[tb].steps[step].type = StepType::kNop;  // the send is gone
  p.gpus[rank].threadblocks[tb].steps[step].count = 0;
  const HarnessResult r = run_checked(p);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.message.find("deadlock"), std::string::npos) << r.message;
  const int peer = (rank + 1) % 4;
  EXPECT_NE(r.message.find("waits to receive from rank " + std::to_string(rank)), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("gpu[" + std::to_string(peer) + "]"), std::string::npos) << r.message;
}

TEST(CpuExecutorBroken, DeletedReceiveLeavesAMessageNobodyReceived) {
  Program p = ring_allgather4();
  // Drop the last step of a receiving threadblock (nothing depends on a final step).
  for (GpuProgram& g : p.gpus) {
    for (Threadblock& tb : g.threadblocks) {
      if (!tb.steps.empty() && tb.steps.back().type == StepType::kRecv &&
          !tb.steps.back().has_dep) {
        tb.steps.pop_back();
        const HarnessResult r = run_checked(p);
        ASSERT_FALSE(r.ok);
        EXPECT_NE(r.message.find("that no step received"), std::string::npos) << r.message;
        return;
      }
    }
  }
  FAIL() << "no final receive found";
}

TEST(CpuExecutorBroken, WrongOffsetInRangeFailsTheCheck) {
  Program p = ring_allgather4();
  auto [rank, tb, step] = find_step(p, StepType::kRecvCopySend);
  if (rank < 0) std::tie(rank, tb, step) = find_step(p, StepType::kRecv);
  Step& s = p.gpus[rank].threadblocks[tb].steps[step];
  s.dst_offset = (s.dst_offset + 1) % 4;  // writes the wrong output chunk
  const HarnessResult r = run_checked(p);
  ASSERT_FALSE(r.ok);
  EXPECT_GT(r.mismatches, 0);
  EXPECT_NE(r.message.find("check failed"), std::string::npos) << r.message;
}

TEST(CpuExecutorBroken, OffsetOutOfRangeIsAUserErrorNamingTheStep) {
  Program p = ring_allgather4();
  auto [rank, tb, step] = find_step(p, StepType::kSend);
  p.gpus[rank].threadblocks[tb].steps[step].src_offset = 7;
  try {
    CpuExecutor exec(p);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.field(), "gpu[" + std::to_string(rank) + "]/tb[" + std::to_string(tb) + "]/step[" +
                             std::to_string(step) + "]");
    EXPECT_NE(std::string(e.what()).find("outside"), std::string::npos) << e.what();
  }
}

TEST(CpuExecutorBroken, ReceiveWithoutAnySenderIsAUserError) {
  Program p = ring_allgather4();
  p.gpus[0].threadblocks.push_back(
      make_tb(static_cast<int>(p.gpus[0].threadblocks.size()), -1, 2,
              {make_step(StepType::kRecv, Buffer::kInput, -1, Buffer::kOutput, 0)}, 5));
  EXPECT_THROW(CpuExecutor{p}, UserError);
}

TEST(CpuExecutorBroken, CountMismatchIsReported) {
  Program p = ring_allgather4();
  auto [rank, tb, step] = find_step(p, StepType::kSend);
  Step& s = p.gpus[rank].threadblocks[tb].steps[step];
  ASSERT_EQ(s.count, 1);
  s.src_offset = 0;
  s.count = 1;
  // The receiver of that send gets a count of 2 (in range for a 4-chunk output when possible).
  const int peer = p.gpus[rank].threadblocks[tb].send_peer;
  for (Threadblock& r : p.gpus[peer].threadblocks) {
    if (r.recv_peer != rank || r.channel != p.gpus[rank].threadblocks[tb].channel) continue;
    for (Step& rs : r.steps) {
      if (receives(rs.type)) {
        rs.count = 2;
        rs.dst_offset = std::min(rs.dst_offset, 2);
        rs.src_offset = rs.src_offset >= 0 ? std::min(rs.src_offset, 2) : rs.src_offset;
        break;
      }
    }
  }
  const HarnessResult r = run_checked(p);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.message.find("count mismatch"), std::string::npos) << r.message;
}

TEST(CpuExecutorBroken, DependencyOnItselfIsADeadlock) {
  Program p = ring_allgather4();
  Threadblock& tb = p.gpus[1].threadblocks[0];
  tb.steps[0].dep_tb = 0;
  tb.steps[0].dep_step = static_cast<int>(tb.steps.size()) - 1;
  const HarnessResult r = run_checked(p);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.message.find("waits for its dependency gpu[1]/tb[0]/step["), std::string::npos)
      << r.message;
}

TEST(CpuExecutorBroken, WallClockLimitStopsTheRun) {
  HarnessOptions o;
  o.iters = 1;
  o.exec.timeout_s = 0.0;  // already expired when the scheduler starts
  const HarnessResult r = run_program(ring_allgather4(), 4 * 64, o);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.message.find("timed out"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("gpu[0]/tb[0]/step[0]"), std::string::npos) << r.message;
}

TEST(CpuExecutorBroken, BadSizesAreUserErrors) {
  HarnessOptions o;
  EXPECT_THROW(run_program(ring_allgather4(), 6, o), UserError);  // not a multiple of 4 bytes
  o.inplace = true;
  EXPECT_THROW(run_program(ring_allgather4(), 16, o), UserError);  // out-of-place program
}

// ---- scale: many ranks and threadblocks on few workers ------------------------------------------

TEST(CpuExecutorScale, SixtyFourRankRingAllreduceOnTwoWorkers) {
  const Program p = ring_program(CollectiveKind::kAllReduce, 64);
  HarnessOptions o = checked(DataType::kFloat32);
  o.exec.workers = 2;
  o.exec.slices = 2;
  const HarnessResult r = run_program(p, 64 * 4 * 8, o);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.workers, 2);
}

TEST(CpuExecutorScale, HundredsOfThreadblocksDirectAlltoall) {
  const Topology t = topologies::make_builtin("fc:16");
  const Collective c = make_collective(CollectiveKind::kAllToAll, 16);
  compiler::CompileOptions co;
  const Program p = compiler::compile(synth::make_baseline(synth::BaselineKind::kDirect, c, t), co);
  size_t tbs = 0;
  for (const GpuProgram& g : p.gpus) tbs += g.threadblocks.size();
  EXPECT_GE(tbs, 200u);
  HarnessOptions o = checked(DataType::kInt64, ReduceOp::kSum);
  o.exec.workers = 2;
  o.collective = &c;
  const HarnessResult r = run_program(p, 16 * 8 * 5, o);
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(CpuExecutorScale, SixtyFourRanksWithHundredsOfThreadblocks) {
  // Recursive halving-doubling on a 64-rank hypercube: every rank talks to 6 peers.
  const Topology t = topologies::make_builtin("hypercube:6");
  const Collective c = make_collective(CollectiveKind::kAllReduce, 64);
  const Program p = compiler::compile(synth::make_baseline(synth::BaselineKind::kRhd, c, t));
  size_t tbs = 0;
  for (const GpuProgram& g : p.gpus) tbs += g.threadblocks.size();
  EXPECT_GE(tbs, 300u);
  HarnessOptions o = checked(DataType::kInt32, ReduceOp::kSum);
  o.exec.workers = 2;
  o.exec.slices = 2;
  o.collective = &c;
  const HarnessResult r = run_program(p, 64 * 4 * 4, o);
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(CpuExecutor, InPlaceAllgatherAndReducescatter) {
  for (CollectiveKind kind :
       {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter, CollectiveKind::kAllReduce}) {
    const Program p = ring_program(kind, 4, /*inplace=*/true);
    HarnessOptions o = checked(DataType::kFloat64);
    o.inplace = true;
    o.exec.slices = 3;
    const int64_t bytes = (kind == CollectiveKind::kAllGather ? 1 : 4) * 8 * 30;
    const HarnessResult r = run_program(p, bytes, o);
    EXPECT_TRUE(r.ok) << to_string(kind) << ": " << r.message;
  }
}

}  // namespace
}  // namespace ccsynth::runtime
