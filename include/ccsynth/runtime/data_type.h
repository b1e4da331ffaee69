#pragma once
// Element types and reduction operators of the CPU runtime (docs/runtime.md), with the
// float16 / bfloat16 conversions it needs (IEEE 754 binary16 and the upper half of binary32,
// both rounded to nearest, ties to even).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ccsynth::runtime {

/// The element types of a collective call (NCCL's ncclDataType_t subset).
enum class DataType { kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8 };

/// The reduction operators (ncclRedOp_t subset).
enum class ReduceOp { kSum, kProd, kMin, kMax };

/// Bytes of one element.
size_t size_of(DataType type);
/// True for float32, float64, float16, bfloat16.
bool is_floating(DataType type);
/// "float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8".
std::string to_string(DataType type);
/// "sum", "prod", "min", "max".
std::string to_string(ReduceOp op);
/// Parses a type name case-insensitively; also accepts f32/float/fp32, f64/double/fp64,
/// f16/half/fp16, bf16, i32/int, i64, u8. Throws UserError naming `field` otherwise.
DataType parse_data_type(const std::string& text, const std::string& field = "dtype");
/// Parses sum|prod|min|max case-insensitively; UserError naming `field` otherwise.
ReduceOp parse_reduce_op(const std::string& text, const std::string& field = "op");
/// Every data type / operator, in enum order.
std::vector<DataType> all_data_types();
std::vector<ReduceOp> all_reduce_ops();

/// binary32 -> binary16 bits, round to nearest even; overflow gives +-inf, NaN stays NaN
/// (quiet), tiny values become subnormals or signed zero.
uint16_t float_to_half(float value);
/// binary16 bits -> binary32 (exact).
float half_to_float(uint16_t bits);
/// binary32 -> bfloat16 bits, round to nearest even; NaN stays NaN (quiet).
uint16_t float_to_bfloat16(float value);
/// bfloat16 bits -> binary32 (exact).
float bfloat16_to_float(uint16_t bits);

}  // namespace ccsynth::runtime
