#include "ccsynth/core/topology.h"

#include <gtest/gtest.h>

#include "ccsynth/core/error.h"

namespace ccsynth {
namespace {

Topology small_ring(int n) {
  Topology t;
  t.name = "ring";
  t.num_ranks = n;
  t.nodes = {{}};
  for (int r = 0; r < n; ++r) {
    t.nodes[0].push_back(r);
    t.links.push_back({r, (r + 1) % n, 1, 0.5, 20.0, "generic"});
    t.links.push_back({(r + 1) % n, r, 1, 0.5, 20.0, "generic"});
  }
  return t;
}

TEST(Topology, RingDistancesAndDiameter) {
  const Topology t = small_ring(6);
  EXPECT_NO_THROW(validate(t));
  EXPECT_EQ(t.diameter(), 3);
  EXPECT_EQ(t.hop_distances_from(0), std::vector<int>({0, 1, 2, 3, 2, 1}));
  ASSERT_NE(t.find_link(2, 3), nullptr);
  EXPECT_EQ(t.find_link(0, 3), nullptr);
}

TEST(Topology, SwitchConnectsAllPairsAndCheaperLinkWins) {
  Topology t;
  t.num_ranks = 3;
  t.switches.push_back({"sw", {0, 1, 2}, 0.7, 8.0, "nvswitch"});
  t.links.push_back({0, 1, 1, 0.7, 4.0, "nvlink"});
  EXPECT_NO_THROW(validate(t));
  EXPECT_EQ(t.diameter(), 1);
  EXPECT_EQ(t.connections().size(), 6u);
  EXPECT_EQ(t.connection(0, 1)->link_index, 0);
  EXPECT_EQ(t.connection(1, 0)->switch_index, 0);
  EXPECT_NEAR(t.connection(1, 2)->cost_us(1024.0 * 1024.0), 8.7, 1e-9);
}

TEST(Topology, ValidationErrorsNameTheField) {
  auto expect_error = [](const Topology& t, const std::string& field) {
    try {
      validate(t, "t.json");
      ADD_FAILURE() << "no error for " << field;
    } catch (const UserError& e) {
      EXPECT_EQ(e.file(), "t.json");
      EXPECT_EQ(e.field().rfind(field, 0), 0u) << e.what();
    }
  };
  Topology t = small_ring(4);
  t.links[2].dst = 9;
  expect_error(t, "links[2].dst");
  t = small_ring(4);
  t.links[1].beta_us_per_mb = 0;
  expect_error(t, "links[1]");
  t = small_ring(4);
  t.links.push_back(t.links[0]);
  expect_error(t, "links[8]");
  t = small_ring(4);
  t.links[0].lanes = 0;
  expect_error(t, "links[0].lanes");
  t = small_ring(4);
  t.links.erase(t.links.begin(), t.links.begin() + 2);  // 0 <-> 1 gone, still a line
  EXPECT_NO_THROW(validate(t));
  t.links.erase(t.links.begin(), t.links.begin() + 2);  // 1 <-> 2 gone: rank 1 cut off
  expect_error(t, "links");
  t = small_ring(4);
  t.nodes = {{0, 1}, {1, 2, 3}};
  expect_error(t, "nodes[1]");
  t = small_ring(4);
  t.num_ranks = 0;
  expect_error(t, "ranks");
  t = small_ring(4);
  t.switches.push_back({"nic", {0, 1, 2}, 1.0, 8.0, "ib", {0, 0}});
  expect_error(t, "switches[0].port_group");
  t.switches[0].port_group = {0, 2, 2};  // id 1 unused
  expect_error(t, "switches[0].port_group");
  t.switches[0].port_group = {0, 3, 1};  // out of range
  expect_error(t, "switches[0].port_group");
  t.switches[0].port_group = {1, 0, 1};
  EXPECT_NO_THROW(validate(t));
}

TEST(Topology, SharedSwitchPorts) {
  Switch sw{"nic", {4, 5, 6, 7}, 1.0, 106.0, "ib", {0, 0, 1, 1}};
  EXPECT_EQ(sw.num_ports(), 2);
  EXPECT_TRUE(sw.has_shared_ports());
  EXPECT_EQ(sw.port_of_member(2), 1);
  EXPECT_EQ(sw.port_of_rank(5), 0);
  EXPECT_EQ(sw.port_of_rank(7), 1);
  EXPECT_EQ(sw.port_of_rank(3), -1);
  EXPECT_EQ(sw.port_members(), (std::vector<std::vector<int>>{{4, 5}, {6, 7}}));
  Switch own{"sw", {2, 0, 1}, 0.7, 8.0, "nvswitch"};  // default: one port per member
  EXPECT_EQ(own.num_ports(), 3);
  EXPECT_FALSE(own.has_shared_ports());
  EXPECT_EQ(own.port_of_rank(0), 1);
  EXPECT_EQ(own.port_members(), (std::vector<std::vector<int>>{{2}, {0}, {1}}));
  // A switch connection still costs the port beta per transfer.
  Topology t;
  t.num_ranks = 4;
  t.nodes = {{0, 1}, {2, 3}};
  t.switches.push_back({"nic", {0, 1, 2, 3}, 1.0, 106.0, "ib", {0, 0, 1, 1}});
  validate(t);
  EXPECT_NEAR(t.connection(0, 2)->cost_us(1024.0 * 1024.0), 107.0, 1e-9);
  EXPECT_EQ(t.connections().size(), 12u);
}

}  // namespace
}  // namespace ccsynth
