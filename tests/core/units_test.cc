#include "ccsynth/core/units.h"

#include <gtest/gtest.h>

#include "ccsynth/core/error.h"

namespace ccsynth {
namespace {

TEST(Units, ParsesBinarySizes) {
  EXPECT_EQ(parse_bytes("512"), 512);
  EXPECT_EQ(parse_bytes("1K"), 1024);
  EXPECT_EQ(parse_bytes("64M"), 64 << 20);
  EXPECT_EQ(parse_bytes("1G"), int64_t{1} << 30);
  EXPECT_EQ(parse_bytes("2mb"), 2 << 20);
  EXPECT_EQ(parse_bytes("1KiB"), 1024);
}

TEST(Units, RejectsNonSizes) {
  EXPECT_THROW(parse_bytes(""), UserError);
  EXPECT_THROW(parse_bytes("M1"), UserError);
  EXPECT_THROW(parse_bytes("1X"), UserError);
  EXPECT_THROW(parse_bytes("99999999999999999999"), UserError);
}

TEST(Units, ParsesSizeListsAndRanges) {
  EXPECT_EQ(parse_byte_list("1K,1M"), (std::vector<int64_t>{1024, 1 << 20}));
  EXPECT_EQ(parse_byte_list("1K:16K"), (std::vector<int64_t>{1024, 4096, 16384}));
  EXPECT_EQ(parse_byte_list("1K:8K:2"), (std::vector<int64_t>{1024, 2048, 4096, 8192}));
  EXPECT_EQ(parse_byte_list("1G:1G").size(), 1u);
  EXPECT_THROW(parse_byte_list("1M:1K"), UserError);
  EXPECT_THROW(parse_byte_list("1K:2K:1"), UserError);
  EXPECT_THROW(parse_byte_list("1K,,2K"), UserError);
}

TEST(Units, FormatsAndConverts) {
  EXPECT_EQ(format_bytes(1024), "1K");
  EXPECT_EQ(format_bytes(3 << 20), "3M");
  EXPECT_EQ(format_bytes(1000), "1000");
  EXPECT_NEAR(transfer_us(46.0, kBytesPerMb), 46.0, 1e-9);
  EXPECT_NEAR(gbps_from_beta(beta_from_gbps(50.0)), 50.0, 1e-9);
}

TEST(Errors, CheckThrowsInternalErrorWithMessage) {
  try {
    CCSYNTH_CHECK(1 + 1 == 3) << "math is "
                              << "broken";
    FAIL() << "no throw";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("math is broken"), std::string::npos);
  }
}

TEST(Errors, UserErrorNamesFileFieldReason) {
  UserError e("topo.json", "links[3].lanes", "must be >= 1");
  EXPECT_STREQ(e.what(), "topo.json: links[3].lanes: must be >= 1");
}

}  // namespace
}  // namespace ccsynth
