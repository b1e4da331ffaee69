#include "ccsynth/runtime/kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace ccsynth::runtime {

namespace {

// Arithmetic of one operator on values of type T (already widened for half types).
template <ReduceOp kOp, typename T>
inline T apply(T a, T b) {
  if constexpr (kOp == ReduceOp::kMin) {
    return std::min(a, b);
  } else if constexpr (kOp == ReduceOp::kMax) {
    return std::max(a, b);
  } else if constexpr (std::is_integral_v<T>) {
    // Wrapping arithmetic: signed overflow is undefined in C++, unsigned wraps.
    using U = std::make_unsigned_t<T>;
    const U x = static_cast<U>(a);
    const U y = static_cast<U>(b);
    return static_cast<T>(kOp == ReduceOp::kSum ? static_cast<U>(x + y) : static_cast<U>(x * y));
  } else {
    return kOp == ReduceOp::kSum ? a + b : a * b;
  }
}

template <ReduceOp kOp, typename T>
void reduce_plain(void* dst, const void* a, const void* b, size_t n) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) d[i] = apply<kOp, T>(x[i], y[i]);
}

// float16 / bfloat16: widen to float, operate, round back (nearest even).
template <ReduceOp kOp, float (*kToFloat)(uint16_t), uint16_t (*kFromFloat)(float)>
void reduce_half(void* dst, const void* a, const void* b, size_t n) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < n; ++i)
    d[i] = kFromFloat(apply<kOp, float>(kToFloat(x[i]), kToFloat(y[i])));
}

template <ReduceOp kOp>
void reduce_op(DataType type, void* dst, const void* a, const void* b, size_t n) {
  switch (type) {
    case DataType::kFloat32: return reduce_plain<kOp, float>(dst, a, b, n);
    case DataType::kFloat64: return reduce_plain<kOp, double>(dst, a, b, n);
    case DataType::kFloat16: return reduce_half<kOp, half_to_float, float_to_half>(dst, a, b, n);
    case DataType::kBFloat16:
      return reduce_half<kOp, bfloat16_to_float, float_to_bfloat16>(dst, a, b, n);
    case DataType::kInt32: return reduce_plain<kOp, int32_t>(dst, a, b, n);
    case DataType::kInt64: return reduce_plain<kOp, int64_t>(dst, a, b, n);
    case DataType::kUInt8: return reduce_plain<kOp, uint8_t>(dst, a, b, n);
  }
}

}  // namespace

void reduce_elements(DataType type, ReduceOp op, void* dst, const void* a, const void* b,
                     size_t n) {
  switch (op) {
    case ReduceOp::kSum: return reduce_op<ReduceOp::kSum>(type, dst, a, b, n);
    case ReduceOp::kProd: return reduce_op<ReduceOp::kProd>(type, dst, a, b, n);
    case ReduceOp::kMin: return reduce_op<ReduceOp::kMin>(type, dst, a, b, n);
    case ReduceOp::kMax: return reduce_op<ReduceOp::kMax>(type, dst, a, b, n);
  }
}

int64_t SliceShape::length(int64_t slice) const {
  return std::max<int64_t>(0, std::min(slice_elems, chunk_elems - slice * slice_elems));
}

size_t SliceShape::message_bytes(int count, int64_t slice) const {
  return static_cast<size_t>(length(slice)) * static_cast<size_t>(count) * elem_bytes;
}

SliceShape slice_shape(Protocol protocol, int64_t chunk_elems, DataType dtype,
                       const ExecOptions& options) {
  SliceShape shape;
  shape.chunk_elems = chunk_elems;
  shape.slices = slices_per_chunk(protocol, chunk_elems, dtype, options);
  shape.slice_elems = chunk_elems == 0 ? 0 : (chunk_elems + shape.slices - 1) / shape.slices;
  shape.elem_bytes = size_of(dtype);
  return shape;
}

namespace {

// A null destination is a message the caller sends from the step's memory itself.
void copy_bytes(void* dst, const void* src, size_t bytes) {
  if (dst != nullptr && dst != src && bytes > 0) std::memcpy(dst, src, bytes);
}

}  // namespace

