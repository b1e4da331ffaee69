// Topology JSON (docs/formats.md): round trips of every built-in and each validation
// error naming file, field and reason.

#include "ccsynth/formats/topology_json.h"

#include <gtest/gtest.h>

#include "json_error_case.h"

#include <cstdio>
#include <fstream>

#include "ccsynth/core/error.h"
#include "ccsynth/topologies/library.h"

namespace ccsynth::formats {
namespace {

const std::vector<std::string> kBuiltins = {"dgx1",
                                            "ndv2",
                                            "dgx2",
                                            "ndv4",
                                            "dgxh100",
                                            "amdz52",
                                            "dgx1x2",
                                            "ndv2x4",
                                            "dgx2x2",
                                            "ndv4x2",
                                            "dgxh100x2",
                                            "ring:8",
                                            "uring:5",
                                            "line:4",
                                            "fc:5",
                                            "switch:6",
                                            "mesh2d:3x4",
                                            "torus2d:4x4",
                                            "mesh3d:2x2x3",
                                            "torus3d:3x3x3",
                                            "hypercube:4",
                                            "dragonfly:4x3",
                                            "rfs:2x4x4",
                                            "mesh2d:4x4@alpha=0.25,gbps=12.5/100,lanes=3",
                                            "rfs:8x8x8@gbps=200/100/50"};

class RoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTrip, JsonAndTextGiveTheSameTopology) {
  const Topology t = topologies::make_builtin(GetParam());
  const Json doc = topology_to_json(t);
  EXPECT_EQ(doc["format"], "ccsynth-topology");
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(topology_from_json(doc, "mem.json"), t);
  EXPECT_EQ(topology_from_json(parse_json(write_topology_json(t), "t.json"), "t.json"), t);
  EXPECT_EQ(topology_from_json(parse_json(dump_json(doc), "t.json"), "t.json"), t);
}

INSTANTIATE_TEST_SUITE_P(Builtins, RoundTrip, ::testing::ValuesIn(kBuiltins), [](const auto& info) {
  std::string s;
  for (char c : info.param) s += std::isalnum(c) ? c : '_';
  return s;
});

Json two_ranks() {
  return parse_json(R"({"format": "ccsynth-topology", "version": 1, "name": "pair", "ranks": 2,
    "nodes": [[0, 1]],
    "links": [{"src": 0, "dst": 1, "lanes": 2, "alpha_us": 0.7, "beta_us_per_mb": 46.0, "kind": "nvlink"},
              {"src": 1, "dst": 0, "alpha_us": 0.7, "beta_us_per_mb": 46.0}],
    "switches": [], "extra": {"anything": true}})",
                    "pair.json");
}

TEST(TopologyJson, ReadsFieldsAndDefaults) {
  Json doc = two_ranks();
  doc.erase("nodes");
  doc.erase("switches");
  const Topology t = topology_from_json(doc, "pair.json");
  EXPECT_EQ(t.name, "pair");
  EXPECT_EQ(t.num_ranks, 2);
  EXPECT_EQ(t.nodes, (std::vector<std::vector<int>>{{0, 1}}));
  ASSERT_EQ(t.links.size(), 2u);
  EXPECT_EQ(t.links[0].lanes, 2);
  EXPECT_EQ(t.links[0].kind, "nvlink");
  EXPECT_EQ(t.links[1].lanes, 1);
  EXPECT_EQ(t.links[1].kind, "generic");
  EXPECT_DOUBLE_EQ(t.links[1].beta_us_per_mb, 46.0);
}

// A one-switch list for the error cases: `ranks` and `extra` keys spliced into a switch with
// valid alpha and port bandwidth.
Json one_switch(const std::string& ranks, const std::string& extra = "",
                const std::string& name = "s") {
  return Json::parse(R"([{"name": ")" + name + R"(", "ranks": )" + ranks +
                     R"(, "alpha_us": 1, "port_beta_us_per_mb": 1)" + extra + "}]");
}

using testing::JsonErrorCase;

// A case whose document has one host switch over ranks 0 and 1 with `extra` fields, rejected at
// host_switches[0].`key`.
JsonErrorCase host_switch_case(const std::string& label, const std::string& extra,
                               const std::string& key, const std::string& reason) {
  return JsonErrorCase{label,
                       [extra](Json& d) { d["host_switches"] = one_switch("[0, 1]", extra, "h"); },
                       "host_switches[0]." + key, reason};
}

class Errors : public ::testing::TestWithParam<JsonErrorCase> {};

TEST_P(Errors, NameFileFieldAndReason) {
  testing::expect_json_error(GetParam(), two_ranks(), [](const Json& doc, const std::string& file) {
    topology_from_json(doc, file);
  });
}

