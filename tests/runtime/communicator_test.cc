// The Communicator library API: dispatch by collective, size range and in-place-ness to loaded
// programs, fallback to the built-in ring and to the direct host implementation, and results
// checked against directly computed references (int32 sums: exact).

#include "ccsynth/runtime/communicator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/error.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/plan/communicator.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/topologies/library.h"

namespace ccsynth::runtime {
namespace {

constexpr int kRanks = 4;

Program ring(CollectiveKind kind, const std::string& name, bool inplace = false) {
  compiler::CompileOptions o;
  o.name = name;
  o.inplace = inplace;
  return compiler::compile(
      synth::make_baseline(synth::BaselineKind::kRing, make_collective(kind, kRanks),
                           topologies::make_builtin("ring:4")),
      o);
}

// Per-rank int32 buffers with value(rank, i) = 100 * rank + i + 1.
struct Data {
  std::vector<std::vector<int32_t>> send, recv;
  Data(size_t send_elems, size_t recv_elems) {
    for (int r = 0; r < kRanks; ++r) {
      send.emplace_back(send_elems);
      recv.emplace_back(recv_elems, -7);
      for (size_t i = 0; i < send_elems; ++i) send[r][i] = static_cast<int32_t>(100 * r + i + 1);
    }
  }
  std::vector<const void*> s() const {
    std::vector<const void*> out;
    for (const auto& v : send) out.push_back(v.data());
    return out;
  }
  std::vector<void*> d() {
    std::vector<void*> out;
    for (auto& v : recv) out.push_back(v.data());
    return out;
  }
};

void expect_allreduce(const Data& data, size_t count) {
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < count; ++i) {
      int32_t want = 0;
      for (int q = 0; q < kRanks; ++q) want += data.send[q][i];
      ASSERT_EQ(data.recv[r][i], want) << "rank " << r << " element " << i;
    }
  }
}

TEST(Communicator, DispatchesBySizeRangeAndFallsBack) {
  Communicator comm = plan::make_communicator(kRanks);
  const int small = comm.load(ring(CollectiveKind::kAllReduce, "small ring"), 0, 1024);
  EXPECT_EQ(small, 0);
  for (size_t count : {size_t{8}, size_t{256}, size_t{1024}, size_t{6}}) {
    Data data(count, count);
    comm.allreduce(data.s(), data.d(), count, DataType::kInt32, ReduceOp::kSum);
    expect_allreduce(data, count);
    const int64_t bytes = static_cast<int64_t>(count * 4);
    if (bytes <= 1024 && count % kRanks == 0) {
      EXPECT_EQ(comm.last_call().algorithm, "small ring");
      EXPECT_EQ(comm.last_call().program, 0);
    } else if (count % kRanks == 0) {
      EXPECT_EQ(comm.last_call().algorithm, "builtin ring") << count;
      EXPECT_TRUE(comm.last_call().exec.ok);
    } else {
      EXPECT_EQ(comm.last_call().algorithm, "builtin direct") << count;  // 6 is not 4 chunks
    }
  }
}

TEST(Communicator, InPlaceCallsUseInPlacePrograms) {
  Communicator comm = plan::make_communicator(kRanks);
  comm.load(ring(CollectiveKind::kAllReduce, "out-of-place"));
  comm.load(ring(CollectiveKind::kAllReduce, "in-place", true));
  Data data(64, 0);
  const Data original = data;
  std::vector<void*> buffers;
  for (auto& v : data.send) buffers.push_back(v.data());
  comm.allreduce(data.s(), buffers, 64, DataType::kInt32, ReduceOp::kSum);
  EXPECT_TRUE(comm.last_call().inplace);
  EXPECT_EQ(comm.last_call().algorithm, "in-place");
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < 64; ++i) {
      int32_t want = 0;
      for (int q = 0; q < kRanks; ++q) want += original.send[q][i];
      ASSERT_EQ(data.send[r][i], want);
    }
  }
}

TEST(Communicator, EveryCollectiveThroughTheFallbacks) {
  Communicator comm = plan::make_communicator(kRanks);
  for (size_t count : {size_t{4}, size_t{5}}) {  // ring-divisible and not
    {
      Data data(count, kRanks * count);
      comm.allgather(data.s(), data.d(), count, DataType::kInt32);
      for (int r = 0; r < kRanks; ++r)
        for (int q = 0; q < kRanks; ++q)
          for (size_t i = 0; i < count; ++i)
            ASSERT_EQ(data.recv[r][q * count + i], data.send[q][i]);
    }
    {
      Data data(kRanks * count, count);
      comm.reducescatter(data.s(), data.d(), count, DataType::kInt32, ReduceOp::kMax);
      for (int r = 0; r < kRanks; ++r)
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(data.recv[r][i], data.send[kRanks - 1][r * count + i]);
    }
    {
      Data data(kRanks * count, kRanks * count);
      comm.alltoall(data.s(), data.d(), count, DataType::kInt32);
      for (int r = 0; r < kRanks; ++r)
        for (int q = 0; q < kRanks; ++q)
          for (size_t i = 0; i < count; ++i)
            ASSERT_EQ(data.recv[r][q * count + i], data.send[q][r * count + i]);
    }
    {
      Data data(count, count);
      comm.broadcast(data.s(), data.d(), count, DataType::kInt32, 2);
      for (int r = 0; r < kRanks; ++r)
        for (size_t i = 0; i < count; ++i) ASSERT_EQ(data.recv[r][i], data.send[2][i]);
    }
    {
      Data data(count, count);
      comm.reduce(data.s(), data.d(), count, DataType::kInt32, ReduceOp::kSum, 1);
      for (size_t i = 0; i < count; ++i) {
        int32_t want = 0;
        for (int q = 0; q < kRanks; ++q) want += data.send[q][i];
        ASSERT_EQ(data.recv[1][i], want);
      }
    }
  }
}

