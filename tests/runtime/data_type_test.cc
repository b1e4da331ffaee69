// Data types of the CPU runtime: names, sizes and the float16 / bfloat16 conversions (round to
// nearest even, checked against golden bit patterns and exhaustive round trips).

#include "ccsynth/runtime/data_type.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ccsynth/core/error.h"

namespace ccsynth::runtime {
namespace {

TEST(DataType, NamesAndSizesRoundTrip) {
  for (DataType t : all_data_types()) EXPECT_EQ(parse_data_type(to_string(t)), t);
  for (ReduceOp op : all_reduce_ops()) EXPECT_EQ(parse_reduce_op(to_string(op)), op);
  EXPECT_EQ(parse_data_type("BF16"), DataType::kBFloat16);
  EXPECT_EQ(parse_data_type("half"), DataType::kFloat16);
  EXPECT_EQ(size_of(DataType::kFloat16), 2u);
  EXPECT_EQ(size_of(DataType::kInt64), 8u);
  EXPECT_EQ(size_of(DataType::kUInt8), 1u);
  EXPECT_TRUE(is_floating(DataType::kBFloat16));
  EXPECT_FALSE(is_floating(DataType::kInt32));
  EXPECT_THROW(parse_data_type("float8", "--dtype"), UserError);
  EXPECT_THROW(parse_reduce_op("avg"), UserError);
}

TEST(Float16, GoldenBitPatterns) {
  EXPECT_EQ(float_to_half(0.0f), 0x0000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);                      // largest finite
  EXPECT_EQ(float_to_half(65519.99f), 0x7bff);                     // below the halfway point
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);                      // halfway: ties to even = inf
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400);         // smallest normal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);         // halfway to 0: even = 0
  EXPECT_EQ(float_to_half(std::ldexp(1.5f, -25)), 0x0001);         // above halfway
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);         // 1.5 ulp: ties to even = 2
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie, even stays
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie, odd rounds up
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0xfbff), -65504.0f);
}

TEST(Float16, EveryHalfRoundTripsAndMidpointsRoundToEven) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float f = half_to_float(bits);
    if (std::isnan(f)) {
      EXPECT_EQ(float_to_half(f) & 0x7c00, 0x7c00);
      continue;
    }
    ASSERT_EQ(float_to_half(f), bits) << std::hex << h;
    // The midpoint to the next half (same sign, larger magnitude) rounds to the even one.
    if ((bits & 0x7fff) < 0x7bff) {
      const float next = half_to_float(static_cast<uint16_t>(bits + 1));
      const float mid = (f + next) / 2;  // exact in float
      const uint16_t even = (bits & 1) ? static_cast<uint16_t>(bits + 1) : bits;
      ASSERT_EQ(float_to_half(mid), even) << std::hex << h;
      ASSERT_EQ(float_to_half(std::nextafter(mid, next)), static_cast<uint16_t>(bits + 1));
      ASSERT_EQ(float_to_half(std::nextafter(mid, f)), bits);
    }
  }
}

TEST(BFloat16, GoldenBitPatterns) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd -> up
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3f808001u)), 0x3f81);  // above tie
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
  EXPECT_EQ(bfloat16_to_float(0x4049), 3.140625f);
}

TEST(BFloat16, EveryBFloat16RoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bfloat16_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bfloat16(f), h) << std::hex << h;
  }
}

}  // namespace
}  // namespace ccsynth::runtime