INSTANTIATE_TEST_SUITE_P(
    All, Errors,
    ::testing::Values(
        JsonErrorCase{"unknown_rank", [](Json& d) { d["links"][1]["dst"] = 5; }, "links[1].dst",
                      "unknown rank 5"},
        JsonErrorCase{"zero_bandwidth", [](Json& d) { d["links"][0]["beta_us_per_mb"] = 0; },
                      "links[0]", "bandwidth must be positive"},
        JsonErrorCase{"negative_bandwidth", [](Json& d) { d["links"][0]["beta_us_per_mb"] = -3.0; },
                      "links[0]", "bandwidth must be positive"},
        JsonErrorCase{"duplicate_link", [](Json& d) { d["links"].push_back(d["links"][0]); },
                      "links[2]", "duplicate link 0 -> 1"},
        JsonErrorCase{"unreachable",
                      [](Json& d) {
                        d["ranks"] = 3;
                        d["nodes"] = Json::parse("[[0, 1, 2]]");
                      },
                      "links", "rank 2 is unreachable"},
        JsonErrorCase{"zero_lanes", [](Json& d) { d["links"][0]["lanes"] = 0; }, "links[0].lanes",
                      "must be >= 1"},
        JsonErrorCase{"self_link", [](Json& d) { d["links"][0]["dst"] = 0; }, "links[0]", "itself"},
        JsonErrorCase{"switch_unknown_rank", [](Json& d) { d["switches"] = one_switch("[0, 7]"); },
                      "switches[0].ranks", "unknown rank 7"},
        JsonErrorCase{"switch_rank_not_int",
                      [](Json& d) { d["switches"] = one_switch(R"([0, "a"])"); },
                      "switches[0].ranks", "not an integer rank"},
        JsonErrorCase{
            "port_group_size",
            [](Json& d) { d["switches"] = one_switch("[0, 1]", R"(, "port_group": [0])"); },
            "switches[0].port_group", "1 port ids for 2 ranks"},
        JsonErrorCase{
            "port_group_gap",
            [](Json& d) { d["switches"] = one_switch("[0, 1]", R"(, "port_group": [1, 1])"); },
            "switches[0].port_group", "port id 0 is unused"},
        JsonErrorCase{
            "port_group_negative",
            [](Json& d) { d["switches"] = one_switch("[0, 1]", R"(, "port_group": [0, -1])"); },
            "switches[0].port_group", "port id -1 is out of range"},
        JsonErrorCase{
            "port_group_not_int",
            [](Json& d) { d["switches"] = one_switch("[0, 1]", R"(, "port_group": [0, 0.5])"); },
            "switches[0].port_group", "not an integer port id"},
        host_switch_case("port_socket_size", R"(, "port_socket": [0, 1, 1])", "port_socket",
                         "3 socket ids for 2 ports"),
        host_switch_case("port_socket_gap", R"(, "port_socket": [0, 2])", "port_socket",
                         "socket id 2 is out of range"),
        host_switch_case("socket_beta_negative", R"(, "socket_beta_us_per_mb": -1)",
                         "socket_beta_us_per_mb", "must be >= 0"),
        JsonErrorCase{
            "port_lanes_negative",
            [](Json& d) { d["switches"] = one_switch("[0, 1]", R"(, "port_lanes": -1)"); },
            "switches[0].port_lanes", "must be >= 0"},
        JsonErrorCase{"launch_negative", [](Json& d) { d["launch_us"] = -1.0; }, "launch_us",
                      "must be >= 0"},
        JsonErrorCase{"threadblock_negative", [](Json& d) { d["threadblock_gbps"] = -2.0; },
                      "threadblock_gbps", "must be >= 0"},
        JsonErrorCase{"host_switch_one_rank",
                      [](Json& d) { d["host_switches"] = one_switch("[0]", "", "h"); },
                      "host_switches[0].ranks", "at least two ranks"},
        JsonErrorCase{
            "host_switch_unknown_key",
            [](Json& d) { d["host_switches"] = one_switch("[0, 1]", R"(, "bw": 3)", "h"); },
            "host_switches[0].bw", "unknown key"},
        JsonErrorCase{
            "protocol_factor_zero",
            [](Json& d) { d["protocols"] = Json::parse(R"({"LL": {"beta_factor": 0}})"); },
            "protocols.LL.beta_factor", "must be positive"},
        JsonErrorCase{"protocol_unknown",
                      [](Json& d) { d["protocols"] = Json::parse(R"({"LL64": {}})"); },
                      "protocols.LL64", "unknown key"},
        JsonErrorCase{"node_unknown_rank", [](Json& d) { d["nodes"] = Json::parse("[[0, 1, 2]]"); },
                      "nodes[0]", "unknown rank 2"},
        JsonErrorCase{"missing_field", [](Json& d) { d["links"][0].erase("alpha_us"); },
                      "links[0].alpha_us", "missing"},
        JsonErrorCase{"wrong_type", [](Json& d) { d["ranks"] = "two"; }, "ranks", "integer"},
        JsonErrorCase{"unknown_key", [](Json& d) { d["link"] = 1; }, "link", "unknown key"},
        JsonErrorCase{"unknown_link_key", [](Json& d) { d["links"][0]["bw"] = 1; }, "links[0].bw",
                      "unknown key"},
        JsonErrorCase{"wrong_format", [](Json& d) { d["format"] = "ccsynth-algorithm"; }, "format",
                      "ccsynth-topology"},
        JsonErrorCase{"future_version", [](Json& d) { d["version"] = 2; }, "version",
                      "not supported"}),
    [](const auto& info) { return info.param.label; });

