// The tuner's table reader (formats/tuning_json.h), shared by plan::load_tuning_dir and
// `ccsynth report --from DIR/tuning.json`: what it reads, and the field each bad table names.

#include "ccsynth/formats/tuning_json.h"

#include <gtest/gtest.h>

#include "json_error_case.h"

namespace ccsynth::formats {
namespace {

// A table of two entries as `ccsynth tune -o DIR` writes it (per-size details trimmed).
Json two_entries() {
  return Json::parse(R"({"format": "ccsynth-tuning", "version": 1, "topology": "dgx1",
      "entries": [
        {"file": "a.xml", "min_bytes": 0, "max_bytes": 4096, "method": "tacos", "sizes": []},
        {"file": "b.xml", "min_bytes": 4096, "max_bytes": 0, "method": "nccl"}]})");
}

TEST(TuningJson, ReadsFileRangeAndMethodOfEveryEntry) {
  Json doc = two_entries();
  doc["entries"][1].erase("method");
  const std::vector<TuningTableEntry> entries = read_tuning_table(doc, "t.json");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].method, "tacos");
  EXPECT_EQ(entries[0].file, "a.xml");
  EXPECT_EQ(entries[0].min_bytes, 0);
  EXPECT_EQ(entries[0].max_bytes, 4096);
  EXPECT_EQ(entries[1].method, "tuned");  // absent: the default label
  EXPECT_EQ(entries[1].min_bytes, 4096);
  EXPECT_EQ(entries[1].max_bytes, 0);  // unlimited
}

using testing::JsonErrorCase;

class TuningTableErrors : public ::testing::TestWithParam<JsonErrorCase> {};

TEST_P(TuningTableErrors, NameFileFieldAndReason) {
  testing::expect_json_error(GetParam(), two_entries(), [](const Json& doc, const std::string& f) {
    read_tuning_table(doc, f);
  });
}

INSTANTIATE_TEST_SUITE_P(
    All, TuningTableErrors,
    ::testing::Values(
        JsonErrorCase{"other_format", [](Json& d) { d["format"] = "ccsynth-synthesis"; }, "format",
                      "ccsynth-tuning"},
        JsonErrorCase{"no_entries", [](Json& d) { d.erase("entries"); }, "entries", ""},
        JsonErrorCase{"entry_not_object", [](Json& d) { d["entries"][0] = 3; }, "entries[0]", ""},
        JsonErrorCase{"no_file", [](Json& d) { d["entries"][0].erase("file"); }, "entries[0].file",
                      ""},
        JsonErrorCase{"file_outside_dir", [](Json& d) { d["entries"][1]["file"] = "../x.xml"; },
                      "entries[1].file", "inside the tuning directory"},
        JsonErrorCase{"method_not_string", [](Json& d) { d["entries"][0]["method"] = 5; },
                      "entries[0].method", ""},
        JsonErrorCase{"bytes_as_string", [](Json& d) { d["entries"][0]["min_bytes"] = "1K"; },
                      "entries[0].min_bytes", "non-negative integer"},
        JsonErrorCase{"negative_bytes", [](Json& d) { d["entries"][1]["max_bytes"] = -1; },
                      "entries[1].max_bytes", "non-negative integer"},
        JsonErrorCase{"empty_range", [](Json& d) { d["entries"][1]["max_bytes"] = 1; },
                      "entries[1].max_bytes", "below min_bytes"}));

}  // namespace
}  // namespace ccsynth::formats
