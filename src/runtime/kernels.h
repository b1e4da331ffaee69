#pragma once
// Element-wise kernels of the CPU runtime: reductions for every (DataType, ReduceOp) pair, one
// template instantiated per pair. Integer sums and products wrap modulo 2^bits (computed in the
// unsigned type), so they are exact and independent of the reduction order; float16 and
// bfloat16 are reduced in float and rounded back to nearest even after every operation, as a
// GPU kernel working on half values does.

#include <cstddef>

#include "ccsynth/runtime/data_type.h"

namespace ccsynth::runtime::detail {

/// dst[i] = a[i] (op) b[i] for i < n. dst may equal a or b (then it is updated in place), but
/// must not partially overlap them.
void reduce(DataType type, ReduceOp op, void* dst, const void* a, const void* b, size_t n);

}  // namespace ccsynth::runtime::detail