TEST(TopologyJson, PortGroupRoundTripsAndIsOptional) {
  Json doc = two_ranks();
  doc["ranks"] = 3;
  doc["nodes"] = Json::parse("[[0, 1, 2]]");
  doc["switches"] = Json::parse(
      R"([{"name": "nic", "ranks": [0, 1, 2], "alpha_us": 1.7, "port_beta_us_per_mb": 106,
           "kind": "ib", "port_group": [0, 0, 1]}])");
  const Topology t = topology_from_json(doc, "nic.json");
  ASSERT_EQ(t.switches.size(), 1u);
  EXPECT_EQ(t.switches[0].port_group, (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(t.switches[0].num_ports(), 2);
  EXPECT_EQ(t.switches[0].port_of_rank(1), 0);
  EXPECT_EQ(t.switches[0].port_of_rank(2), 1);
  EXPECT_TRUE(t.switches[0].has_shared_ports());
  const std::string text = write_topology_json(t);
  EXPECT_NE(text.find("\"port_group\": [0, 0, 1]"), std::string::npos) << text;
  EXPECT_EQ(topology_from_json(parse_json(text, "t.json"), "t.json"), t);
  // Without port_group nothing is written, so older documents round-trip byte for byte.
  Topology plain = t;
  plain.switches[0].port_group.clear();
  EXPECT_EQ(write_topology_json(plain).find("port_group"), std::string::npos);
  EXPECT_FALSE(plain.switches[0].has_shared_ports());
  EXPECT_NE(plain, t);
}

TEST(TopologyJson, ReadsFilesAndNamesMissingOnes) {
  const std::string path = ::testing::TempDir() + "/h1_dgx1.json";
  const Topology dgx1 = topologies::make_builtin("dgx1");
  {
    std::ofstream out(path);
    out << write_topology_json(dgx1);
  }
  EXPECT_EQ(read_topology_file(path), dgx1);
  EXPECT_EQ(topologies::resolve_topology(path), dgx1);
  std::remove(path.c_str());
  try {
    topologies::resolve_topology(path);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), path);
  }
  EXPECT_EQ(topologies::resolve_topology("ring:4").name, "ring:4");
}

TEST(TopologyJson, ShippedExamplesAreValid) {
  for (const char* name : {"dgx1.json", "ndv2x2.json", "dgx2x2.json", "custom_4gpu.json"}) {
    const std::string path = std::string(CCSYNTH_SOURCE_DIR) + "/examples/topologies/" + name;
    EXPECT_NO_THROW(read_topology_file(path)) << path;
  }
  for (const char* name : {"dgx1", "ndv2x2", "dgx2x2"}) {  // exported built-ins
    EXPECT_EQ(read_topology_file(std::string(CCSYNTH_SOURCE_DIR) + "/examples/topologies/" + name +
                                 ".json"),
              topologies::make_builtin(name))
        << name;
  }
}

TEST(TopologyJson, LaunchPortLanesAndProtocolsRoundTripAndAreOptional) {
  Json doc = two_ranks();
  doc["ranks"] = 3;
  doc["nodes"] = Json::parse("[[0, 1, 2]]");
  doc["launch_us"] = 6.6;
  doc["protocols"] = Json::parse(R"({"LL": {"alpha_factor": 0.4}, "LL128": {"beta_factor": 1.1}})");
  doc["switches"] = Json::parse(
      R"([{"name": "nvs", "ranks": [0, 1, 2], "alpha_us": 0.7, "port_beta_us_per_mb": 3.3,
           "kind": "nvswitch", "port_lanes": 4}])");
  const Topology t = topology_from_json(doc, "t.json");
  EXPECT_DOUBLE_EQ(t.launch_us, 6.6);
  EXPECT_EQ(t.switches[0].port_lanes, 4);
  EXPECT_DOUBLE_EQ(t.ll.alpha_factor, 0.4);
  EXPECT_DOUBLE_EQ(t.ll.beta_factor, 2.0);  // the default where not given
  EXPECT_DOUBLE_EQ(t.ll128.alpha_factor, 1.0);
  EXPECT_DOUBLE_EQ(t.ll128.beta_factor, 1.1);
  EXPECT_EQ(t.simple, ProtocolCost{});
  const std::string text = write_topology_json(t);
  EXPECT_NE(text.find("\"launch_us\": 6.6"), std::string::npos) << text;
  EXPECT_NE(text.find("\"port_lanes\": 4"), std::string::npos) << text;
  EXPECT_EQ(topology_from_json(parse_json(text, "t.json"), "t.json"), t);
  EXPECT_EQ(topology_from_json(topology_to_json(t), "t.json"), t);
  // Defaults are not written, so documents without the fields round-trip byte for byte.
  Topology plain = t;
  plain.launch_us = 0.0;
  plain.switches[0].port_lanes = 0;
  plain.ll = Topology{}.ll;
  plain.ll128 = Topology{}.ll128;
  const std::string plain_text = write_topology_json(plain);
  for (const char* key : {"launch_us", "port_lanes", "protocols"}) {
    EXPECT_EQ(plain_text.find(key), std::string::npos) << key << "\n" << plain_text;
  }
  EXPECT_EQ(topology_from_json(parse_json(plain_text, "t.json"), "t.json"), plain);
}

