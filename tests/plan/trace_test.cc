// Chrome trace-event JSON (plan/trace.h): the fields the format requires, one track per link
// and threadblock, and slices on a track that never overlap (Perfetto rejects those).

#include "ccsynth/plan/trace.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "ccsynth/core/error.h"
#include "ccsynth/runtime/harness.h"
#include "report_test_util.h"

namespace ccsynth::plan {
namespace {

using nlohmann::json;

struct Traced {
  Topology topology;
  Program program;
  sim::SimResult sim;
  json trace;
};

Traced traced(const std::string& topology, int64_t bytes) {
  Traced out;
  out.topology = topologies::make_builtin(topology);
  const PlanResult r = testing::plan_ring(out.topology, CollectiveKind::kAllReduce, {bytes});
  EXPECT_TRUE(r.ok());
  out.program = r.program->program;
  sim::SimOptions options;
  options.record_timeline = true;
  out.sim = sim::simulate(out.program, out.topology, bytes, options);
  out.trace = trace_json(out.sim, out.program, out.topology);
  return out;
}

// The trace-event format (Google's "Trace Event Format" document): every event has ph, pid
// and name; complete events ("X") have tid, ts and dur in microseconds; metadata events ("M")
// name processes and threads through args.
void expect_well_formed(const json& trace) {
  ASSERT_TRUE(trace.is_object());
  ASSERT_TRUE(trace.contains("traceEvents"));
  ASSERT_TRUE(trace["traceEvents"].is_array());
  for (const json& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e["ph"].is_string()) << e;
    ASSERT_TRUE(e.contains("name") && e["name"].is_string()) << e;
    ASSERT_TRUE(e.contains("pid") && e["pid"].is_number_integer()) << e;
    const std::string ph = e["ph"];
    if (ph == "X") {
      ASSERT_TRUE(e["tid"].is_number_integer()) << e;
      ASSERT_TRUE(e["ts"].is_number()) << e;
      ASSERT_TRUE(e["dur"].is_number()) << e;
      EXPECT_GE(e["ts"].get<double>(), 0.0) << e;
      EXPECT_GE(e["dur"].get<double>(), 0.0) << e;
      EXPECT_TRUE(e["cat"].is_string()) << e;
    } else {
      ASSERT_EQ(ph, "M") << e;
      ASSERT_TRUE(e["args"].is_object()) << e;
      const std::string name = e["name"];
      if (name == "thread_name" || name == "process_name") {
        EXPECT_TRUE(e["args"]["name"].is_string()) << e;
      }
      if (name.rfind("thread_", 0) == 0) {
        EXPECT_TRUE(e["tid"].is_number_integer()) << e;
      }
    }
  }
}

TEST(Trace, WellFormedOnLinks) { expect_well_formed(traced("dgx1", 4 << 20).trace); }

TEST(Trace, WellFormedOnSwitches) { expect_well_formed(traced("ndv2x2", 1 << 20).trace); }

TEST(Trace, OneSlicePerIntervalAndOneTrackPerLinkAndThreadblock) {
  const Traced t = traced("ndv2x2", 1 << 20);
  size_t steps = 0, transfers = 0;
  std::map<std::pair<int, int>, std::string> thread_names;
  std::map<int, std::string> process_names;
  for (const json& e : t.trace["traceEvents"]) {
    if (e["ph"] == "X") (e["cat"] == "step" ? steps : transfers) += 1;
    if (e["name"] == "thread_name") thread_names[{e["pid"], e["tid"]}] = e["args"]["name"];
    if (e["name"] == "process_name") process_names[e["pid"]] = e["args"]["name"];
  }
  EXPECT_EQ(steps, t.sim.timeline.steps.size());
  EXPECT_EQ(transfers, t.sim.timeline.links.size());
  ASSERT_EQ(process_names.size(), 1u + t.topology.num_ranks);
  EXPECT_EQ(process_names[0], "links");
  EXPECT_EQ(process_names[1], "rank 0");
  // Every link and port has a track named after it; every threadblock one named "tb T ...".
  std::set<std::string> names;
  for (const auto& [key, name] : thread_names) names.insert(name);
  for (const sim::LinkUsage& u : t.sim.links)
    EXPECT_TRUE(names.count(link_name(u))) << link_name(u);
  EXPECT_TRUE(names.count("port 0 egress"));
  for (const GpuProgram& gpu : t.program.gpus) {
    for (size_t tb = 0; tb < gpu.threadblocks.size(); ++tb) {
      const std::string& name = thread_names[{gpu.rank + 1, static_cast<int>(tb)}];
      EXPECT_EQ(name.rfind("tb " + std::to_string(tb) + " ", 0), 0u) << name;
    }
  }
}

TEST(Trace, SlicesOnATrackDoNotOverlap) {
  for (const char* topology : {"dgx1", "ndv2x2"}) {
    const Traced t = traced(topology, 4 << 20);
    std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> tracks;
    for (const json& e : t.trace["traceEvents"]) {
      if (e["ph"] != "X") continue;
      const double ts = e["ts"];
      tracks[{e["pid"], e["tid"]}].push_back({ts, ts + e["dur"].get<double>()});
    }
    for (auto& [track, slices] : tracks) {
      std::sort(slices.begin(), slices.end());
      for (size_t i = 1; i < slices.size(); ++i) {
        EXPECT_LE(slices[i - 1].second, slices[i].first + 1e-9)
            << topology << " pid " << track.first << " tid " << track.second;
      }
    }
  }
}

TEST(Trace, LinkRowsAreFirstFit) {
  const std::vector<sim::LinkInterval> intervals = {
      {0, 0, 0, 0.0, 2.0}, {0, 1, 0, 1.0, 3.0}, {0, 2, 0, 2.0, 4.0}, {1, 0, 0, 1.5, 2.5}};
  EXPECT_EQ(link_rows(intervals), (std::vector<int>{0, 1, 0, 0}));
}

// A run on the CPU runtime: one slice per executed step, one per message on its connection.
TEST(Trace, CpuRuntimeRun) {
  const Topology topology = topologies::make_builtin("ring:4");
  const PlanResult r = testing::plan_ring(topology, CollectiveKind::kAllReduce, {1 << 16});
  ASSERT_TRUE(r.ok());
  const Program& program = r.program->program;
  runtime::HarnessOptions options;
  options.exec.record_timeline = true;
  options.exec.slices = 2;
  const runtime::HarnessResult run = runtime::run_program(program, 1 << 16, options);
  ASSERT_TRUE(run.ok) << run.message;
  int64_t sends = 0, instances = 0;
  for (const GpuProgram& gpu : program.gpus) {
    for (const Threadblock& tb : gpu.threadblocks) {
      instances += static_cast<int64_t>(tb.steps.size()) * run.slices;
      for (const Step& step : tb.steps) sends += ccsynth::sends(step.type) ? run.slices : 0;
    }
  }
  ASSERT_EQ(static_cast<int64_t>(run.timeline.size()), instances);
  const json trace = trace_json(run.timeline, program);
  expect_well_formed(trace);
  int64_t steps = 0, messages = 0;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X") (e["cat"] == "step" ? steps : messages) += 1;
    if (e["ph"] == "X" && e["cat"] != "step") {
      EXPECT_LE(e["ts"].get<double>() + e["dur"].get<double>(),
                trace["otherData"]["time_us"].get<double>() + 1e-9);
    }
  }
  EXPECT_EQ(steps, instances);
  EXPECT_EQ(messages, sends);
  EXPECT_THROW(trace_json(std::vector<runtime::ExecStep>{}, program), UserError);
}

TEST(Trace, NeedsARecordedTimeline) {
  Traced t = traced("ring:4", 1 << 20);
  const sim::SimResult plain = sim::simulate(t.program, t.topology, 1 << 20);
  EXPECT_THROW(trace_json(plain, t.program, t.topology), UserError);
}

}  // namespace
}  // namespace ccsynth::plan
