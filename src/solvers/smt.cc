#include "ccsynth/solvers/smt.h"
#include "ccsynth/core/timing.h"

#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "ccsynth/core/error.h"

namespace ccsynth::solvers {

namespace {

using Clock = std::chrono::steady_clock;
using Kind = SmtConstraint::Kind;

bool is_upper(Kind kind) { return kind == Kind::kAtMost || kind == Kind::kPbLe; }

// Sum of coeffs[i] over the true lits[i] of `values` (all coefficients 1 for cardinalities).
int64_t weighted_true(const SmtConstraint& c, const std::vector<uint8_t>& values) {
  int64_t sum = 0;
  for (size_t i = 0; i < c.lits.size(); ++i) {
    const bool v = (values[c.lits[i].var()] != 0) != c.lits[i].negated();
    if (v) sum += c.coeffs.empty() ? 1 : c.coeffs[i];
  }
  return sum;
}

}  // namespace

std::string to_string(SmtStatus status) {
  switch (status) {
    case SmtStatus::kSat: return "sat";
    case SmtStatus::kUnsat: return "unsat";
    case SmtStatus::kTimedOut: return "timed-out";
    case SmtStatus::kUnknown: return "unknown";
  }
  return "unknown";
}

Lit SmtModel::add_bool(std::string name) {
  names_.push_back(std::move(name));
  return Lit::positive(num_vars() - 1);
}

void SmtModel::check_var(Lit lit) const {
  CCSYNTH_CHECK(lit.var() >= 0 && lit.var() < num_vars())
      << "literal of unknown variable " << lit.var();
}

void SmtModel::add_clause(std::span<const Lit> lits) {
  const int begin = static_cast<int>(lits_.size());
  for (Lit lit : lits) {
    if (lit.is_true()) {  // satisfied whatever the variables are
      lits_.resize(begin);
      return;
    }
    if (lit.is_false()) continue;
    check_var(lit);
    lits_.push_back(lit);
  }
  const int size = static_cast<int>(lits_.size()) - begin;
  if (size == 0) {
    trivially_unsat_ = true;
    return;
  }
  rows_.push_back({Kind::kClause, begin, size, -1, 0});
}

void SmtModel::add_at_most(std::span<const Lit> lits, int k) {
  add_linear(Kind::kAtMost, lits, {}, k);
}

void SmtModel::add_at_least(std::span<const Lit> lits, int k) {
  add_linear(Kind::kAtLeast, lits, {}, k);
}

void SmtModel::add_pb_le(std::span<const Lit> lits, std::span<const int> coeffs, int k) {
  CCSYNTH_CHECK(coeffs.size() == lits.size())
      << lits.size() << " literals, " << coeffs.size() << " coefficients";
  add_linear(Kind::kPbLe, lits, coeffs, k);
}

void SmtModel::add_pb_ge(std::span<const Lit> lits, std::span<const int> coeffs, int k) {
  CCSYNTH_CHECK(coeffs.size() == lits.size())
      << lits.size() << " literals, " << coeffs.size() << " coefficients";
  add_linear(Kind::kPbGe, lits, coeffs, k);
}

// Folds constant literals into the bound; drops the constraint when it holds for every
// assignment and marks the model unsatisfiable when it holds for none.
void SmtModel::add_linear(Kind kind, std::span<const Lit> lits, std::span<const int> coeffs,
                          int k) {
  const bool weighted = kind == Kind::kPbLe || kind == Kind::kPbGe;
  const int begin = static_cast<int>(lits_.size());
  const int coeff_begin = weighted ? static_cast<int>(coeffs_.size()) : -1;
  int64_t bound = k;
  int64_t total = 0;  // the largest value of the sum
  for (size_t i = 0; i < lits.size(); ++i) {
    const int coef = weighted ? coeffs[i] : 1;
    CCSYNTH_CHECK(coef > 0) << "pseudo-Boolean coefficient " << coef << " is not positive";
    if (lits[i].is_false()) continue;
    if (lits[i].is_true()) {
      bound -= coef;
      continue;
    }
    check_var(lits[i]);
    lits_.push_back(lits[i]);
    if (weighted) coeffs_.push_back(coef);
    total += coef;
  }
  const bool always = is_upper(kind) ? total <= bound : bound <= 0;
  const bool never = is_upper(kind) ? bound < 0 : total < bound;
  if (never) trivially_unsat_ = true;
  if (always || never) {
    lits_.resize(begin);
    if (weighted) coeffs_.resize(coeff_begin);
    return;
  }
  const int size = static_cast<int>(lits_.size()) - begin;
  rows_.push_back({kind, begin, size, coeff_begin, static_cast<int>(bound)});
}

SmtConstraint SmtModel::constraint(int i) const {
  const Row& row = rows_[i];
  SmtConstraint c;
  c.kind = row.kind;
  c.lits = std::span<const Lit>(lits_.data() + row.begin, row.size);
  if (row.coeff_begin >= 0) {
    c.coeffs = std::span<const int>(coeffs_.data() + row.coeff_begin, row.size);
  }
  c.bound = row.bound;
  return c;
}

bool SmtModel::satisfied_by(const std::vector<uint8_t>& values) const {
  if (trivially_unsat_ || static_cast<int>(values.size()) != num_vars()) return false;
  for (int i = 0; i < num_constraints(); ++i) {
    const SmtConstraint c = constraint(i);
    if (c.kind == Kind::kClause) {
      if (weighted_true(c, values) == 0) return false;
    } else if (is_upper(c.kind) ? weighted_true(c, values) > c.bound
                                : weighted_true(c, values) < c.bound) {
      return false;
    }
  }
  return true;
}

namespace {

// The model's variables and constraints as Z3 expressions, added to one solver.
class Z3Translation {
 public:
  Z3Translation(const SmtModel& model, z3::context& ctx) : model_(model), ctx_(ctx), vars_(ctx) {
    for (int v = 0; v < model.num_vars(); ++v) {
      const std::string& name = model.name(v);
      vars_.push_back(name.empty() ? ctx.constant(ctx.int_symbol(v), ctx.bool_sort())
                                   : ctx.bool_const(name.c_str()));
    }
  }