TEST(TopologyJson, MachinesCarryTheLaunchOverheadAndShapesDoNot) {
  EXPECT_GT(topologies::make_builtin("ndv4").launch_us, 0.0);
  EXPECT_EQ(topologies::make_builtin("dgx2x2").launch_us,
            topologies::make_builtin("dgx2").launch_us);
  EXPECT_EQ(topologies::make_builtin("ring:8").launch_us, 0.0);
  EXPECT_EQ(topologies::make_builtin("mesh2d:3x4").launch_us, 0.0);
}

TEST(TopologyJson, ThreadblockLimitAndHostSwitchesRoundTripAndAreOptional) {
  Json doc = two_ranks();
  doc["threadblock_gbps"] = 22.5;
  doc["host_switches"] = Json::parse(
      R"([{"name": "host", "ranks": [0, 1], "alpha_us": 0.7, "port_beta_us_per_mb": 87.4,
           "kind": "pcie", "port_group": [0, 0]}])");
  const Topology t = topology_from_json(doc, "t.json");
  EXPECT_DOUBLE_EQ(t.threadblock_gbps, 22.5);
  ASSERT_EQ(t.host_switches.size(), 1u);
  EXPECT_EQ(t.host_switches[0].port_group, (std::vector<int>{0, 0}));
  EXPECT_TRUE(t.switches.empty());
  const std::string text = write_topology_json(t);
  EXPECT_NE(text.find("\"threadblock_gbps\": 22.5"), std::string::npos) << text;
  EXPECT_NE(text.find("\"host_switches\""), std::string::npos) << text;
  EXPECT_EQ(topology_from_json(parse_json(text, "t.json"), "t.json"), t);
  Topology plain = t;
  plain.threadblock_gbps = 0.0;
  plain.host_switches.clear();
  const std::string plain_text = write_topology_json(plain);
  for (const char* key : {"threadblock_gbps", "host_switches"}) {
    EXPECT_EQ(plain_text.find(key), std::string::npos) << key << "\n" << plain_text;
  }
  // A socket link round-trips and is left out when there is none.
  Topology sockets = t;
  sockets.host_switches[0].port_group.clear();
  sockets.host_switches[0].port_socket = {0, 1};
  sockets.host_switches[0].socket_beta_us_per_mb = 174.8;
  const std::string sockets_text = write_topology_json(sockets);
  EXPECT_NE(sockets_text.find("\"port_socket\": [0, 1]"), std::string::npos) << sockets_text;
  EXPECT_NE(sockets_text.find("\"socket_beta_us_per_mb\": 174.8"), std::string::npos);
  EXPECT_EQ(topology_from_json(parse_json(sockets_text, "t.json"), "t.json"), sockets);
  EXPECT_EQ(text.find("port_socket"), std::string::npos) << text;
  EXPECT_EQ(text.find("socket_beta"), std::string::npos) << text;
  // The GPU machines carry both where documented (docs/topologies.md); the shapes neither.
  EXPECT_EQ(topologies::make_builtin("dgx1x2").host_switches.size(), 2u);
  EXPECT_EQ(topologies::make_builtin("dgx1x2").host_switches[1].num_sockets(), 2);
  EXPECT_EQ(topologies::make_builtin("ndv2").host_switches[0].num_sockets(), 1);
  EXPECT_GT(topologies::make_builtin("ndv4x2").threadblock_gbps, 0.0);
  EXPECT_EQ(topologies::make_builtin("ring:8").threadblock_gbps, 0.0);
  EXPECT_TRUE(topologies::make_builtin("mesh2d:3x4").host_switches.empty());
}

}  // namespace
}  // namespace ccsynth::formats
