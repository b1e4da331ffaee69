// The synthesizer registry (synth/registry.h): names, parameter checking, collectives, and
// every method run through the one interface to a verified algorithm.

#include "ccsynth/synth/registry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ccsynth/core/error.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/verify_algorithm.h"

namespace ccsynth::synth {
namespace {

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const Synthesizer& s : synthesizers()) out.push_back(s.name);
  return out;
}

TEST(Registry, ListsEverySynthesizerAndBaselineOnce) {
  const std::vector<std::string> expected = {"taccl",   "sccl",  "tacos", "trees",      "ring",
                                             "direct",  "rd",    "rhd",   "dbt",        "hier",
                                             "twostep", "chain", "tree",  "cooperative"};
  EXPECT_EQ(names(), expected);
  for (const Synthesizer& s : synthesizers()) {
    EXPECT_FALSE(s.description.empty()) << s.name;
    EXPECT_TRUE(s.run) << s.name;
    EXPECT_EQ(s.baseline,
              s.name != "taccl" && s.name != "sccl" && s.name != "tacos" && s.name != "trees")
        << s.name;
  }
}

TEST(Registry, UnknownMethodListsTheKnownOnes) {
  try {
    find_synthesizer("magic");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.field(), "method");
    EXPECT_NE(std::string(e.what()).find("taccl, sccl, tacos, trees, ring"), std::string::npos)
        << e.what();
  }
}

// Unknown keys, wrong types and out-of-range values are errors naming the parameter.
TEST(Registry, ParametersAreChecked) {
  const Synthesizer& sccl = find_synthesizer("sccl");
  EXPECT_NO_THROW(check_params(sccl, {{"steps", 3}, {"rounds", 4}, {"full-model", true}}));
  auto field_of = [&](const Synthesizer& s, const nlohmann::json& params) -> std::string {
    try {
      check_params(s, params);
    } catch (const UserError& e) {
      return e.field() + ": " + e.reason();
    }
    return "";
  };
  EXPECT_EQ(field_of(sccl, {{"seed", 1}}),
            "seed: not a parameter of sccl (it takes steps, rounds, max-steps, full-model)");
  EXPECT_EQ(field_of(sccl, {{"steps", "three"}}),
            "sccl parameter 'steps': expected int, got \"three\"");
  EXPECT_EQ(field_of(sccl, {{"steps", -1}}), "sccl parameter 'steps': must be >= 0, got -1");
  EXPECT_EQ(field_of(find_synthesizer("tacos"), {{"trials", 0}}),
            "tacos parameter 'trials': must be > 0, got 0");
  EXPECT_EQ(field_of(find_synthesizer("direct"), {{"rings", 2}}),
            "rings: not a parameter of direct (it takes end-to-end)");
  EXPECT_EQ(field_of(find_synthesizer("rhd"), {{"rings", 2}}),
            "rings: not a parameter of rhd (it takes none)");
  EXPECT_EQ(field_of(find_synthesizer("ring"), {{"bidirectional", 1}}),
            "ring parameter 'bidirectional': expected flag, got 1");
}

// SCCL counts alltoall chunks per rank-sized unit (synth/sccl.h): C = 8 on 8 ranks is one chunk
// per destination; the ring's default is one chunk per ring it finds.
TEST(Registry, CollectivesInTheMethodsUnits) {
  const Topology dgx1 = topologies::make_builtin("dgx1");
  const Collective a2a =
      collective_for(find_synthesizer("sccl"), dgx1, CollectiveKind::kAllToAll, 8);
  EXPECT_EQ(a2a.chunks_per_rank, 1);
  const Collective ag = collective_for(find_synthesizer("tacos"), dgx1, CollectiveKind::kAllGather);
  EXPECT_EQ(ag.chunks_per_rank, 1);
  const Collective ring =
      collective_for(find_synthesizer("ring"), dgx1, CollectiveKind::kAllGather);
  EXPECT_EQ(ring.chunks_per_rank, nccl_rings(dgx1).count);
  EXPECT_EQ(ring.chunks_per_rank, 6);  // one ring per NVLink lane of a GPU
  EXPECT_THROW(collective_for(find_synthesizer("sccl"), dgx1, CollectiveKind::kAllToAll, 3),
               UserError);
}

// The cooperative AllToNext (MSCCLang sec. 7.4) through the registry: a custom collective, one
// chunk per GPU of a node by default so every NIC carries a part.
TEST(Registry, CooperativeBuildsAllToNext) {
  const Synthesizer& method = find_synthesizer("cooperative");
  EXPECT_TRUE(method.baseline);
  const Topology t = topologies::make_builtin("ndv4x3");
  ASSERT_TRUE(method.default_chunks);
  const int chunks = method.default_chunks(t, CollectiveKind::kCustom);
  EXPECT_EQ(chunks, 8);
  const SynthResult r = synthesize(method, t, make_alltonext(t.num_ranks, chunks), {});
  ASSERT_TRUE(r.algorithm.has_value());
  EXPECT_TRUE(verify::verify_algorithm(*r.algorithm, &t).ok());
  EXPECT_EQ(r.algorithm->collective.name, "alltonext");
  EXPECT_THROW(check_params(find_synthesizer("hier"), {{"parallel", -1}}), UserError);
}

