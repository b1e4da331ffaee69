#include "ccsynth/runtime/communicator.h"

#include <cstring>
#include <map>
#include <optional>
#include <tuple>

#include "ccsynth/core/error.h"
#include "ccsynth/runtime/kernels.h"

namespace ccsynth::runtime {

namespace {

// A loaded program with what its selection needs.
struct Loaded {
  std::unique_ptr<CpuExecutor> exec;
  ProgramSelector selector;
};

// A compiled built-in fallback for (kind, root, in-place); exec is null when none applies.
struct Builtin {
  std::unique_ptr<CpuExecutor> exec;
  std::string name;
  int input_chunks = 1;
};

const std::byte* bytes_of(const void* p) { return static_cast<const std::byte*>(p); }

}  // namespace

ProgramSelector ProgramSelector::of(const Program& program, int64_t min_bytes, int64_t max_bytes) {
  if (min_bytes < 0 || max_bytes < 0 || (max_bytes > 0 && max_bytes < min_bytes)) {
    throw UserError(program.name, "minBytes/maxBytes", "invalid size range");
  }
  ProgramSelector s;
  s.input_chunks = collective_of(program).input_chunks;  // UserError for custom
  s.kind = program.collective;
  s.root = program.root;
  s.inplace = program.inplace;
  s.outofplace = program.outofplace;
  s.min_bytes = min_bytes;
  s.max_bytes = max_bytes;
  return s;
}

bool ProgramSelector::matches(CollectiveKind call_kind, int call_root, bool call_inplace,
                              int64_t bytes, size_t elem_bytes) const {
  if (kind != call_kind || (is_rooted(call_kind) && root != call_root)) return false;
  if (call_inplace ? !inplace : !outofplace) return false;
  if (bytes < min_bytes || (max_bytes > 0 && bytes > max_bytes)) return false;
  return bytes % (static_cast<int64_t>(elem_bytes) * input_chunks) == 0;
}

bool is_rooted(CollectiveKind kind) {
  return kind == CollectiveKind::kBroadcast || kind == CollectiveKind::kReduce ||
         kind == CollectiveKind::kGather || kind == CollectiveKind::kScatter;
}

int64_t call_input_bytes(CollectiveKind kind, size_t count, size_t elem_bytes, int num_ranks) {
  const bool per_peer = kind == CollectiveKind::kReduceScatter || kind == CollectiveKind::kAllToAll;
  return static_cast<int64_t>(count * elem_bytes * (per_peer ? num_ranks : 1));
}

bool is_inplace_call(CollectiveKind kind, const void* send, const void* recv, int rank,
                     size_t block_bytes) {
  if (send == nullptr || recv == nullptr) return false;
  const std::byte* s = bytes_of(send);
  const std::byte* d = bytes_of(recv);
  if (kind == CollectiveKind::kAllGather) return s == d + rank * block_bytes;
  if (kind == CollectiveKind::kReduceScatter) return d == s + rank * block_bytes;
  return s == d;
}

struct Communicator::Impl {
  std::vector<Loaded> programs;
  std::map<std::tuple<CollectiveKind, int, bool>, Builtin> builtins;
  ExecOptions exec;

  BuiltinPrograms make_builtin;

