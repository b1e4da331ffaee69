#include "ccsynth/synth/taccl.h"

#include <gtest/gtest.h>

#include <string>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/compiler/schedule_order.h"
#include "ccsynth/core/error.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"

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

// gtest prints a case as "sketch collective".
void PrintTo(const Case& c, std::ostream* os) { *os << c.sketch << " " << to_string(c.kind); }

class ShippedSketches : public testing::TestWithParam<Case> {};

TEST_P(ShippedSketches, SynthesizesAndVerifies) {
  const Case& c = GetParam();
  const Topology topology = topologies::make_builtin(c.topology);
  TacclOptions options;
  options.time_limit_s = 1;  // short: a timed-out stage still returns its incumbent
  const TacclResult r = synthesize_taccl(topology, example(c.sketch), c.kind, options);
  ASSERT_TRUE(r.algorithm.has_value());
  const verify::VerifyReport report = verify::verify_algorithm(*r.algorithm, &topology);
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_GT(r.makespan_us, 0);
  // Stage 3 starts from the stage 2 schedule, so it can only improve it.
  ASSERT_GE(r.stages.size(), 3u);
  const StageReport& ordering = r.stages[r.stages.size() - 2];
  EXPECT_EQ(ordering.name, "ordering");
  EXPECT_LE(r.makespan_us, ordering.objective_us + 1e-6);
  EXPECT_EQ(r.algorithm->collective.kind, c.kind);
  for (const ChunkOp& op : r.algorithm->ops) {
    EXPECT_EQ(op.kind, c.kind == CollectiveKind::kReduceScatter ? OpKind::kReduce
                       : c.kind == CollectiveKind::kAllReduce   ? op.kind
                                                                : OpKind::kCopy);
  }
  // The schedule's start times respect its dependencies, so the program can also run in
  // start-time order; that program is correct too.
  ASSERT_TRUE(compiler::has_schedule_order(*r.algorithm));
  compiler::CompileOptions ordered;
  ordered.schedule_order = true;
  const Program program = compiler::compile(*r.algorithm, ordered);
  verify::VerifyProgramOptions vo;
  vo.collective = &r.algorithm->collective;
  const verify::VerifyReport program_report = verify::verify_program(program, vo);
  EXPECT_TRUE(program_report.ok()) << program_report.summary();
  EXPECT_NE(program, compiler::compile(*r.algorithm));  // the order changed something
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
