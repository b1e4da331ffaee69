#include "ccsynth/formats/json_io.h"

#include <gtest/gtest.h>

#include "ccsynth/core/error.h"

namespace ccsynth::formats {
namespace {

TEST(JsonIo, SyntaxErrorNamesLineAndColumn) {
  try {
    parse_json("{\n  \"a\": 1,\n  oops\n}", "x.json");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), "x.json");
    EXPECT_EQ(e.field().rfind("line 3", 0), 0u) << e.field();
  }
}

TEST(JsonIo, HeaderAndUnknownKeys) {
  const Json doc = parse_json(R"({"format": "f", "version": 1, "a": 2, "extra": {}})", "d.json");
  JsonReader reader(doc, "d.json");
  EXPECT_NO_THROW(reader.require_header("f", 1));
  EXPECT_THROW(reader.require_header("g", 1), UserError);
  EXPECT_NO_THROW(reader.reject_unknown_keys({"format", "version", "a"}));
  EXPECT_THROW(reader.reject_unknown_keys({"format", "version"}), UserError);
  const Json v2 = parse_json(R"({"format": "f", "version": 2})", "d.json");
  EXPECT_THROW(JsonReader(v2, "d.json").require_header("f", 1), UserError);
}

TEST(JsonIo, TypedFieldsNamePaths) {
  const Json doc = parse_json(R"({"links": [{"lanes": "two"}], "n": 3, "x": 1.5})", "t.json");
  JsonReader reader(doc, "t.json");
  EXPECT_EQ(reader.get_int("n"), 3);
  EXPECT_DOUBLE_EQ(reader.get_double("x"), 1.5);
  EXPECT_EQ(reader.get_int("missing", 7), 7);
  try {
    reader.child("links", 0).get_int("lanes");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.field(), "links[0].lanes");
  }
  EXPECT_THROW(reader.get_int("x"), UserError);
  EXPECT_THROW(reader.get_string("nope"), UserError);
}

}  // namespace
}  // namespace ccsynth::formats