  // The built-in program for (kind, root, in-place), made once by `make_builtin`.
  Builtin& builtin(int num_ranks, CollectiveKind kind, int root, bool inplace) {
    auto [it, inserted] = builtins.try_emplace(std::make_tuple(kind, root, inplace));
    if (!inserted || num_ranks < 2 || !make_builtin) return it->second;
    std::optional<Program> program = make_builtin(kind, num_ranks, root, inplace);
    if (!program) return it->second;
    it->second.name = program->name;
    it->second.input_chunks = collective_of(*program).input_chunks;
    it->second.exec = std::make_unique<CpuExecutor>(std::move(*program));
    return it->second;
  }
};

Communicator::Communicator(int num_ranks, ExecOptions exec)
    : num_ranks_(num_ranks), impl_(std::make_unique<Impl>()) {
  if (num_ranks < 1) throw UserError("", "num_ranks", "a communicator needs at least one rank");
  impl_->exec = exec;
}

Communicator::~Communicator() = default;
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;

int Communicator::load(Program program) {
  const int64_t min_bytes = program.min_bytes;
  const int64_t max_bytes = program.max_bytes;
  return load(std::move(program), min_bytes, max_bytes);
}

int Communicator::load(Program program, int64_t min_bytes, int64_t max_bytes) {
  if (program.num_ranks != num_ranks_) {
    throw UserError(program.name, "ngpus",
                    "the program is for " + std::to_string(program.num_ranks) +
                        " ranks, the communicator has " + std::to_string(num_ranks_));
  }
  Loaded loaded;
  loaded.selector = ProgramSelector::of(program, min_bytes, max_bytes);
  loaded.exec = std::make_unique<CpuExecutor>(std::move(program));
  impl_->programs.push_back(std::move(loaded));
  return static_cast<int>(impl_->programs.size()) - 1;
}

void Communicator::set_builtin_programs(BuiltinPrograms make) {
  impl_->make_builtin = std::move(make);
  impl_->builtins.clear();
}

int Communicator::num_programs() const { return static_cast<int>(impl_->programs.size()); }

void Communicator::allreduce(const std::vector<const void*>& send, const std::vector<void*>& recv,
                             size_t count, DataType dtype, ReduceOp op) {
  call(CollectiveKind::kAllReduce, send, recv, count, dtype, op, 0);
}
void Communicator::allgather(const std::vector<const void*>& send, const std::vector<void*>& recv,
                             size_t count, DataType dtype) {
  call(CollectiveKind::kAllGather, send, recv, count, dtype, ReduceOp::kSum, 0);
}
void Communicator::reducescatter(const std::vector<const void*>& send,
                                 const std::vector<void*>& recv, size_t count, DataType dtype,
                                 ReduceOp op) {
  call(CollectiveKind::kReduceScatter, send, recv, count, dtype, op, 0);
}
void Communicator::alltoall(const std::vector<const void*>& send, const std::vector<void*>& recv,
                            size_t count, DataType dtype) {
  call(CollectiveKind::kAllToAll, send, recv, count, dtype, ReduceOp::kSum, 0);
}
void Communicator::broadcast(const std::vector<const void*>& send, const std::vector<void*>& recv,
                             size_t count, DataType dtype, int root) {
  call(CollectiveKind::kBroadcast, send, recv, count, dtype, ReduceOp::kSum, root);
}
void Communicator::reduce(const std::vector<const void*>& send, const std::vector<void*>& recv,
                          size_t count, DataType dtype, ReduceOp op, int root) {
  call(CollectiveKind::kReduce, send, recv, count, dtype, op, root);
}

namespace {

// NCCL's in-place convention per collective (see communicator.h). Ranks passing a null pointer
// (unused buffers of rooted collectives) do not vote.
bool detect_inplace(CollectiveKind kind, const std::vector<const void*>& send,
                    const std::vector<void*>& recv, size_t block_bytes) {
  int yes = 0;
  int no = 0;
  for (size_t r = 0; r < send.size(); ++r) {
    if (send[r] == nullptr || recv[r] == nullptr) continue;
    (is_inplace_call(kind, send[r], recv[r], static_cast<int>(r), block_bytes) ? yes : no)++;
  }
  if (yes > 0 && no > 0) {
    throw UserError("", "recv", "some ranks call in-place and others out-of-place");
  }
  return yes > 0;
}

// The direct host fallback: computes the collective straight from the buffers (any count).
void run_direct(CollectiveKind kind, const std::vector<const void*>& send,
                const std::vector<void*>& recv, size_t count, DataType dtype, ReduceOp op,
                int root) {
  const size_t n = send.size();
  const size_t block = count * size_of(dtype);
  auto src = [&](size_t r, size_t offset) { return bytes_of(send[r]) + offset; };
  auto dst = [&](size_t r, size_t offset) { return static_cast<std::byte*>(recv[r]) + offset; };
  auto reduce_all = [&](size_t offset, std::vector<std::byte>& acc) {
    acc.assign(src(0, offset), src(0, offset) + block);
    for (size_t r = 1; r < n; ++r)
      reduce_elements(dtype, op, acc.data(), acc.data(), src(r, offset), count);
  };
  std::vector<std::byte> acc;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      reduce_all(0, acc);
      for (size_t r = 0; r < n; ++r) std::memcpy(dst(r, 0), acc.data(), block);
      return;
    case CollectiveKind::kReduce:
      reduce_all(0, acc);
      std::memcpy(dst(root, 0), acc.data(), block);
      return;
    case CollectiveKind::kBroadcast:
      for (size_t r = 0; r < n; ++r) {
        if (dst(r, 0) != src(root, 0)) std::memcpy(dst(r, 0), src(root, 0), block);
      }
      return;
    case CollectiveKind::kAllGather:
      for (size_t r = 0; r < n; ++r) {
        for (size_t q = 0; q < n; ++q) {
          if (dst(r, q * block) != src(q, 0)) std::memcpy(dst(r, q * block), src(q, 0), block);
        }
      }
      return;
    case CollectiveKind::kReduceScatter: {
      std::vector<std::vector<std::byte>> out(n);
      for (size_t r = 0; r < n; ++r) reduce_all(r * block, out[r]);
      for (size_t r = 0; r < n; ++r) std::memcpy(dst(r, 0), out[r].data(), block);
      return;
    }
    case CollectiveKind::kAllToAll: {
      std::vector<std::vector<std::byte>> copy(n);  // in-place calls overwrite their input
      for (size_t q = 0; q < n; ++q) copy[q].assign(src(q, 0), src(q, 0) + n * block);
      for (size_t r = 0; r < n; ++r) {
        for (size_t q = 0; q < n; ++q)
          std::memcpy(dst(r, q * block), copy[q].data() + r * block, block);
      }
      return;
    }
    default: throw UserError("", "collective", "no built-in algorithm for " + to_string(kind));
  }
}

}  // namespace