  void add_all(z3::solver& solver) const {
    for (int i = 0; i < model_.num_constraints(); ++i) solver.add(constraint(model_.constraint(i)));
  }

  std::vector<uint8_t> values(const z3::model& m) const {
    std::vector<uint8_t> out(vars_.size());
    for (unsigned v = 0; v < vars_.size(); ++v) out[v] = m.eval(vars_[v], true).is_true();
    return out;
  }

 private:
  z3::expr literal(Lit lit) const { return lit.negated() ? !vars_[lit.var()] : vars_[lit.var()]; }

  z3::expr_vector literals(const SmtConstraint& c) const {
    z3::expr_vector out(ctx_);
    for (Lit lit : c.lits) out.push_back(literal(lit));
    return out;
  }

  z3::expr constraint(const SmtConstraint& c) const {
    const z3::expr_vector lits = literals(c);
    switch (c.kind) {
      case Kind::kClause: return lits.size() == 1 ? lits[0] : z3::mk_or(lits);
      case Kind::kAtMost: return z3::atmost(lits, static_cast<unsigned>(c.bound));
      case Kind::kAtLeast: return z3::atleast(lits, static_cast<unsigned>(c.bound));
      case Kind::kPbLe: return z3::pble(lits, c.coeffs.data(), c.bound);
      case Kind::kPbGe: return z3::pbge(lits, c.coeffs.data(), c.bound);
    }
    CCSYNTH_CHECK(false) << "unknown constraint kind";
    return ctx_.bool_val(false);
  }

  const SmtModel& model_;
  z3::context& ctx_;
  z3::expr_vector vars_;
};

// Z3 answers "unknown" with a reason; a time limit shows as "timeout" or "canceled".
bool is_timeout(const std::string& reason) {
  return reason.find("timeout") != std::string::npos ||
         reason.find("canceled") != std::string::npos;
}

SmtResult solve_with_z3(const SmtModel& model, const SmtOptions& options) {
  SmtResult result;
  const auto start = Clock::now();
  z3::context ctx;
  z3::solver solver =
      options.engine == SmtEngine::kSatCore ? z3::solver(ctx, "QF_FD") : z3::solver(ctx);
  if (options.time_limit_s > 0) {
    z3::params p(ctx);
    p.set("timeout", static_cast<unsigned>(std::max(1.0, options.time_limit_s * 1000)));
    solver.set(p);
  }
  const Z3Translation translation(model, ctx);
  translation.add_all(solver);
  result.build_s = seconds_since(start);
  const auto solve_start = Clock::now();
  const z3::check_result answer = solver.check();
  result.solve_s = seconds_since(solve_start);
  if (answer == z3::sat) {
    result.status = SmtStatus::kSat;
    result.values = translation.values(solver.get_model());
  } else if (answer == z3::unsat) {
    result.status = SmtStatus::kUnsat;
  } else {
    result.reason = solver.reason_unknown();
    result.status = is_timeout(result.reason) ? SmtStatus::kTimedOut : SmtStatus::kUnknown;
  }
  return result;
}

}  // namespace

SmtResult solve_smt(const SmtModel& model, const SmtOptions& options) {
  if (model.trivially_unsat()) {
    SmtResult result;
    result.status = SmtStatus::kUnsat;
    return result;
  }
  try {
    return solve_with_z3(model, options);
  } catch (const z3::exception& e) {
    throw InternalError(std::string("Z3: ") + e.msg());
  }
}

void set_smt_global_param(const std::string& name, const std::string& value) {
  z3::set_param(name.c_str(), value.c_str());
}

}  // namespace ccsynth::solvers
