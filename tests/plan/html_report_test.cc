// The HTML report (plan/html_report.h): self-contained, one mark per candidate, link and
// interval, and the numbers shown are the simulator's.

#include "ccsynth/plan/html_report.h"

#include <gtest/gtest.h>

#include <regex>

#include "ccsynth/core/error.h"
#include "ccsynth/sim/simulate.h"
#include "report_test_util.h"

namespace ccsynth::plan {
namespace {

using testing::candidates_of;
using testing::count;

const std::vector<int64_t> kSizes = {4096, 1 << 20, 16 << 20};

class HtmlReport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    topology_ = new Topology(topologies::make_builtin("ndv2x2"));
    result_ = new PlanResult(testing::plan_ring(*topology_, CollectiveKind::kAllGather, kSizes));
    ASSERT_TRUE(result_->ok());
    ASSERT_TRUE(result_->nccl.has_value());
    html_ =
        new std::string(html_report(*topology_, result_->collective, candidates_of(*result_), {}));
  }
  static void TearDownTestSuite() {
    delete html_;
    delete result_;
    delete topology_;
  }
  static Topology* topology_;
  static PlanResult* result_;
  static std::string* html_;
};
Topology* HtmlReport::topology_ = nullptr;
PlanResult* HtmlReport::result_ = nullptr;
std::string* HtmlReport::html_ = nullptr;

TEST_F(HtmlReport, IsSelfContained) {
  const std::string& html = *html_;
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<script"), 0u);
  EXPECT_EQ(count(html, "http://"), 0u);
  EXPECT_EQ(count(html, "https://"), 0u);
  EXPECT_EQ(count(html, " src="), 0u);
  EXPECT_EQ(count(html, " href="), 0u);
  EXPECT_EQ(count(html, "<style>"), 1u);
}

TEST_F(HtmlReport, OneCurvePerCandidateAndTheBoundInEachChart) {
  // Two charts (time, busbw), each with nccl and ring and the lower bound.
  EXPECT_EQ(count(*html_, "<polyline class=\"curve\""), 2u * 2u);
  EXPECT_EQ(count(*html_, "<polyline class=\"bound\""), 2u);
  EXPECT_EQ(count(*html_, "<circle class=\"point\""), 2u * 3u * kSizes.size());
}

TEST_F(HtmlReport, OneEdgePerLinkAndSwitchPort) {
  size_t ports = 0;
  for (const Switch& sw : topology_->switches) ports += sw.ranks.size();
  EXPECT_EQ(count(*html_, "<line class=\"link\""), topology_->links.size());
  EXPECT_EQ(count(*html_, "<line class=\"port\""), ports);
  EXPECT_EQ(count(*html_, "<g class=\"switch\">"), topology_->switches.size());
  EXPECT_EQ(count(*html_, "<g class=\"node\">"), topology_->nodes.size());
  EXPECT_EQ(count(*html_, "<g class=\"rank\">"), static_cast<size_t>(topology_->num_ranks));
}

// The timeline is of the fastest candidate at the largest size: one rectangle per step
// instance and per transfer hop the simulator recorded.
TEST_F(HtmlReport, TimelineDrawsEveryRecordedInterval) {
  const int64_t bytes = kSizes.back();
  const Evaluated& fastest =
      result_->nccl->results.back().time_us <= result_->program->results.back().time_us
          ? *result_->nccl
          : *result_->program;
  sim::SimOptions options;
  options.record_timeline = true;
  const sim::SimResult sim = sim::simulate(fastest.program, *topology_, bytes, options);
  ASSERT_FALSE(sim.timeline.truncated);
  ASSERT_LT(sim.timeline.steps.size(), 20000u);
  EXPECT_EQ(count(*html_, "<rect class=\"step\""), sim.timeline.steps.size());
  EXPECT_EQ(count(*html_, "<rect class=\"busy\""), sim.timeline.links.size());
  EXPECT_EQ(count(*html_, "<title>"), count(*html_, "</title>"));
}

// Golden: every time and busbw in the results table is what the simulator returns for that
// program and size, to the last digit.
TEST_F(HtmlReport, NumbersAreTheSimulators) {
  const std::regex cell("data-candidate=\"(\\w+)\" data-(time-us|busbw-gbps)=\"([^\"]+)\"");
  std::map<std::string, std::vector<double>> times, busbw;
  for (auto it = std::sregex_iterator(html_->begin(), html_->end(), cell);
       it != std::sregex_iterator(); ++it) {
    auto& into = (*it)[2] == "time-us" ? times : busbw;
    into[(*it)[1]].push_back(std::stod((*it)[3]));
  }
  ASSERT_EQ(times.size(), 2u);
  for (const auto& [name, evaluated] :
       {std::pair{"nccl", &*result_->nccl}, std::pair{"ring", &*result_->program}}) {
    ASSERT_EQ(times[name].size(), kSizes.size()) << name;
    for (size_t i = 0; i < kSizes.size(); ++i) {
      // The result kept per size is one variant; simulate the kept program where it won.
      const SizedResult& r = evaluated->results[i];
      EXPECT_EQ(times[name][i], r.time_us) << name << " " << kSizes[i];
      EXPECT_EQ(busbw[name][i], r.busbw_gbps) << name << " " << kSizes[i];
    }
    const sim::SimResult last = sim::simulate(evaluated->program, *topology_, kSizes.back());
    EXPECT_EQ(times[name].back(), last.time_us) << name;
    EXPECT_EQ(busbw[name].back(), last.busbw_gbps) << name;
  }
  EXPECT_EQ(count(*html_, "data-bound-us="), kSizes.size());
}

TEST_F(HtmlReport, ShowsVerdictsAndStatistics) {
  EXPECT_EQ(count(*html_, "<span class=\"ok\">verified</span>"), 4u);  // algorithm + program
  EXPECT_EQ(count(*html_, "<tr data-candidate="), 2u);
}

TEST(HtmlReportErrors, NoVerifiedCandidateIsAUserError) {
  const Topology t = topologies::make_builtin("ring:4");
  ReportCandidate skipped{"tacos", nullptr, "timed out", "", 0.0, nullptr};
  EXPECT_THROW(html_report(t, make_collective(CollectiveKind::kAllGather, 4, 1), {skipped}),
               UserError);
}

TEST(HtmlReportErrors, DetailSizeMustBeSimulated) {
  const Topology t = topologies::make_builtin("ring:4");
  const PlanResult r = testing::plan_ring(t, CollectiveKind::kAllGather, {1024});
  ReportOptions options;
  options.detail_bytes = 2048;
  EXPECT_THROW(html_report(t, r.collective, candidates_of(r), options), UserError);
}

TEST(HtmlReportEscaping, NamesAreEscaped) {
  const Topology t = topologies::make_builtin("ring:4");
  const PlanResult r = testing::plan_ring(t, CollectiveKind::kAllGather, {1024, 4096});
  std::vector<ReportCandidate> candidates = candidates_of(r);
  candidates.back().name = "<b>&\"x\"";
  ReportOptions options;
  options.title = "a < b";
  const std::string html = html_report(t, r.collective, candidates, options);
  EXPECT_EQ(count(html, "<b>"), 0u);
  EXPECT_GT(count(html, "&lt;b&gt;&amp;&quot;x&quot;"), 0u);
  EXPECT_GT(count(html, "<title>a &lt; b</title>"), 0u);
}

}  // namespace
}  // namespace ccsynth::plan
