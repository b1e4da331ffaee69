#include "ccsynth/synth/sketch.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "ccsynth/core/error.h"
#include "ccsynth/topologies/library.h"

namespace ccsynth::synth {
namespace {

namespace fs = std::filesystem;

// TACCL's published sketches, shipped in the repository (examples/sketches/taccl/, MIT licence).
const std::string kPublished = std::string(CCSYNTH_SOURCE_DIR) + "/examples/sketches/taccl/";
// The team's reference copy beside the checkout; optional, only used to check the in-repo copies.
const std::string kSharedSketches = std::string(CCSYNTH_SHARED_DIR) + "/taccl-sketches/";
const std::string kExamples = std::string(CCSYNTH_SOURCE_DIR) + "/examples/sketches/";

// The field named by the UserError thrown while parsing `text`.
std::string error_field(const std::string& text) {
  try {
    parse_sketch_text(text, "t.json");
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), "t.json");
    return e.field();
  }
  return "<no error>";
}

TEST(Sketch, EveryPublishedTacclSketchParses) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(kPublished)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    SCOPED_TRACE(entry.path().string());
    const Sketch s = read_sketch_file(entry.path().string());
    EXPECT_GE(s.nnodes, 1);
    EXPECT_GE(s.input_chunkup, 1);
    // Round trip through our serializer.
    Sketch again = parse_sketch(sketch_to_json(s), s.file);
    again.input_size = s.input_size;
    EXPECT_EQ(sketch_to_json(again), sketch_to_json(s));
  }
  EXPECT_EQ(files, 11);
}

// The whole content of a file.
std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The in-repo copies are the published files unchanged: same names, same bytes (and therefore
// the same parsed sketch). Needs the reference folder beside the checkout; skipped without it.
TEST(Sketch, InRepoCopiesMatchThePublishedOriginals) {
  if (!fs::is_directory(kSharedSketches)) {
    GTEST_SKIP() << "no reference copy of TACCL's sketches at " << kSharedSketches
                 << "; nothing to compare the in-repo copies in " << kPublished << " with";
  }
  std::set<std::string> originals, copies;
  for (const auto& e : fs::directory_iterator(kSharedSketches))
    if (e.path().extension() == ".json") originals.insert(e.path().filename().string());
  for (const auto& e : fs::directory_iterator(kPublished))
    if (e.path().extension() == ".json") copies.insert(e.path().filename().string());
  EXPECT_EQ(copies, originals);
  for (const std::string& name : originals) {
    SCOPED_TRACE(name);
    if (!copies.count(name)) continue;
    EXPECT_EQ(file_bytes(kPublished + name), file_bytes(kSharedSketches + name));
    EXPECT_EQ(sketch_to_json(read_sketch_file(kPublished + name)),
              sketch_to_json(read_sketch_file(kSharedSketches + name)));
  }
}

TEST(Sketch, Sk1Dgx2N2Fields) {
  const Sketch s = read_sketch_file(kPublished + "sk1-dgx2-n2.json");
  EXPECT_EQ(s.nnodes, 2);
  EXPECT_EQ(s.intranode.strategy, IntranodeStrategy::kSwitch);
  ASSERT_EQ(s.intranode.switches.size(), 1u);
  EXPECT_EQ(s.intranode.switches[0].size(), 16u);
  EXPECT_EQ(s.intranode.policies, std::vector<SwitchPolicy>{SwitchPolicy::kUcMin});
  EXPECT_EQ(s.internode.conn, InternodeConn::kMap);
  EXPECT_EQ(s.internode.conn_map.at(15), std::vector<int>{14});
  EXPECT_EQ(s.internode.sender_rev_map.at(3), (std::vector<int>{2, 3}));
  EXPECT_TRUE(s.internode.enforce_ordering);
  EXPECT_EQ(s.symmetry_offsets, (std::vector<std::pair<int, int>>{{2, 16}, {16, 32}}));
  EXPECT_EQ(s.input_chunkup, 2);
  EXPECT_FALSE(s.input_size.has_value());
  EXPECT_TRUE(s.may_relay(3, 2));
  EXPECT_FALSE(s.may_relay(3, 4));
  EXPECT_FALSE(s.may_relay(2, 2));  // not a sender
}

TEST(Sketch, Listing1WithCommentsAndChunkToRelayMap) {
  const Sketch s = parse_sketch_text(R"({
    // appendix A listing 1 style
    "intranode_sketch": {"strategy": "switch", "switches": [[0,1,2,3]],
                         "switch_hyperedge_strategy": ["uc-max"]},
    "nnodes": 2,
    "internode_sketch": {"strategy": "relay", "internode_conn": {"1": [0], "3": [2]},
                         "beta_split": {"1": 1, "3": 2}, "chunk_to_relay_map": [2, 1]},
    "symmetry_offsets": [[2, 4]],
    "hyperparameters": {"input_chunkup": 2, "input_size": "1M"}
  })",
                                     "l1.json");
  EXPECT_EQ(s.input_size, int64_t{1} << 20);
  EXPECT_DOUBLE_EQ(s.internode.beta_split.at(3), 2.0);
  // chunk_to_relay_map [2, 1]: chunk of GPU rp goes via (rp / 2) * 2 + 1.
  EXPECT_TRUE(s.may_relay(1, 0));
  EXPECT_TRUE(s.may_relay(3, 2));
  EXPECT_FALSE(s.may_relay(1, 2));
}

