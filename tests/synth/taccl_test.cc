#include "ccsynth/synth/taccl.h"

#include <gtest/gtest.h>

#include <string>

#include "ccsynth/core/error.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/verify_algorithm.h"

namespace ccsynth::synth {
namespace {

Sketch example(const std::string& name) {
  return read_sketch_file(std::string(CCSYNTH_SOURCE_DIR) + "/examples/sketches/" + name + ".json");
}

struct Case {
  std::string sketch;
  std::string topology;
  CollectiveKind kind;
};

class ShippedSketches : public testing::TestWithParam<Case> {};

TEST_P(ShippedSketches, SynthesizesAndVerifies) {
  const Case& c = GetParam();
  const Topology topology = topologies::make_builtin(c.topology);
  TacclOptions options;
  options.time_limit_s = 5;
  const TacclResult r = synthesize_taccl(topology, example(c.sketch), c.kind, options);
  ASSERT_TRUE(r.algorithm.has_value());
  const verify::VerifyReport report = verify::verify_algorithm(*r.algorithm, &topology);
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_GT(r.makespan_us, 0);
  for (const StageReport& s : r.stages) {
    std::cerr << c.sketch << " " << to_string(c.kind) << " " << s.name << " " << s.status << " "
              << s.seconds << "s obj=" << s.objective_us << " vars=" << s.variables
              << " rows=" << s.rows << " int=" << s.integers << "\n";
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (auto [sketch, topo] : {std::pair("dgx2-sk-1", "dgx2x2"), std::pair("dgx2-sk-2", "dgx2x2"),
                              std::pair("ndv2-sk-1", "ndv2x2"), std::pair("ndv2-sk-2", "ndv2x2")}) {
    for (CollectiveKind k : {CollectiveKind::kAllGather, CollectiveKind::kAllToAll,
                             CollectiveKind::kReduceScatter, CollectiveKind::kAllReduce}) {
      out.push_back({sketch, topo, k});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(All, ShippedSketches, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& info) {
                           std::string n = info.param.sketch + "_" + to_string(info.param.kind);
                           for (char& ch : n) {
                             if (ch == '-') ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace ccsynth::synth