void Communicator::call(CollectiveKind kind, const std::vector<const void*>& send,
                        const std::vector<void*>& recv, size_t count, DataType dtype, ReduceOp op,
                        int root) {
  const int n = num_ranks_;
  if (static_cast<int>(send.size()) != n || static_cast<int>(recv.size()) != n) {
    throw UserError("", "send/recv",
                    "need one send and one recv pointer per rank (" + std::to_string(n) + ")");
  }
  if (root < 0 || root >= n) throw UserError("", "root", "root out of range");
  const size_t esize = size_of(dtype);
  const bool per_peer = kind == CollectiveKind::kReduceScatter || kind == CollectiveKind::kAllToAll;
  const int64_t bytes = call_input_bytes(kind, count, esize, n);
  const bool inplace = detect_inplace(kind, send, recv, count * esize);
  last_ = CallInfo{};
  last_.inplace = inplace;
  last_.bytes = bytes;
  if (count == 0) {
    last_.algorithm = "none (empty call)";
    return;
  }
  // Null pointers (NCCL ignores broadcast's non-root send and reduce's non-root recv buffers)
  // are replaced by zeroed stand-ins so that programs touching them stay in bounds.
  const size_t send_bytes = count * esize * (per_peer ? n : 1);
  const size_t recv_bytes =
      count * esize *
      (kind == CollectiveKind::kAllGather || kind == CollectiveKind::kAllToAll ? n : 1);
  std::vector<std::vector<std::byte>> stand_ins;
  std::vector<const void*> send_ok = send;
  std::vector<void*> recv_ok = recv;
  for (int r = 0; r < n; ++r) {
    if (send_ok[r] == nullptr) send_ok[r] = stand_ins.emplace_back(send_bytes).data();
    if (recv_ok[r] == nullptr) recv_ok[r] = stand_ins.emplace_back(recv_bytes).data();
  }
  std::vector<RankBuffers> views(n);
  for (int r = 0; r < n; ++r) views[r] = {const_cast<void*>(send_ok[r]), recv_ok[r]};
  ExecOptions options = impl_->exec;
  options.dtype = dtype;
  options.op = op;
  auto execute = [&](CpuExecutor& exec, int input_chunks, const std::string& name) {
    const int64_t chunk_elems = bytes / static_cast<int64_t>(esize) / input_chunks;
    last_.algorithm = name;
    last_.exec = exec.run(views, chunk_elems, options);
    if (!last_.exec.ok) throw UserError(name, "execution", last_.exec.error);
  };
  for (size_t i = 0; i < impl_->programs.size(); ++i) {
    Loaded& p = impl_->programs[i];
    if (!p.selector.matches(kind, root, inplace, bytes, esize)) continue;
    last_.program = static_cast<int>(i);
    execute(*p.exec, p.selector.input_chunks, p.exec->program().name);
    return;
  }
  if (!fallback_) {
    throw UserError("", "collective",
                    "no loaded program matches " + to_string(kind) + " of " +
                        std::to_string(bytes) + " bytes per rank" + (inplace ? " (in-place)" : ""));
  }
  Builtin& b = impl_->builtin(n, kind, root, inplace);
  if (b.exec && bytes % (static_cast<int64_t>(esize) * b.input_chunks) == 0) {
    execute(*b.exec, b.input_chunks, b.name);
    return;
  }
  last_.algorithm = "builtin direct";
  run_direct(kind, send_ok, recv_ok, count, dtype, op, root);
}

}  // namespace ccsynth::runtime