TEST(Sketch, ShippedExamplesParse) {
  for (const char* name : {"dgx2-sk-1", "dgx2-sk-2", "ndv2-sk-1", "ndv2-sk-2"}) {
    const Sketch s = read_sketch_file(kExamples + name + ".json");
    EXPECT_EQ(s.name, name);
    EXPECT_TRUE(s.input_size.has_value());
  }
  const Sketch sk1 = read_sketch_file(kExamples + "dgx2-sk-1.json");
  EXPECT_EQ(*sk1.input_size, 2 << 20);
  EXPECT_EQ(sk1.input_chunkup, 2);
  EXPECT_EQ(sk1.intranode.policies[0], SwitchPolicy::kUcMin);
  EXPECT_EQ(read_sketch_file(kExamples + "dgx2-sk-2.json").internode.conn,
            InternodeConn::kDirectMap);
}

TEST(Sketch, DefaultsOfAnEmptySketch) {
  const Sketch s = parse_sketch_text("{}", "e.json");
  EXPECT_EQ(s.nnodes, 1);
  EXPECT_EQ(s.intranode.strategy, IntranodeStrategy::kNone);
  EXPECT_FALSE(s.internode.present);
  EXPECT_EQ(s.input_chunkup, 1);
  EXPECT_TRUE(s.symmetry_offsets.empty());
}

TEST(Sketch, ErrorsNameTheField) {
  EXPECT_EQ(error_field(R"({"nnodes": 0})"), "nnodes");
  EXPECT_EQ(error_field(R"({"nodes": 2})"), "nodes");
  EXPECT_EQ(error_field(R"({"intranode_sketch": {"strategy": "ring"}})"),
            "intranode_sketch.strategy");
  EXPECT_EQ(error_field(R"({"intranode_sketch": {"strategy": "switch"}})"),
            "intranode_sketch.switches");
  EXPECT_EQ(error_field(R"({"intranode_sketch": {"strategy": "none", "switches": [[0,1]]}})"),
            "intranode_sketch.switches");
  EXPECT_EQ(error_field(R"({"intranode_sketch": {"strategy": "switch", "switches": [[0,1],[2,3]],
                            "switch_hyperedge_strategy": ["uc-min","uc-max","uc-min"]}})"),
            "intranode_sketch.switch_hyperedge_strategy");
  EXPECT_EQ(error_field(R"({"intranode_sketch": {"strategy": "switch", "switches": [[0,1]],
                            "switch_hyperedge_strategy": ["uc-mid"]}})"),
            "intranode_sketch.switch_hyperedge_strategy[0]");
  EXPECT_EQ(error_field(R"({"internode_sketch": {"strategy": "relay"}})"), "internode_sketch");
  EXPECT_EQ(error_field(R"({"nnodes": 2, "internode_sketch": {"strategy": "tree"}})"),
            "internode_sketch.strategy");
  EXPECT_EQ(error_field(R"({"nnodes": 2, "internode_sketch": {"internode_conn": "ring"}})"),
            "internode_sketch.internode_conn");
  EXPECT_EQ(error_field(R"({"nnodes": 2, "internode_sketch": {"internode_conn": {"x": [1]}}})"),
            "internode_sketch.internode_conn.x");
  // A relay map naming a GPU that sends nothing contradicts internode_conn.
  EXPECT_EQ(error_field(R"({"nnodes": 2, "internode_sketch": {"internode_conn": {"0": [1]},
                            "gpus_to_sender_rev_map": {"2": [2, 3]}}})"),
            "internode_sketch.gpus_to_sender_rev_map.2");
  EXPECT_EQ(error_field(R"({"nnodes": 2, "internode_sketch": {"internode_conn": {"1": [0]},
                            "gpus_to_sender_rev_map": {"1": [0, 1]}, "chunk_to_relay_map": [2, 0]}})"),
            "internode_sketch.chunk_to_relay_map");
  EXPECT_EQ(error_field(R"({"nnodes": 2, "internode_sketch": {"beta_split": {"0": 0.5}}})"),
            "internode_sketch.beta_split.0");
  EXPECT_EQ(error_field(R"({"symmetry_offsets": [[2]]})"), "symmetry_offsets[0]");
  EXPECT_EQ(error_field(R"({"symmetry_offsets": [[16, 16]]})"), "symmetry_offsets[0]");
  EXPECT_EQ(error_field(R"({"hyperparameters": {"input_chunkup": 0}})"),
            "hyperparameters.input_chunkup");
  EXPECT_EQ(error_field(R"({"hyperparameters": {"input_size": "lots"}})"),
            "hyperparameters.input_size");
  // Malformed JSON names its position, as in every JSON reader (formats::parse_json).
  EXPECT_EQ(error_field("{ not json"), "line 1 column 4");
  EXPECT_EQ(error_field(R"({"nnodes": 2, "nnodes": 2})"), "nnodes");  // duplicate key
  EXPECT_EQ(error_field(R"({"nnodes": 4294967298})"), "nnodes");      // not wrapped to 2
  EXPECT_THROW(read_sketch_file(kExamples + "missing.json"), UserError);
}

