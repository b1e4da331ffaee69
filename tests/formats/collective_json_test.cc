// Collective JSON (docs/collectives.md): round trips of every built-in and AllToNext, the
// shipped example, errors naming file, field and reason, and resolve_collective.

#include "ccsynth/formats/collective_json.h"

#include <gtest/gtest.h>

#include "json_error_case.h"

#include <cstdio>
#include <fstream>

#include "ccsynth/core/error.h"

namespace ccsynth::formats {
namespace {

const std::string kExample =
    std::string(CCSYNTH_SOURCE_DIR) + "/examples/collectives/alltonext8.json";

TEST(CollectiveJson, RoundTripsEveryBuiltin) {
  for (CollectiveKind kind : builtin_collective_kinds()) {
    for (int chunks : {1, 2}) {
      const Collective c = make_collective(kind, 4, chunks, 1);
      const Json doc = collective_to_json(c);
      EXPECT_EQ(doc["format"], "ccsynth-collective");
      EXPECT_EQ(doc["kind"], to_string(kind));
      EXPECT_EQ(collective_from_json(doc, "c.json"), c) << c;
      EXPECT_EQ(collective_from_json(parse_json(dump_json(doc), "c.json"), "c.json"), c) << c;
    }
  }
  const Collective next = make_alltonext(5, 3);
  EXPECT_EQ(collective_from_json(collective_to_json(next), "n.json"), next);
}

TEST(CollectiveJson, ShippedAllToNextMatchesCore) {
  const Collective c = read_collective_file(kExample);
  EXPECT_EQ(c, make_alltonext(8));
  EXPECT_EQ(c.kind, CollectiveKind::kCustom);
  EXPECT_EQ(c.num_chunks(), 7);
  EXPECT_EQ(resolve_collective(kExample, 8), c);
}

Json minimal() {
  return parse_json(R"({"format": "ccsynth-collective", "version": 1, "name": "swap",
    "ranks": 2, "input_chunks": 1, "output_chunks": 1,
    "chunks": [{"pre": [[0, 0]], "post": [[1, 0]]}, {"pre": [[1, 0]], "post": [[0, 0]]}]})",
                    "swap.json");
}

TEST(CollectiveJson, OptionalFieldsDefault) {
  const Collective c = collective_from_json(minimal(), "swap.json");
  EXPECT_EQ(c.kind, CollectiveKind::kCustom);
  EXPECT_EQ(c.name, "swap");
  EXPECT_EQ(c.chunks_per_rank, 1);
  EXPECT_EQ(c.root, 0);
  EXPECT_FALSE(c.combining);
  ASSERT_EQ(c.num_chunks(), 2);
  EXPECT_EQ(c.chunks[1].post, (std::vector<Slot>{{0, 0}}));
}

using testing::JsonErrorCase;

class CollectiveErrors : public ::testing::TestWithParam<JsonErrorCase> {};

TEST_P(CollectiveErrors, NameFileFieldAndReason) {
  testing::expect_json_error(GetParam(), minimal(), [](const Json& doc, const std::string& file) {
    collective_from_json(doc, file);
  });
}

INSTANTIATE_TEST_SUITE_P(
    All, CollectiveErrors,
    ::testing::Values(
        JsonErrorCase{"unknown_rank", [](Json& d) { d["chunks"][0]["post"][0][0] = 9; },
                      "chunks[0].post", "unknown rank 9"},
        JsonErrorCase{"index_out_of_buffer", [](Json& d) { d["chunks"][1]["pre"][0][1] = 1; },
                      "chunks[1].pre", "outside buffer"},
        JsonErrorCase{"two_pre_not_combining",
                      [](Json& d) {
                        d["chunks"][0]["pre"].push_back(Json::array({1, 0}));
                      },
                      "chunks[0].pre", "exactly one"},
        JsonErrorCase{"output_claimed_twice",
                      [](Json& d) {
                        d["chunks"][1]["post"][0] = Json::array({1, 0});
                      },
                      "chunks[1].post", "claimed by two chunks"},
        JsonErrorCase{"bad_slot", [](Json& d) { d["chunks"][0]["pre"][0] = Json::array({0}); },
                      "chunks[0].pre[0]", "[rank, index]"},
        JsonErrorCase{"empty_pre", [](Json& d) { d["chunks"][0]["pre"] = Json::array(); },
                      "chunks[0].pre", "starts nowhere"},
        JsonErrorCase{"kind_mismatch", [](Json& d) { d["kind"] = "allgather"; }, "kind",
                      "do not match the built-in allgather"},
        JsonErrorCase{"unknown_kind", [](Json& d) { d["kind"] = "allsort"; }, "kind",
                      "unknown collective"},
        JsonErrorCase{"zero_ranks", [](Json& d) { d["ranks"] = 0; }, "ranks", "must be >= 1"},
        JsonErrorCase{"root_out_of_range", [](Json& d) { d["root"] = 2; }, "root", "not a rank"},
        JsonErrorCase{"unknown_key", [](Json& d) { d["chunk"] = 1; }, "chunk", "unknown key"},
        JsonErrorCase{"unknown_chunk_key", [](Json& d) { d["chunks"][0]["via"] = 1; },
                      "chunks[0].via", "unknown key"},
        JsonErrorCase{"missing_chunks", [](Json& d) { d.erase("chunks"); }, "chunks", "missing"},
        JsonErrorCase{"wrong_format", [](Json& d) { d["format"] = "ccsynth-topology"; }, "format",
                      "ccsynth-collective"}),
    [](const auto& info) { return info.param.label; });

TEST(ResolveCollective, BuiltinsAndAllToNext) {
  EXPECT_EQ(resolve_collective("AllGather", 8, 2),
            make_collective(CollectiveKind::kAllGather, 8, 2));
  EXPECT_EQ(resolve_collective("reduce_scatter", 4),
            make_collective(CollectiveKind::kReduceScatter, 4));
  EXPECT_EQ(resolve_collective("broadcast", 4, 1, 3).root, 3);
  EXPECT_EQ(resolve_collective("alltonext", 4, 2), make_alltonext(4, 2));
  try {
    resolve_collective("allsort", 4);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.field(), "collective");
    EXPECT_NE(e.reason().find("alltonext"), std::string::npos);
  }
}

TEST(ResolveCollective, FileMustMatchTheTopology) {
  try {
    resolve_collective(kExample, 16);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), kExample);
    EXPECT_EQ(e.field(), "ranks");
    EXPECT_NE(e.reason().find("8 ranks"), std::string::npos);
  }
  EXPECT_THROW(resolve_collective(kExample, 8, 4), UserError);
  EXPECT_THROW(resolve_collective("/nonexistent/c.json", 8), UserError);
}

}  // namespace
}  // namespace ccsynth::formats
