#include "ccsynth/mpi/communicator.h"

#include <cstring>
#include <string>
#include <vector>

#include "ccsynth/core/error.h"
#include "ccsynth/mpi/mpi_executor.h"
#include "ccsynth/runtime/kernels.h"

namespace ccsynth::mpi {

namespace {

using runtime::DataType;
using runtime::ReduceOp;

// float16 and bfloat16 have no MPI type: two-byte contiguous types, created once per process.
struct HalfTypes {
  MPI_Datatype float16 = MPI_DATATYPE_NULL;
  MPI_Datatype bfloat16 = MPI_DATATYPE_NULL;
};

const HalfTypes& half_types() {
  static const HalfTypes types = [] {
    HalfTypes t;
    MPI_Type_contiguous(2, MPI_BYTE, &t.float16);
    MPI_Type_commit(&t.float16);
    MPI_Type_contiguous(2, MPI_BYTE, &t.bfloat16);
    MPI_Type_commit(&t.bfloat16);
    return t;
  }();
  return types;
}

MPI_Datatype mpi_type(DataType type) {
  switch (type) {
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
    case DataType::kFloat16: return half_types().float16;
    case DataType::kBFloat16: return half_types().bfloat16;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kUInt8: return MPI_UINT8_T;
  }
  return MPI_DATATYPE_NULL;
}

// The MPI_Op body for the half types: inout = in (op) inout with the runtime's kernel.
template <ReduceOp kOp>
void half_reduction(void* in, void* inout, int* len, MPI_Datatype* type) {
  const DataType t = *type == half_types().bfloat16 ? DataType::kBFloat16 : DataType::kFloat16;
  runtime::reduce_elements(t, kOp, inout, in, inout, static_cast<size_t>(*len));
}

MPI_Op half_op(ReduceOp op) {
  static const std::vector<MPI_Op> ops = [] {
    std::vector<MPI_Op> out(4, MPI_OP_NULL);
    MPI_Op_create(&half_reduction<ReduceOp::kSum>, 1, &out[0]);
    MPI_Op_create(&half_reduction<ReduceOp::kProd>, 1, &out[1]);
    MPI_Op_create(&half_reduction<ReduceOp::kMin>, 1, &out[2]);
    MPI_Op_create(&half_reduction<ReduceOp::kMax>, 1, &out[3]);
    return out;
  }();
  return ops[static_cast<int>(op)];
}

MPI_Op mpi_op(DataType type, ReduceOp op) {
  if (type == DataType::kFloat16 || type == DataType::kBFloat16) return half_op(op);
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kProd: return MPI_PROD;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
  }
  return MPI_OP_NULL;
}

// A loaded program.
struct Loaded {
  std::unique_ptr<MpiExecutor> exec;
  runtime::ProgramSelector selector;
};

}  // namespace

struct Communicator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  runtime::ExecOptions exec;
  std::vector<Loaded> programs;
};

Communicator::Communicator(MPI_Comm comm, runtime::ExecOptions exec)
    : impl_(std::make_unique<Impl>()) {
  MPI_Comm_dup(comm, &impl_->comm);
  MPI_Comm_rank(impl_->comm, &rank_);
  MPI_Comm_size(impl_->comm, &num_ranks_);
  impl_->exec = exec;
}

Communicator::~Communicator() {
  bool failed = false;
  for (const Loaded& p : impl_->programs) failed = failed || p.exec->failed();
  if (!failed) MPI_Comm_free(&impl_->comm);
}

int Communicator::load(Program program) {
  const int64_t min_bytes = program.min_bytes;
  const int64_t max_bytes = program.max_bytes;
  return load(std::move(program), min_bytes, max_bytes);
}

int Communicator::load(Program program, int64_t min_bytes, int64_t max_bytes) {
  if (program.num_ranks != num_ranks_) {
    throw UserError(program.name, "ngpus",
                    "the program is for " + std::to_string(program.num_ranks) +
                        " ranks, the MPI communicator has " + std::to_string(num_ranks_) +
                        " processes");
  }
  Loaded loaded;
  loaded.selector = runtime::ProgramSelector::of(program, min_bytes, max_bytes);
  loaded.exec = std::make_unique<MpiExecutor>(std::move(program), impl_->comm);
  impl_->programs.push_back(std::move(loaded));
  return static_cast<int>(impl_->programs.size()) - 1;
}

int Communicator::num_programs() const { return static_cast<int>(impl_->programs.size()); }

void Communicator::allreduce(const void* send, void* recv, size_t count, DataType dtype,
                             ReduceOp op) {
  call(CollectiveKind::kAllReduce, send, recv, count, dtype, op, 0);
}
void Communicator::allgather(const void* send, void* recv, size_t count, DataType dtype) {
  call(CollectiveKind::kAllGather, send, recv, count, dtype, ReduceOp::kSum, 0);
}
void Communicator::reducescatter(const void* send, void* recv, size_t count, DataType dtype,
                                 ReduceOp op) {
  call(CollectiveKind::kReduceScatter, send, recv, count, dtype, op, 0);
}
void Communicator::alltoall(const void* send, void* recv, size_t count, DataType dtype) {
  call(CollectiveKind::kAllToAll, send, recv, count, dtype, ReduceOp::kSum, 0);
}
void Communicator::broadcast(const void* send, void* recv, size_t count, DataType dtype, int root) {
  call(CollectiveKind::kBroadcast, send, recv, count, dtype, ReduceOp::kSum, root);
}
void Communicator::reduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op,
                          int root) {
  call(CollectiveKind::kReduce, send, recv, count, dtype, op, root);
}

