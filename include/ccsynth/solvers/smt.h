#pragma once
// A small Boolean SMT interface (DESIGN.md sec. 2, `solvers`): build a model of Boolean
// variables with clauses, cardinality (at most / at least k) and pseudo-Boolean (sum of weighted
// literals <= / >= k) constraints, then decide it with Z3 under a time limit and read the values
// of a satisfying assignment. Callers never see Z3 types.

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace ccsynth::solvers {

/// A Boolean literal: a variable of an SmtModel or its negation, or one of the constants true
/// and false (the model simplifies constants away). Cheap to copy.
class Lit {
 public:
  constexpr Lit() = default;  // the constant false
  /// The literal "variable `var` is true".
  static constexpr Lit positive(int var) { return Lit(2 * var); }
  static constexpr Lit constant(bool value) { return Lit(value ? kTrue : kFalse); }

  constexpr bool is_constant() const { return code_ < 0; }
  constexpr bool is_true() const { return code_ == kTrue; }
  constexpr bool is_false() const { return code_ == kFalse; }
  /// The variable (not for constants) and whether the literal is its negation.
  constexpr int var() const { return code_ >> 1; }
  constexpr bool negated() const { return (code_ & 1) != 0; }

  constexpr Lit operator~() const {
    return Lit(is_constant() ? kTrue + kFalse - code_ : code_ ^ 1);
  }
  constexpr bool operator==(const Lit&) const = default;

 private:
  static constexpr int kTrue = -1;
  static constexpr int kFalse = -2;
  constexpr explicit Lit(int code) : code_(code) {}
  int code_ = kFalse;
};

/// A constraint over literals (a view into an SmtModel, valid until the model changes); kind says
/// how `lits`, `coeffs` and `bound` are read.
struct SmtConstraint {
  enum class Kind {
    kClause,   // at least one of lits is true (bound and coeffs unused)
    kAtMost,   // number of true lits <= bound
    kAtLeast,  // number of true lits >= bound
    kPbLe,     // sum of coeffs[i] over true lits[i] <= bound
    kPbGe,     // sum of coeffs[i] over true lits[i] >= bound
  };
  Kind kind = Kind::kClause;
  std::span<const Lit> lits;    // variables only: the model folds constants into the bound
  std::span<const int> coeffs;  // empty but for kPbLe / kPbGe
  int bound = 0;
};

/// A satisfiability problem over Boolean variables, referred to by the Lit their add_bool made.
/// Constraints that constants decide are dropped (always true) or recorded as trivially false.
class SmtModel {
 public:
  /// Adds a Boolean variable; `name` only shows in debugging output of the backend.
  Lit add_bool(std::string name = "");

  /// At least one of `lits` holds (an empty clause makes the model unsatisfiable).
  void add_clause(std::span<const Lit> lits);
  void add_clause(std::initializer_list<Lit> lits) {
    add_clause(std::span<const Lit>(lits.begin(), lits.size()));
  }
  /// `a` implies `b`, i.e. the clause (~a or b).
  void add_implies(Lit a, Lit b) { add_clause({~a, b}); }
  /// At most / at least `k` of `lits` hold.
  void add_at_most(std::span<const Lit> lits, int k);
  void add_at_least(std::span<const Lit> lits, int k);
  /// sum of coeffs[i] * lits[i] <= k, >= k; coefficients must be positive.
  void add_pb_le(std::span<const Lit> lits, std::span<const int> coeffs, int k);
  void add_pb_ge(std::span<const Lit> lits, std::span<const int> coeffs, int k);

  int num_vars() const { return static_cast<int>(names_.size()); }
  int num_constraints() const { return static_cast<int>(rows_.size()); }
  const std::string& name(int var) const { return names_[var]; }
  /// Constraint `i` (0 <= i < num_constraints()) in the order they were added.
  SmtConstraint constraint(int i) const;
  /// Some constraint is false whatever the variables are (e.g. an empty clause).
  bool trivially_unsat() const { return trivially_unsat_; }

  /// Whether an assignment (one value per variable) satisfies every constraint.
  bool satisfied_by(const std::vector<uint8_t>& values) const;

 private:
  // Constraint i: its literals are lits_[begin, begin + size), its coefficients (pseudo-Boolean
  // kinds only) coeffs_ at the same positions relative to coeff_begin.
  struct Row {
    SmtConstraint::Kind kind;
    int begin, size, coeff_begin, bound;
  };

  void add_linear(SmtConstraint::Kind kind, std::span<const Lit> lits, std::span<const int> coeffs,
                  int k);
  void check_var(Lit lit) const;

  std::vector<std::string> names_;
  std::vector<Row> rows_;
  std::vector<Lit> lits_;
  std::vector<int> coeffs_;
  bool trivially_unsat_ = false;
};

/// Which Z3 engine decides the model.
enum class SmtEngine {
  kSatCore,  // Z3's SAT solver with native cardinality / pseudo-Boolean reasoning (logic QF_FD)
  kSmtCore,  // Z3's general SMT solver
};

/// Solver settings.
struct SmtOptions {
  double time_limit_s = 0;  // wall-clock budget of the check; 0 = none
  SmtEngine engine = SmtEngine::kSatCore;
};

/// kSat: `values` hold a satisfying assignment; kUnsat: proven unsatisfiable; kTimedOut: the
/// time limit stopped the search; kUnknown: the solver gave up for another reason.
enum class SmtStatus { kSat, kUnsat, kTimedOut, kUnknown };

/// "sat", "unsat", "timed-out", "unknown".
std::string to_string(SmtStatus status);

/// Result of solve_smt.
struct SmtResult {
  SmtStatus status = SmtStatus::kUnknown;
  std::vector<uint8_t> values;  // one per variable when kSat (variables left free are false)
  std::string reason;           // the solver's reason for kTimedOut / kUnknown
  double build_s = 0;           // handing the model to the solver
  double solve_s = 0;           // the check itself

  /// The value of `lit` in the assignment (constants included). Only for kSat.
  bool value(Lit lit) const {
    return lit.is_constant() ? lit.is_true() : (values[lit.var()] != 0) != lit.negated();
  }
};

/// Decides `model` with Z3. Never prints.
SmtResult solve_smt(const SmtModel& model, const SmtOptions& options = {});

/// Sets a global Z3 parameter (e.g. "sat.pb.solver", "totalizer") for every later solve_smt of
/// the process: for experiments from benchmarks, not for library code.
void set_smt_global_param(const std::string& name, const std::string& value);

}  // namespace ccsynth::solvers