void execute_slice(const Step& step, int64_t slice, const SliceShape& shape, DataType dtype,
                   ReduceOp op, const RankBases& bases, const std::byte* in, std::byte* out) {
  if (step.type == StepType::kNop) return;
  const int64_t offset = slice * shape.slice_elems;
  const int64_t len = shape.length(slice);
  // With a single slice the chunks are contiguous and move as one piece; otherwise piece p is
  // slice `slice` of chunk offset + p.
  int pieces = step.count;
  int64_t n = len;
  if (shape.slices == 1) {
    pieces = 1;
    n = len * step.count;
  }
  const size_t bytes = static_cast<size_t>(n) * shape.elem_bytes;
  auto chunk_ptr = [&](Buffer buffer, int64_t chunk) {
    return bases[static_cast<int>(buffer)] +
           static_cast<size_t>(chunk * shape.chunk_elems + offset) * shape.elem_bytes;
  };
  for (int p = 0; p < pieces; ++p) {
    const std::byte* src =
        reads_src(step.type) ? chunk_ptr(step.src_buffer, step.src_offset + p) : nullptr;
    std::byte* dst =
        writes_dst(step.type) ? chunk_ptr(step.dst_buffer, step.dst_offset + p) : nullptr;
    const std::byte* in_p = in ? in + p * bytes : nullptr;
    std::byte* out_p = out ? out + p * bytes : nullptr;
    switch (step.type) {
      case StepType::kSend: copy_bytes(out_p, src, bytes); break;
      case StepType::kRecv: copy_bytes(dst, in_p, bytes); break;
      case StepType::kRecvCopySend:
        copy_bytes(dst, in_p, bytes);
        copy_bytes(out_p, in_p, bytes);
        break;
      case StepType::kRecvReduceSend: reduce_elements(dtype, op, out_p, in_p, src, n); break;
      case StepType::kRecvReduceCopy: reduce_elements(dtype, op, dst, in_p, src, n); break;
      case StepType::kRecvReduceCopySend:
        reduce_elements(dtype, op, dst, in_p, src, n);
        copy_bytes(out_p, dst, bytes);
        break;
      case StepType::kCopy:
        if (dst != src && bytes > 0) std::memmove(dst, src, bytes);
        break;
      case StepType::kReduce: reduce_elements(dtype, op, dst, dst, src, n); break;
      case StepType::kNop: break;
    }
  }
}

std::string step_name(int rank, int tb, int step) {
  return "gpu[" + std::to_string(rank) + "]/tb[" + std::to_string(tb) + "]/step[" +
         std::to_string(step) + "]";
}

std::string waiting_step(int rank, int tb, int step, StepType type, int64_t slice) {
  return step_name(rank, tb, step) + " (" + to_string(type) + ", slice " + std::to_string(slice) +
         ") ";
}

std::string dependency_wait(int rank, int dep_tb, int dep_step, int64_t slice, int64_t dep_progress,
                            int dep_steps, int64_t dep_total) {
  const int steps = std::max(1, dep_steps);
  return "waits for its dependency " + step_name(rank, dep_tb, dep_step) + " (slice " +
         std::to_string(slice) + "), which is at step " + std::to_string(dep_progress % steps) +
         " of slice " + std::to_string(dep_progress / steps) +
         (dep_progress >= dep_total ? " (finished)" : "");
}

std::string list_unfinished(size_t count, const std::function<bool(size_t)>& unfinished,
                            const std::function<std::string(size_t)>& line,
                            const std::string& whose) {
  constexpr int kMaxListed = 16;
  std::string out;
  int listed = 0;
  int waiting = 0;
  for (size_t i = 0; i < count; ++i) {
    if (!unfinished(i)) continue;
    ++waiting;
    if (listed >= kMaxListed) continue;
    ++listed;
    out += "\n  " + line(i);
  }
  if (waiting > listed) out += "\n  ... and " + std::to_string(waiting - listed) + " more";
  return std::to_string(waiting) + " threadblock(s)" + whose + " unfinished:" + out;
}

}  // namespace ccsynth::runtime