void Communicator::call(CollectiveKind kind, const void* send, void* recv, size_t count,
                        DataType dtype, ReduceOp op, int root) {
  if (root < 0 || root >= num_ranks_) throw UserError("", "root", "root out of range");
  const size_t esize = runtime::size_of(dtype);
  const int64_t bytes = runtime::call_input_bytes(kind, count, esize, num_ranks_);
  const bool inplace = runtime::is_inplace_call(kind, send, recv, rank_, count * esize);
  last_ = runtime::CallInfo{};
  last_.inplace = inplace;
  last_.bytes = bytes;
  if (count == 0) {
    last_.algorithm = "none (empty call)";
    return;
  }
  for (size_t i = 0; i < impl_->programs.size(); ++i) {
    Loaded& p = impl_->programs[i];
    if (!p.selector.matches(kind, root, inplace, bytes, esize)) continue;
    // Buffers NCCL ignores (broadcast's non-root send, reduce's non-root recv) may be null:
    // zeroed stand-ins keep programs that touch them in bounds.
    const size_t send_bytes = static_cast<size_t>(bytes);
    const size_t recv_bytes =
        count * esize *
        (kind == CollectiveKind::kAllGather || kind == CollectiveKind::kAllToAll ? num_ranks_ : 1);
    std::vector<std::byte> send_stand_in(send == nullptr ? send_bytes : 0);
    std::vector<std::byte> recv_stand_in(recv == nullptr ? recv_bytes : 0);
    std::vector<runtime::RankBuffers> views(num_ranks_);
    views[rank_] = {send == nullptr ? send_stand_in.data() : const_cast<void*>(send),
                    recv == nullptr ? recv_stand_in.data() : recv};
    runtime::ExecOptions options = impl_->exec;
    options.dtype = dtype;
    options.op = op;
    const std::string& name = p.exec->program().name;
    last_.program = static_cast<int>(i);
    last_.algorithm = name;
    last_.exec =
        p.exec->run(views, bytes / static_cast<int64_t>(esize) / p.selector.input_chunks, options);
    if (!last_.exec.ok) throw UserError(name, "execution", last_.exec.error);
    return;
  }
  if (!fallback_) {
    throw UserError("", "collective",
                    "no loaded program matches " + to_string(kind) + " of " +
                        std::to_string(bytes) + " bytes per rank" + (inplace ? " (in-place)" : ""));
  }
  call_mpi(kind, send, recv, count, dtype, op, root, inplace);
}

void Communicator::call_mpi(CollectiveKind kind, const void* send, void* recv, size_t count,
                            DataType dtype, ReduceOp op, int root, bool inplace) {
  MPI_Comm comm = impl_->comm;
  const MPI_Datatype type = mpi_type(dtype);
  const int n = static_cast<int>(count);
  if (static_cast<size_t>(n) != count) {
    throw UserError("", "count", "more than 2^31 elements per call is not supported over MPI");
  }
  const void* source = inplace ? MPI_IN_PLACE : send;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      last_.algorithm = "MPI_Allreduce";
      MPI_Allreduce(source, recv, n, type, mpi_op(dtype, op), comm);
      return;
    case CollectiveKind::kAllGather:
      last_.algorithm = "MPI_Allgather";
      MPI_Allgather(source, n, type, recv, n, type, comm);
      return;
    case CollectiveKind::kReduceScatter: {
      last_.algorithm = "MPI_Reduce_scatter_block";
      if (!inplace) {
        MPI_Reduce_scatter_block(send, recv, n, type, mpi_op(dtype, op), comm);
        return;
      }
      // NCCL keeps the result at recv = send + rank * count; MPI_IN_PLACE puts it at send.
      void* base = const_cast<void*>(send);
      MPI_Reduce_scatter_block(MPI_IN_PLACE, base, n, type, mpi_op(dtype, op), comm);
      std::memmove(recv, base, count * runtime::size_of(dtype));
      return;
    }
    case CollectiveKind::kAllToAll:
      last_.algorithm = "MPI_Alltoall";
      MPI_Alltoall(source, n, type, recv, n, type, comm);
      return;
    case CollectiveKind::kBroadcast:
      last_.algorithm = "MPI_Bcast";
      if (rank_ == root && !inplace) std::memcpy(recv, send, count * runtime::size_of(dtype));
      MPI_Bcast(recv, n, type, root, comm);
      return;
    case CollectiveKind::kReduce:
      last_.algorithm = "MPI_Reduce";
      MPI_Reduce(inplace && rank_ == root ? MPI_IN_PLACE : send, recv, n, type, mpi_op(dtype, op),
                 root, comm);
      return;
    default: throw UserError("", "collective", "no MPI collective for " + to_string(kind));
  }
}

}  // namespace ccsynth::mpi