// NCCL's rings: both directions of a ring topology, every lane of a torus.
TEST(Registry, NcclRingsUseBothDirectionsWhereTheLinksAllow) {
  const NcclRings ring16 = nccl_rings(topologies::make_builtin("ring:16"));
  EXPECT_EQ(ring16.count, 2);
  EXPECT_TRUE(ring16.bidirectional);
  const NcclRings torus = nccl_rings(topologies::make_builtin("torus2d:4x4"));
  EXPECT_EQ(torus.count, 4);
}

// One case of the method matrix: a method, a topology, a collective and its parameters.
struct MethodCase {
  std::string method;
  std::string topology;
  CollectiveKind kind;
  nlohmann::json params;
  std::string label;
};

void PrintTo(const MethodCase& c, std::ostream* os) { *os << c.label; }

class EveryMethod : public ::testing::TestWithParam<MethodCase> {};

// Every registered method, called through the one interface, returns a correct algorithm for a
// collective it applies to, on the topology's links.
TEST_P(EveryMethod, ReturnsAVerifiedAlgorithm) {
  const MethodCase& c = GetParam();
  const Synthesizer& method = find_synthesizer(c.method);
  const Topology topology = topologies::make_builtin(c.topology);
  const Collective collective = collective_for(method, topology, c.kind);
  SynthOptions options;
  options.time_limit_s = 30;
  options.params = c.params;
  const SynthResult r = synthesize(method, topology, collective, options);
  ASSERT_TRUE(r.algorithm.has_value()) << to_string(r.status) << " " << r.stats.dump();
  EXPECT_NE(r.status, SynthStatus::kInfeasible);
  const verify::VerifyReport report = verify::verify_algorithm(*r.algorithm, &topology);
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(r.algorithm->collective.kind, c.kind);
  EXPECT_TRUE(r.stats.is_object());
}

std::vector<MethodCase> method_cases() {
  const std::string sketch = std::string(CCSYNTH_SOURCE_DIR) + "/examples/sketches/ndv2-sk-1.json";
  using CK = CollectiveKind;
  return {
      {"taccl", "ndv2x2", CK::kAllGather, {{"sketch", sketch}}, "taccl_ndv2x2_allgather"},
      {"sccl", "ring:4", CK::kAllGather, {{"steps", 2}}, "sccl_ring4_allgather"},
      {"sccl", "ring:4", CK::kAllGather, nlohmann::json::object(),
       "sccl_ring4_allgather_least_steps"},
      {"tacos", "mesh2d:3x3", CK::kAllReduce, {{"trials", 2}}, "tacos_mesh3x3_allreduce"},
      {"trees", "dgx1", CK::kAllGather, nlohmann::json::object(), "trees_dgx1_allgather"},
      {"trees", "ndv2x2", CK::kReduceScatter, {{"trees", 2}}, "trees_ndv2x2_reducescatter"},
      {"trees", "mesh2d:3x3", CK::kAllReduce, nlohmann::json::object(), "trees_mesh3x3_allreduce"},
      {"ring", "dgx1", CK::kAllReduce, nlohmann::json::object(), "ring_dgx1_allreduce"},
      {"ring", "ring:8", CK::kAllGather, {{"one-way", true}}, "ring_ring8_allgather_one_way"},
      {"direct", "dgx2", CK::kAllToAll, nlohmann::json::object(), "direct_dgx2_alltoall"},
      {"rd", "hypercube:8", CK::kAllGather, nlohmann::json::object(), "rd_hypercube8_allgather"},
      {"rhd", "hypercube:8", CK::kAllReduce, nlohmann::json::object(), "rhd_hypercube8_allreduce"},
      {"dbt", "dgx2", CK::kAllReduce, {{"pipeline", 2}}, "dbt_dgx2_allreduce"},
      {"hier", "ndv2x2", CK::kAllReduce, nlohmann::json::object(), "hier_ndv2x2_allreduce"},
      {"hier", "ndv4x2", CK::kAllReduce, {{"parallel", 1}}, "hier_ndv4x2_allreduce_parallel1"},
      {"twostep", "ndv2x2", CK::kAllToAll, nlohmann::json::object(), "twostep_ndv2x2_alltoall"},
      {"chain", "ring:6", CK::kBroadcast, {{"pipeline", 3}}, "chain_ring6_broadcast"},
      {"tree", "dgx2", CK::kReduce, nlohmann::json::object(), "tree_dgx2_reduce"},
  };
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryMethod, ::testing::ValuesIn(method_cases()),
                         [](const ::testing::TestParamInfo<MethodCase>& info) {
                           return info.param.label;
                         });

}  // namespace
}  // namespace ccsynth::synth
