#include "ccsynth/solvers/milp.h"

#include <gtest/gtest.h>

#include "ccsynth/core/error.h"

namespace ccsynth::solvers {
namespace {

// max 10a + 13b + 7c + 8d  s.t. 4a + 6b + 3c + 5d <= 10, binaries: optimum a+b = 23
// (a+c: 17, b+c: 20, a+d: 18, c+d: 15, a+b: 23 uses exactly 10).
MilpModel knapsack() {
  MilpModel m;
  const int a = m.add_binary(-10), b = m.add_binary(-13), c = m.add_binary(-7),
            d = m.add_binary(-8);
  m.add_le({{a, 4}, {b, 6}, {c, 3}, {d, 5}}, 10);
  return m;
}

TEST(Milp, KnapsackOptimum) {
  const MilpResult r = solve_milp(knapsack());
  ASSERT_EQ(r.status, MilpStatus::kOptimal);
  EXPECT_NEAR(r.objective, -23, 1e-6);
  EXPECT_EQ(r.values, (std::vector<double>{1, 1, 0, 0}));
  EXPECT_NEAR(r.gap, 0, 1e-6);
}

TEST(Milp, ContinuousLp) {
  // min x + y  s.t. x + 2y >= 4, 3x + y >= 6 -> x = 1.6, y = 1.2, objective 2.8.
  MilpModel m;
  const int x = m.add_var(0, kInfinity, false, 1), y = m.add_var(0, kInfinity, false, 1);
  m.add_ge({{x, 1}, {y, 2}}, 4);
  m.add_ge({{x, 3}, {y, 1}}, 6);
  const MilpResult r = solve_milp(m);
  ASSERT_EQ(r.status, MilpStatus::kOptimal);
  EXPECT_NEAR(r.objective, 2.8, 1e-6);
  EXPECT_NEAR(r.values[x], 1.6, 1e-6);
}

TEST(Milp, IntegerRoundingMatters) {
  // min -x - y s.t. 2x + 2y <= 3 integers: LP optimum 1.5, integer optimum 1.
  MilpModel m;
  const int x = m.add_var(0, 5, true, -1), y = m.add_var(0, 5, true, -1);
  m.add_le({{x, 2}, {y, 2}}, 3);
  const MilpResult r = solve_milp(m);
  ASSERT_EQ(r.status, MilpStatus::kOptimal);
  EXPECT_NEAR(r.objective, -1, 1e-6);
}

TEST(Milp, Infeasible) {
  MilpModel m;
  const int x = m.add_binary(1), y = m.add_binary(1);
  m.add_ge({{x, 1}, {y, 1}}, 3);
  const MilpResult r = solve_milp(m);
  EXPECT_EQ(r.status, MilpStatus::kInfeasible);
  EXPECT_FALSE(r.has_solution);
}

TEST(Milp, RepeatedTermsAreSummed) {
  MilpModel m;
  const int x = m.add_var(0, 10, false, -1);
  m.add_le({{x, 1}, {x, 1}}, 6);  // 2x <= 6
  EXPECT_EQ(m.row(0).size(), 1u);
  EXPECT_NEAR(solve_milp(m).values[x], 3, 1e-6);
}

TEST(Milp, MipStartIsValidatedAndKept) {
  const MilpModel m = knapsack();
  EXPECT_NEAR(m.max_violation({1, 1, 0, 0}), 0, 1e-12);
  EXPECT_NEAR(m.max_violation({1, 1, 1, 0}), 3, 1e-12);  // 13 > 10
  MilpOptions o;
  o.mip_start = {1, 1, 0, 0};  // already optimal
  const MilpResult r = solve_milp(m, o);
  EXPECT_EQ(r.status, MilpStatus::kOptimal);
  EXPECT_NEAR(r.objective, -23, 1e-6);
  o.mip_start = {1, 1, 1, 1};  // infeasible start is ignored, not trusted
  EXPECT_NEAR(solve_milp(m, o).objective, -23, 1e-6);
}

// A 3-constraint knapsack over 40 binaries with fixed pseudo-random weights: needs branching.
MilpModel multi_knapsack() {
  MilpModel m;
  uint32_t state = 12345;
  auto next = [&state] { return (state = state * 1103515245u + 12345u) / 65536u % 100 + 1; };
  std::vector<int> vars;
  for (int i = 0; i < 40; ++i) vars.push_back(m.add_binary(-static_cast<double>(next())));
  for (int row = 0; row < 3; ++row) {
    std::vector<Term> terms;
    for (int v : vars) terms.push_back({v, static_cast<double>(next())});
    m.add_le(terms, 700);
  }
  return m;
}

TEST(Milp, StallStopsWithTheIncumbentAndSaysFeasible) {
  const MilpModel m = multi_knapsack();
  MilpOptions o;
  o.mip_start.assign(40, 0.0);  // empty knapsack: feasible, objective 0
  o.stall_s = 1e-9;             // stop at the first node without a better solution
  const MilpResult stopped = solve_milp(m, o);
  ASSERT_TRUE(stopped.has_solution);
  EXPECT_LE(stopped.objective, 0.0);
  EXPECT_NEAR(m.max_violation(stopped.values), 0, 1e-6);
  EXPECT_EQ(stopped.status, MilpStatus::kFeasible) << "stopped early, not proven";
  EXPECT_GT(stopped.gap, 0);
  o.stall_s = 0;
  const MilpResult full = solve_milp(m, o);
  EXPECT_EQ(full.status, MilpStatus::kOptimal);
  EXPECT_LE(full.objective, stopped.objective + 1e-9);
}

TEST(Milp, StallWithoutIncumbentKeepsSearching) {
  MilpOptions o;
  o.stall_s = 1e-9;  // no MIP start: nothing to return yet, so the stall must not stop it
  const MilpResult r = solve_milp(multi_knapsack(), o);
  EXPECT_TRUE(r.has_solution);
}

TEST(Milp, EvaluateAndStatusNames) {
  const MilpModel m = knapsack();
  EXPECT_DOUBLE_EQ(m.evaluate({1, 0, 1, 0}), -17);
  EXPECT_EQ(m.num_integer(), 4);
  EXPECT_EQ(to_string(MilpStatus::kTimedOut), "timed-out");
  EXPECT_THROW(MilpModel().add_var(2, 1, false), InternalError);
}

}  // namespace
}  // namespace ccsynth::solvers
