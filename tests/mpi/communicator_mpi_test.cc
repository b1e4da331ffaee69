// The Communicator over MPI: loaded programs are chosen by collective, size range and
// in-place-ness; other calls run MPI's own collectives (also for float16 via an MPI_Op made from
// the runtime's kernels); the results are compared with values computed here.

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "ccsynth/core/error.h"
#include "ccsynth/mpi/communicator.h"
#include "ccsynth/plan/communicator.h"

namespace ccsynth::mpi {
namespace {

using runtime::DataType;
using runtime::ReduceOp;

struct World {
  int rank = 0;
  int size = 1;
  World() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
};

// Rank r's element i: distinct small integers, exact in float32 and float16 sums.
int32_t value(int r, size_t i) { return static_cast<int32_t>((r + 1) * 3 + i % 5); }

std::vector<int32_t> inputs(int r, size_t n) {
  std::vector<int32_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = value(r, i);
  return out;
}

int32_t sum_over_ranks(int size, size_t i) {
  int32_t s = 0;
  for (int r = 0; r < size; ++r) s += value(r, i);
  return s;
}

Program builtin(CollectiveKind kind, int ranks, bool inplace) {
  std::optional<Program> p = plan::builtin_programs()(kind, ranks, 0, inplace);
  if (!p) throw UserError("", "test", "no built-in program");
  return *p;
}

TEST(MpiCommunicator, LoadedProgramInItsSizeRangeElseMpiAllreduce) {
  const World w;
  Communicator comm(MPI_COMM_WORLD);
  const Program ring = builtin(CollectiveKind::kAllReduce, w.size, false);
  EXPECT_EQ(comm.load(ring, 0, 64 * 1024), 0);
  for (size_t count : {size_t{1024} * w.size, size_t{64} * 1024}) {
    const std::vector<int32_t> send = inputs(w.rank, count);
    std::vector<int32_t> recv(count, -1);
    comm.allreduce(send.data(), recv.data(), count, DataType::kInt32, ReduceOp::kSum);
    const bool in_range = count * 4 <= 64 * 1024;
    EXPECT_EQ(comm.last_call().algorithm, in_range ? ring.name : "MPI_Allreduce");
    EXPECT_EQ(comm.last_call().program, in_range ? 0 : -1);
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(recv[i], sum_over_ranks(w.size, i)) << i;
  }
}

TEST(MpiCommunicator, InPlaceProgramAndFallbacks) {
  const World w;
  Communicator comm(MPI_COMM_WORLD);
  comm.load(builtin(CollectiveKind::kAllGather, w.size, true));
  const size_t count = 96;
  // In-place allgather: the loaded in-place program.
  std::vector<int32_t> buffer(count * w.size, -1);
  const std::vector<int32_t> mine = inputs(w.rank, count);
  std::copy(mine.begin(), mine.end(), buffer.begin() + w.rank * count);
  comm.allgather(buffer.data() + w.rank * count, buffer.data(), count, DataType::kInt32);
  EXPECT_TRUE(comm.last_call().inplace);
  EXPECT_EQ(comm.last_call().program, 0);
  for (int r = 0; r < w.size; ++r) {
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(buffer[r * count + i], value(r, i));
  }
  // Out-of-place allgather: no program, MPI_Allgather.
  std::vector<int32_t> gathered(count * w.size, -1);
  comm.allgather(mine.data(), gathered.data(), count, DataType::kInt32);
  EXPECT_EQ(comm.last_call().algorithm, "MPI_Allgather");
  EXPECT_EQ(gathered, buffer);
  // In-place reducescatter: NCCL keeps rank r's block at send + r * count.
  std::vector<int32_t> blocks(count * w.size);
  for (int b = 0; b < w.size; ++b) {
    for (size_t i = 0; i < count; ++i) blocks[b * count + i] = value(w.rank, b * count + i);
  }
  comm.reducescatter(blocks.data(), blocks.data() + w.rank * count, count, DataType::kInt32,
                     ReduceOp::kSum);
  EXPECT_EQ(comm.last_call().algorithm, "MPI_Reduce_scatter_block");
  EXPECT_TRUE(comm.last_call().inplace);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(blocks[w.rank * count + i], sum_over_ranks(w.size, w.rank * count + i));
  }
  // Alltoall: block q of rank r goes to block r of rank q.
  std::vector<int32_t> out(count * w.size);
  std::vector<int32_t> in(count * w.size);
  for (size_t i = 0; i < in.size(); ++i) in[i] = value(w.rank, i);
  comm.alltoall(in.data(), out.data(), count, DataType::kInt32);
  EXPECT_EQ(comm.last_call().algorithm, "MPI_Alltoall");
  for (int r = 0; r < w.size; ++r) {
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[r * count + i], value(r, w.rank * count + i));
  }
}

TEST(MpiCommunicator, RootedFallbacksIgnoreNullBuffers) {
  const World w;
  Communicator comm(MPI_COMM_WORLD);
  const int root = w.size - 1;
  const size_t count = 50;
  const std::vector<int32_t> mine = inputs(w.rank, count);
  std::vector<int32_t> recv(count, -1);
  comm.broadcast(w.rank == root ? mine.data() : nullptr, recv.data(), count, DataType::kInt32,
                 root);
  EXPECT_EQ(comm.last_call().algorithm, "MPI_Bcast");
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(recv[i], value(root, i));
  std::vector<int32_t> reduced(count, -1);
  comm.reduce(mine.data(), w.rank == root ? reduced.data() : nullptr, count, DataType::kInt32,
              ReduceOp::kMax, root);
  EXPECT_EQ(comm.last_call().algorithm, "MPI_Reduce");
  if (w.rank == root) {
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(reduced[i], value(w.size - 1, i));
  }
}

// float16 has no MPI type: the fallback reduces with the runtime's kernel as an MPI_Op.
TEST(MpiCommunicator, Float16FallbackUsesTheRuntimeKernel) {
  const World w;
  Communicator comm(MPI_COMM_WORLD);
  const size_t count = 40;
  std::vector<uint16_t> send(count);
  for (size_t i = 0; i < count; ++i)
    send[i] = runtime::float_to_half(static_cast<float>(value(w.rank, i)));
  std::vector<uint16_t> recv(count);
  comm.allreduce(send.data(), recv.data(), count, DataType::kFloat16, ReduceOp::kSum);
  EXPECT_EQ(comm.last_call().algorithm, "MPI_Allreduce");
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(runtime::half_to_float(recv[i]), static_cast<float>(sum_over_ranks(w.size, i)));
  }
}

TEST(MpiCommunicator, BadProgramsAndUnmatchedCallsAreErrors) {
  const World w;
  Communicator comm(MPI_COMM_WORLD);
  // A program for twice the ranks: every process refuses it alike.
  try {
    comm.load(builtin(CollectiveKind::kAllReduce, 2 * w.size, false));
    ADD_FAILURE() << "loaded a program of the wrong size";
  } catch (const UserError& e) {
    EXPECT_EQ(e.field(), "ngpus");
    EXPECT_NE(std::string(e.what()).find(std::to_string(w.size) + " processes"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(comm.num_programs(), 0);
  comm.set_fallback(false);
  std::vector<float> buffer(8, 1.0f);
  EXPECT_THROW(comm.allreduce(buffer.data(), buffer.data(), buffer.size(), DataType::kFloat32,
                              ReduceOp::kSum),
               UserError);
}

}  // namespace
}  // namespace ccsynth::mpi
