#include "ccsynth/formats/algorithm_json.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "../compiler/test_algorithms.h"
#include "ccsynth/core/error.h"
#include "ccsynth/verify/verify_algorithm.h"

namespace ccsynth::formats {
namespace {

// The shared reference ring allreduce, named as a file would name it.
Algorithm ring_allreduce(int n) {
  Algorithm a = compiler::testing::ring_allreduce(n, 1);
  a.name = "ring";
  a.topology = "ring:" + std::to_string(n);
  return a;
}

TEST(AlgorithmJson, RoundTripsBuiltinWithOptionalFields) {
  Algorithm a = ring_allreduce(4);
  a.ops[0].start_us = 2.5;
  a.ops[1].channel = 3;
  a.rounds_per_step = {1, 2, 1, 1, 1, 1};
  const Json j = algorithm_to_json(a);
  EXPECT_EQ(j["format"], "ccsynth-algorithm");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["collective"]["kind"], "allreduce");  // short form for a plain built-in
  EXPECT_FALSE(j["collective"].contains("chunks"));
  EXPECT_EQ(j["ops"][0]["start_us"], 2.5);
  EXPECT_FALSE(j["ops"][2].contains("start_us"));
  EXPECT_FALSE(j["ops"][2].contains("count"));
  EXPECT_EQ(algorithm_from_json(j, "a.json"), a);
  // Through text, as files do.
  EXPECT_EQ(algorithm_from_json(parse_json(dump_json(j), "a.json"), "a.json"), a);
}

TEST(AlgorithmJson, RoundTripsCustomCollectiveAndCounts) {
  Algorithm a;
  a.name = "alltonext";
  a.collective = make_alltonext(4, 2);
  for (int r = 0; r + 1 < 4; ++r) a.ops.push_back({2 * r, r, r + 1, OpKind::kCopy, 0, -1, 2});
  const Json j = algorithm_to_json(a);
  EXPECT_EQ(j["collective"]["format"], "ccsynth-collective");  // embedded relation
  EXPECT_EQ(j["ops"][0]["count"], 2);
  EXPECT_EQ(algorithm_from_json(j, "b.json"), a);
}

TEST(AlgorithmJson, RootedBuiltinKeepsRoot) {
  Algorithm a;
  a.collective = make_collective(CollectiveKind::kBroadcast, 3, 2, 2);
  a.ops.push_back({0, 2, 0, OpKind::kCopy, 0, -1, 2});
  a.ops.push_back({0, 2, 1, OpKind::kCopy, 0, -1, 2});
  EXPECT_EQ(algorithm_from_json(algorithm_to_json(a), "c.json"), a);
}

// The error of reading `j`, as "field: reason".
std::string error_of(const Json& j) {
  try {
    algorithm_from_json(j, "bad.json");
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), "bad.json");
    return e.field() + ": " + e.reason();
  }
  return "no error";
}

TEST(AlgorithmJson, RejectsBadDocuments) {
  const Json good = algorithm_to_json(ring_allreduce(3));
  auto with = [&](auto&& change) {
    Json j = good;
    change(j);
    return error_of(j);
  };
  EXPECT_EQ(error_of(good), "no error");
  EXPECT_NE(with([](Json& j) { j["format"] = "ccsynth-topology"; }).find("format"),
            std::string::npos);
  EXPECT_NE(with([](Json& j) { j["version"] = 2; }).find("version"), std::string::npos);
  EXPECT_EQ(with([](Json& j) { j["bogus"] = 1; }).rfind("bogus: unknown key", 0), 0u);
  EXPECT_EQ(with([](Json& j) { j["ops"][1]["bogus"] = 1; }).rfind("ops[1].bogus: unknown key", 0),
            0u);
  EXPECT_EQ(with([](Json& j) { j["ops"][2]["src"] = 7; }), "ops[2].src: rank outside 0..2");
  EXPECT_EQ(with([](Json& j) { j["ops"][2]["dst"] = j["ops"][2]["src"]; }).rfind("ops[2].dst", 0),
            0u);
  EXPECT_EQ(with([](Json& j) { j["ops"][0]["chunk"] = 3; }).rfind("ops[0].chunk", 0), 0u);
  EXPECT_EQ(with([](Json& j) { j["ops"][0]["count"] = 0; }), "ops[0].count: must be >= 1");
  EXPECT_EQ(with([](Json& j) { j["ops"][0]["step"] = -1; }), "ops[0].step: must be >= 0");
  EXPECT_EQ(with([](Json& j) { j["ops"][0]["kind"] = "move"; }).rfind("ops[0].kind", 0), 0u);
  EXPECT_EQ(with([](Json& j) { j["ops"][0]["channel"] = 32; }), "ops[0].channel: must be in 0..31");
  EXPECT_EQ(with([](Json& j) { j["ops"][0]["start_us"] = -3; }), "ops[0].start_us: must be >= 0");
  EXPECT_EQ(
      with([](Json& j) { j["ops"][0]["src"] = "0"; }).rfind("ops[0].src: expected an integer", 0),
      0u);
  EXPECT_EQ(with([](Json& j) { j.erase("ops"); }), "ops: missing required field");
  EXPECT_EQ(with([](Json& j) { j["collective"]["kind"] = "allgather"; }),
            "ops[0].kind: reduce in the non-combining collective allgather");
  EXPECT_EQ(with([](Json& j) { j["collective"]["kind"] = "custom"; }).rfind("collective.kind", 0),
            0u);
  EXPECT_EQ(with([](Json& j) { j["collective"]["kind"] = "allsorts"; }).rfind("collective.kind", 0),
            0u);
  EXPECT_EQ(with([](Json& j) { j["collective"]["ranks"] = 0; }).rfind("collective.ranks", 0), 0u);
  EXPECT_EQ(
      with([](Json& j) { j["collective"]["extra_key"] = 0; }).rfind("collective.extra_key", 0), 0u);
  EXPECT_EQ(with([](Json& j) {
              j["rounds_per_step"] = Json::array({1, 0});
            }).rfind("rounds_per_step[1]", 0),
            0u);
}

TEST(AlgorithmJson, EmbeddedCollectiveErrorsNameTheirPath) {
  Algorithm a;
  a.collective = make_alltonext(3, 1);
  a.ops.push_back({0, 0, 1, OpKind::kCopy, 0});
  Json j = algorithm_to_json(a);
  j["collective"]["chunks"][1]["post"] = Json::array({Json::array({9, 0})});
  EXPECT_EQ(error_of(j).rfind("collective.chunks[1].post", 0), 0u) << error_of(j);
}

TEST(AlgorithmJson, ShippedExamplesReadAndVerify) {
  const std::filesystem::path dir =
      std::filesystem::path(CCSYNTH_SOURCE_DIR) / "examples/algorithms";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const Algorithm a = read_algorithm_file(entry.path().string());
    EXPECT_TRUE(verify::verify_algorithm(a).ok()) << entry.path();
    EXPECT_EQ(algorithm_from_json(algorithm_to_json(a), "x"), a) << entry.path();
  }
  EXPECT_GE(files, 3);
}

TEST(AlgorithmJson, MissingFileIsAUserError) {
  EXPECT_THROW(read_algorithm_file("/nonexistent/algo.json"), UserError);
}

}  // namespace
}  // namespace ccsynth::formats
