#include "kernels.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace ccsynth::runtime::detail {

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

void reduce(DataType type, ReduceOp op, void* dst, const void* a, const void* b, size_t n) {
  switch (op) {
    case ReduceOp::kSum: return reduce_op<ReduceOp::kSum>(type, dst, a, b, n);
    case ReduceOp::kProd: return reduce_op<ReduceOp::kProd>(type, dst, a, b, n);
    case ReduceOp::kMin: return reduce_op<ReduceOp::kMin>(type, dst, a, b, n);
    case ReduceOp::kMax: return reduce_op<ReduceOp::kMax>(type, dst, a, b, n);
  }
}

}  // namespace ccsynth::runtime::detail