TEST(Communicator, InPlaceAllgatherLayout) {
  Communicator comm = plan::make_communicator(kRanks);
  const size_t count = 8;
  std::vector<std::vector<int32_t>> buf(kRanks, std::vector<int32_t>(kRanks * count, 0));
  std::vector<const void*> send;
  std::vector<void*> recv;
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < count; ++i) buf[r][r * count + i] = static_cast<int32_t>(10 * r + i);
    send.push_back(buf[r].data() + r * count);
    recv.push_back(buf[r].data());
  }
  comm.allgather(send, recv, count, DataType::kInt32);
  EXPECT_TRUE(comm.last_call().inplace);
  for (int r = 0; r < kRanks; ++r)
    for (int q = 0; q < kRanks; ++q)
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(buf[r][q * count + i], static_cast<int32_t>(10 * q + i));
}

TEST(Communicator, XmlRoundTripLoadsAndRuns) {
  const Program p = ring(CollectiveKind::kAllGather, "xml ring");
  const Program back = formats::read_msccl_xml(formats::write_msccl_xml(p), "ring.xml");
  Communicator comm = plan::make_communicator(kRanks);
  comm.set_fallback(false);
  comm.load(back);
  Data data(16, kRanks * 16);
  comm.allgather(data.s(), data.d(), 16, DataType::kInt32);
  EXPECT_EQ(comm.last_call().algorithm, "xml ring");
  for (int r = 0; r < kRanks; ++r)
    for (int q = 0; q < kRanks; ++q)
      for (size_t i = 0; i < 16; ++i) ASSERT_EQ(data.recv[r][q * 16 + i], data.send[q][i]);
  // Without a fallback, an unmatched call is a clear error.
  EXPECT_THROW(comm.allreduce(data.s(), data.d(), 16, DataType::kInt32, ReduceOp::kSum), UserError);
}

TEST(Communicator, RootedCallsIgnoreNullBuffersOfNonRoots) {
  Communicator comm = plan::make_communicator(kRanks);
  for (size_t count : {size_t{8}, size_t{7}}) {
    Data data(count, count);
    std::vector<const void*> send(kRanks, nullptr);
    send[3] = data.send[3].data();
    comm.broadcast(send, data.d(), count, DataType::kInt32, 3);
    // A broadcast has one chunk per rank (C -> C), so the built-in program takes any count.
    EXPECT_NE(comm.last_call().algorithm, "builtin direct");
    for (int r = 0; r < kRanks; ++r)
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(data.recv[r][i], data.send[3][i]);
    std::vector<void*> recv(kRanks, nullptr);
    recv[0] = data.recv[0].data();
    comm.reduce(data.s(), recv, count, DataType::kInt32, ReduceOp::kMin, 0);
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(data.recv[0][i], data.send[0][i]);
  }
}

TEST(Communicator, WithoutBuiltinProgramsRunsTheDirectFallback) {
  Communicator comm(kRanks);  // the runtime alone: no compiled built-in programs
  Data data(8, 8);
  comm.allreduce(data.s(), data.d(), 8, DataType::kInt32, ReduceOp::kSum);
  EXPECT_EQ(comm.last_call().algorithm, "builtin direct");
  expect_allreduce(data, 8);
  comm.set_builtin_programs(plan::builtin_programs());
  comm.allreduce(data.s(), data.d(), 8, DataType::kInt32, ReduceOp::kSum);
  EXPECT_EQ(comm.last_call().algorithm, "builtin ring");
  expect_allreduce(data, 8);
}

TEST(Communicator, LoadsXmlFiles) {
  const std::string path = ::testing::TempDir() + "/communicator_ring.xml";
  {
    std::ofstream out(path);
    out << formats::write_msccl_xml(ring(CollectiveKind::kAllGather, "file ring"));
  }
  Communicator comm = plan::make_communicator(kRanks);
  EXPECT_EQ(plan::load_xml_file(comm, path), 0);
  Data data(16, kRanks * 16);
  comm.allgather(data.s(), data.d(), 16, DataType::kInt32);
  EXPECT_EQ(comm.last_call().algorithm, "file ring");
  EXPECT_THROW(plan::load_xml_file(comm, path + ".missing"), UserError);
}

TEST(Communicator, Errors) {
  Communicator comm = plan::make_communicator(kRanks);
  Program other = ring(CollectiveKind::kAllReduce, "x");
  other.num_ranks = 3;
  EXPECT_THROW(comm.load(other), UserError);
  Data data(4, 4);
  std::vector<const void*> few = data.s();
  few.pop_back();
  EXPECT_THROW(comm.allreduce(few, data.d(), 4, DataType::kInt32, ReduceOp::kSum), UserError);
  EXPECT_THROW(comm.broadcast(data.s(), data.d(), 4, DataType::kInt32, 9), UserError);
  EXPECT_THROW(Communicator(0), UserError);
}

}  // namespace
}  // namespace ccsynth::runtime
