#include "ccsynth/runtime/data_type.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>

#include "ccsynth/core/error.h"

namespace ccsynth::runtime {

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

size_t size_of(DataType type) {
  switch (type) {
    case DataType::kFloat32:
    case DataType::kInt32: return 4;
    case DataType::kFloat64:
    case DataType::kInt64: return 8;
    case DataType::kFloat16:
    case DataType::kBFloat16: return 2;
    case DataType::kUInt8: return 1;
  }
  return 1;
}

bool is_floating(DataType type) {
  return type == DataType::kFloat32 || type == DataType::kFloat64 || type == DataType::kFloat16 ||
         type == DataType::kBFloat16;
}

std::string to_string(DataType type) {
  switch (type) {
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kUInt8: return "uint8";
  }
  return "?";
}

std::string to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
  }
  return "?";
}

DataType parse_data_type(const std::string& text, const std::string& field) {
  const std::string t = lower(text);
  if (t == "float32" || t == "f32" || t == "float" || t == "fp32") return DataType::kFloat32;
  if (t == "float64" || t == "f64" || t == "double" || t == "fp64") return DataType::kFloat64;
  if (t == "float16" || t == "f16" || t == "half" || t == "fp16") return DataType::kFloat16;
  if (t == "bfloat16" || t == "bf16") return DataType::kBFloat16;
  if (t == "int32" || t == "i32" || t == "int") return DataType::kInt32;
  if (t == "int64" || t == "i64") return DataType::kInt64;
  if (t == "uint8" || t == "u8") return DataType::kUInt8;
  throw UserError("", field,
                  "unknown data type '" + text +
                      "' (known: float32, float64, float16, bfloat16, int32, int64, uint8)");
}

ReduceOp parse_reduce_op(const std::string& text, const std::string& field) {
  const std::string t = lower(text);
  if (t == "sum") return ReduceOp::kSum;
  if (t == "prod") return ReduceOp::kProd;
  if (t == "min") return ReduceOp::kMin;
  if (t == "max") return ReduceOp::kMax;
  throw UserError("", field, "unknown reduction '" + text + "' (known: sum, prod, min, max)");
}

std::vector<DataType> all_data_types() {
  return {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
          DataType::kInt32,   DataType::kInt64,   DataType::kUInt8};
}

std::vector<ReduceOp> all_reduce_ops() {
  return {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax};
}

uint16_t float_to_half(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN; NaN keeps its top payload bits and becomes quiet
    if (abs == 0x7f800000u) return sign | 0x7c00u;
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  // 65520 = 65504 + half an ulp: ties to even round it (and everything above) to infinity.
  if (abs >= 0x477ff000u) return sign | 0x7c00u;
  if (abs < 0x38800000u) {                // below 2^-14: a half subnormal, in units of 2^-24
    if (abs <= 0x33000000u) return sign;  // <= 2^-25 rounds (ties to even) to zero
    const uint32_t exponent = abs >> 23;  // 102..112
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    // value = mantissa * 2^(exponent - 150); in units of 2^-24 that is mantissa >> shift.
    const uint32_t shift = 126 - exponent;
    uint32_t q = mantissa >> shift;
    const uint32_t rem = mantissa & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;  // may carry into the smallest normal
    return static_cast<uint16_t>(sign | q);
  }
  // Normal: rebias the exponent (127 -> 15) and round off 13 mantissa bits; a carry out of the
  // mantissa correctly increments the exponent (up to infinity, excluded above).
  uint32_t h = ((abs >> 23) - 112) << 10 | ((abs >> 13) & 0x3ffu);
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // exact
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t float_to_bfloat16(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even; overflow of the
  // largest finite values carries into the exponent and yields infinity, as it should.
  const uint32_t bias = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + bias) >> 16);
}

float bfloat16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

}  // namespace ccsynth::runtime
