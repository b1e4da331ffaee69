#include "ccsynth/solvers/smt.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "ccsynth/core/error.h"

namespace ccsynth::solvers {
namespace {

std::vector<Lit> add_bools(SmtModel& m, int n) {
  std::vector<Lit> out;
  for (int i = 0; i < n; ++i) out.push_back(m.add_bool());
  return out;
}

int count_true(const SmtResult& r, const std::vector<Lit>& lits) {
  int n = 0;
  for (Lit l : lits) n += r.value(l);
  return n;
}

// Both engines must agree on every small model.
class Smt : public ::testing::TestWithParam<SmtEngine> {
 protected:
  SmtResult solve(const SmtModel& m) {
    SmtOptions o;
    o.engine = GetParam();
    return solve_smt(m, o);
  }
};

TEST(SmtLit, NegationAndConstants) {
  const Lit a = Lit::positive(3);
  EXPECT_EQ(a.var(), 3);
  EXPECT_FALSE(a.negated());
  EXPECT_TRUE((~a).negated());
  EXPECT_EQ((~a).var(), 3);
  EXPECT_EQ(~~a, a);
  EXPECT_TRUE(Lit::constant(true).is_true());
  EXPECT_TRUE((~Lit::constant(true)).is_false());
  EXPECT_TRUE(Lit().is_false());
  EXPECT_FALSE(a.is_constant());
}

TEST_P(Smt, ClausesAndImplicationsGiveAModel) {
  SmtModel m;
  const Lit a = m.add_bool("a"), b = m.add_bool("b"), c = m.add_bool();
  m.add_clause({a, b});
  m.add_clause({~a});
  m.add_implies(b, c);
  const SmtResult r = solve(m);
  ASSERT_EQ(r.status, SmtStatus::kSat);
  EXPECT_FALSE(r.value(a));
  EXPECT_TRUE(r.value(b));
  EXPECT_TRUE(r.value(c));
  EXPECT_FALSE(r.value(~c));
  EXPECT_TRUE(r.value(Lit::constant(true)));
  EXPECT_TRUE(m.satisfied_by(r.values));
}

TEST_P(Smt, ContradictionIsUnsat) {
  SmtModel m;
  const Lit a = m.add_bool(), b = m.add_bool();
  m.add_implies(a, b);
  m.add_implies(a, ~b);
  m.add_clause({a});
  EXPECT_EQ(solve(m).status, SmtStatus::kUnsat);
}

TEST(SmtModel, ConstantsAreFolded) {
  SmtModel m;
  const Lit a = m.add_bool();
  m.add_clause({a, Lit::constant(true)});  // always true: dropped
  m.add_implies(Lit::constant(false), a);  // always true: dropped
  EXPECT_EQ(m.num_constraints(), 0);
  m.add_clause({a, Lit::constant(false)});  // just a
  ASSERT_EQ(m.num_constraints(), 1);
  ASSERT_EQ(m.constraint(0).lits.size(), 1u);
  EXPECT_EQ(m.constraint(0).lits[0], a);
  m.add_at_most(std::vector<Lit>{a, Lit::constant(true)}, 1);  // a <= 0
  ASSERT_EQ(m.num_constraints(), 2);
  EXPECT_EQ(m.constraint(1).bound, 0);
  EXPECT_TRUE(m.constraint(1).coeffs.empty());
  EXPECT_FALSE(m.trivially_unsat());
  EXPECT_EQ(solve_smt(m).status, SmtStatus::kUnsat);
  m.add_clause({Lit::constant(false)});
  EXPECT_TRUE(m.trivially_unsat());
}

TEST(SmtModel, PseudoBooleanConstantsMoveIntoTheBound) {
  SmtModel m;
  const Lit a = m.add_bool(), b = m.add_bool();
  // 2a + 3 * true + 5 * false + b <= 4  ->  2a + b <= 1.
  m.add_pb_le(std::vector<Lit>{a, Lit::constant(true), Lit::constant(false), b},
              std::vector<int>{2, 3, 5, 1}, 4);
  ASSERT_EQ(m.num_constraints(), 1);
  const SmtConstraint c = m.constraint(0);
  EXPECT_EQ(c.kind, SmtConstraint::Kind::kPbLe);
  EXPECT_EQ(std::vector<Lit>(c.lits.begin(), c.lits.end()), (std::vector<Lit>{a, b}));
  EXPECT_EQ(std::vector<int>(c.coeffs.begin(), c.coeffs.end()), (std::vector<int>{2, 1}));
  EXPECT_EQ(c.bound, 1);
  m.add_pb_ge(std::vector<Lit>{a, b}, std::vector<int>{2, 1}, 0);  // always true: dropped
  EXPECT_EQ(m.num_constraints(), 1);
  EXPECT_TRUE(m.satisfied_by({0, 1}));
  EXPECT_FALSE(m.satisfied_by({1, 0}));
  m.add_pb_ge(std::vector<Lit>{a, b}, std::vector<int>{2, 1}, 4);  // at most 3: never
  EXPECT_TRUE(m.trivially_unsat());
}

TEST(SmtModel, RejectsBadInput) {
  SmtModel m;
  const Lit a = m.add_bool();
  EXPECT_THROW(m.add_clause({Lit::positive(1)}), InternalError);
  const std::vector<Lit> lits{a};
  const std::vector<int> coeffs{0};
  EXPECT_THROW(m.add_pb_le(lits, coeffs, 1), InternalError);
  EXPECT_THROW(m.add_pb_le(lits, std::vector<int>{1, 2}, 1), InternalError);
}

TEST_P(Smt, CardinalityBoundsAreExact) {
  SmtModel m;
  const std::vector<Lit> x = add_bools(m, 6);
  m.add_at_least(x, 2);
  m.add_at_most(x, 2);
  m.add_clause({x[0]});
  const SmtResult r = solve(m);
  ASSERT_EQ(r.status, SmtStatus::kSat);
  EXPECT_EQ(count_true(r, x), 2);
  EXPECT_TRUE(r.value(x[0]));

  m.add_at_least(std::vector<Lit>{x[1], x[2], x[3]}, 2);  // with x0: three true
  EXPECT_EQ(solve(m).status, SmtStatus::kUnsat);
}

TEST_P(Smt, AtMostOverNegatedLiterals) {
  SmtModel m;
  const std::vector<Lit> x = add_bools(m, 4);
  std::vector<Lit> negated;
  for (Lit l : x) negated.push_back(~l);
  m.add_at_most(negated, 1);  // at least three of x
  m.add_at_most(x, 3);
  const SmtResult r = solve(m);
  ASSERT_EQ(r.status, SmtStatus::kSat);
  EXPECT_EQ(count_true(r, x), 3);
}

TEST_P(Smt, PseudoBooleanConstraints) {
  // 3x + 2y + z <= 3 and x + y + z >= 2: only y = z = 1, x = 0.
  SmtModel m;
  const Lit x = m.add_bool(), y = m.add_bool(), z = m.add_bool();
  const std::vector<Lit> lits{x, y, z};
  m.add_pb_le(lits, std::vector<int>{3, 2, 1}, 3);
  m.add_pb_ge(lits, std::vector<int>{1, 1, 1}, 2);
  const SmtResult r = solve(m);
  ASSERT_EQ(r.status, SmtStatus::kSat);
  EXPECT_FALSE(r.value(x));
  EXPECT_TRUE(r.value(y));
  EXPECT_TRUE(r.value(z));
  EXPECT_TRUE(m.satisfied_by(r.values));

  // 2y + 2 * not(z) >= 3 needs y and not z: contradicts the above.
  m.add_pb_ge(std::vector<Lit>{y, ~z}, std::vector<int>{2, 2}, 3);
  EXPECT_EQ(solve(m).status, SmtStatus::kUnsat);
}

TEST_P(Smt, EmptyModelIsSat) {
  SmtModel m;
  const std::vector<Lit> x = add_bools(m, 3);
  const SmtResult r = solve(m);
  ASSERT_EQ(r.status, SmtStatus::kSat);
  EXPECT_EQ(r.values.size(), 3u);  // free variables read as false
  EXPECT_EQ(count_true(r, x), 0);
}

INSTANTIATE_TEST_SUITE_P(Engines, Smt, ::testing::Values(SmtEngine::kSatCore, SmtEngine::kSmtCore),
                         [](const auto& info) {
                           return info.param == SmtEngine::kSatCore ? "SatCore" : "SmtCore";
                         });

// Pigeonhole: `pigeons` into `holes`, each hole at most one pigeon, with pairwise clauses
// (exponential for resolution, so CDCL cannot refute 12-in-11 quickly).
SmtModel pigeonhole(int pigeons, int holes) {
  SmtModel m;
  std::vector<std::vector<Lit>> in(pigeons);
  for (auto& row : in) row = add_bools(m, holes);
  for (const auto& row : in) m.add_clause(row);
  for (int h = 0; h < holes; ++h) {
    for (int p = 0; p < pigeons; ++p) {
      for (int q = p + 1; q < pigeons; ++q) m.add_clause({~in[p][h], ~in[q][h]});
    }
  }
  return m;
}

TEST(SmtTimeLimit, SmallPigeonholeIsUnsat) {
  EXPECT_EQ(solve_smt(pigeonhole(5, 4)).status, SmtStatus::kUnsat);
}

TEST(SmtTimeLimit, HardInstanceTimesOutQuickly) {
  SmtOptions o;
  o.time_limit_s = 0.5;
  const auto start = std::chrono::steady_clock::now();
  const SmtResult r = solve_smt(pigeonhole(12, 11), o);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.status, SmtStatus::kTimedOut) << r.reason;
  EXPECT_LT(wall, 5.0);  // the limit plus slack for a loaded machine
  EXPECT_TRUE(r.values.empty());
}

TEST(SmtStatus, Names) {
  EXPECT_EQ(to_string(SmtStatus::kSat), "sat");
  EXPECT_EQ(to_string(SmtStatus::kUnsat), "unsat");
  EXPECT_EQ(to_string(SmtStatus::kTimedOut), "timed-out");
  EXPECT_EQ(to_string(SmtStatus::kUnknown), "unknown");
}

}  // namespace
}  // namespace ccsynth::solvers