TEST(Sketch, FitsTopology) {
  const Topology dgx2x2 = topologies::make_builtin("dgx2x2");
  const Topology ndv2x2 = topologies::make_builtin("ndv2x2");
  EXPECT_NO_THROW(check_sketch_fits(read_sketch_file(kPublished + "sk1-dgx2-n2.json"), dgx2x2));
  try {
    check_sketch_fits(read_sketch_file(kPublished + "sk1-dgx2-n2.json"), ndv2x2);
    ADD_FAILURE() << "16-GPU node map accepted on 8-GPU nodes";
  } catch (const UserError& e) {
    EXPECT_EQ(e.field(), "intranode_sketch.switches[0]");
  }
  try {
    check_sketch_fits(read_sketch_file(kPublished + "sk1-ndv2-n4.json"), ndv2x2);
    ADD_FAILURE() << "4-node sketch accepted on 2 nodes";
  } catch (const UserError& e) {
    EXPECT_EQ(e.field(), "nnodes");
  }
}

TEST(LogicalTopology, Dgx2Sketch1KeepsRelayLinksOnly) {
  const Topology t = topologies::make_builtin("dgx2x2");
  const LogicalTopology lt =
      make_logical_topology(read_sketch_file(kPublished + "sk1-dgx2-n2.json"), t);
  int internode = 0, intranode = 0;
  for (const LogicalLink& l : lt.links) {
    if (l.internode) {
      ++internode;
      EXPECT_EQ(l.src % 2, 1);                // odd senders
      EXPECT_EQ(l.dst % 16, l.src % 16 - 1);  // to GPU 2k of the other node
      EXPECT_EQ(l.hyperedge, -1);
    } else {
      ++intranode;
      EXPECT_EQ(l.hyperedge, 0);
      EXPECT_GE(l.port, 0);  // NVSwitch port
    }
  }
  EXPECT_EQ(internode, 16);
  EXPECT_EQ(intranode, 2 * 16 * 15);
  EXPECT_EQ(lt.group.size(), 16u);  // rotations by 2 within nodes x node swap
  EXPECT_EQ(lt.policies, std::vector<SwitchPolicy>{SwitchPolicy::kUcMin});
  // Relay restriction: GPU 1 carries the chunks of GPUs 0 and 1 only.
  const int l1 = lt.find(1, 16);
  ASSERT_GE(l1, 0);
  EXPECT_TRUE(lt.allows(read_sketch_file(kPublished + "sk1-dgx2-n2.json"), 0, l1));
  EXPECT_FALSE(lt.allows(read_sketch_file(kPublished + "sk1-dgx2-n2.json"), 2, l1));
}

TEST(LogicalTopology, BetaSplitScalesInternodeBeta) {
  const Topology t = topologies::make_builtin("ndv2x2");
  const Sketch plain = parse_sketch_text(
      R"({"nnodes": 2, "internode_sketch": {"internode_conn": {"0": [1]}}})", "a.json");
  const Sketch split = parse_sketch_text(
      R"({"nnodes": 2, "internode_sketch": {"internode_conn": {"0": [1]}, "beta_split": {"0": 2}}})",
      "b.json");
  const LogicalTopology a = make_logical_topology(plain, t), b = make_logical_topology(split, t);
  const int la = a.find(0, 9), lb = b.find(0, 9);
  ASSERT_GE(la, 0);
  ASSERT_GE(lb, 0);
  EXPECT_DOUBLE_EQ(b.links[lb].beta_us_per_mb, 2 * a.links[la].beta_us_per_mb);
  EXPECT_EQ(a.find(1, 8), -1);  // GPU 1 is not a sender
}

TEST(LogicalTopology, RejectsBrokenSymmetryAndDisconnection) {
  const Topology t = topologies::make_builtin("ndv2x2");
  // Only GPU 0 of node 0's numbering sends, but offset 1 maps sender 0 to GPU 1.
  try {
    make_logical_topology(parse_sketch_text(R"({"nnodes": 2, "internode_sketch":
        {"internode_conn": {"0": [1]}}, "symmetry_offsets": [[1, 8]]})",
                                            "s.json"),
                          t);
    ADD_FAILURE() << "asymmetric offset accepted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.field(), "symmetry_offsets");
  }
  // GPU 2 of NDv2 has no NIC, so a sketch whose only sender is GPU 2 disconnects the nodes.
  try {
    make_logical_topology(parse_sketch_text(R"({"nnodes": 2, "internode_sketch":
        {"internode_conn": {"2": [2]}}})",
                                            "d.json"),
                          t);
    ADD_FAILURE() << "disconnected logical topology accepted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.field(), "internode_sketch");
  }
}

}  // namespace
}  // namespace ccsynth::synth
