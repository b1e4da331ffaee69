#pragma once
// A small mixed-integer linear programming interface (DESIGN.md sec. 2, `solvers`): build a
// model of bounded continuous/integer variables, linear rows and a minimized objective, then
// solve it with COIN-OR CBC under a time limit, optionally seeded with a feasible solution
// (MIP start). Callers never see CBC types.

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace ccsynth::solvers {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// One term `coef * x[var]` of a linear expression.
struct Term {
  int var = 0;
  double coef = 0.0;
};

/// A minimization MILP. Variables and rows are referred to by the index their add_* returned.
class MilpModel {
 public:
  /// Adds a variable lb <= x <= ub (either may be +-kInfinity) with objective coefficient
  /// `objective`; `integer` makes it integral. Returns its index.
  int add_var(double lb, double ub, bool integer, double objective = 0.0,
              const std::string& name = "");
  /// Shorthand for a 0/1 integer variable.
  int add_binary(double objective = 0.0, const std::string& name = "");
  /// Adds the row lb <= sum(terms) <= ub. Repeated variables in `terms` are summed.
  int add_row(const std::vector<Term>& terms, double lb, double ub);
  /// sum(terms) <= rhs, sum(terms) >= rhs, sum(terms) == rhs.
  int add_le(const std::vector<Term>& terms, double rhs) { return add_row(terms, -kInfinity, rhs); }
  int add_ge(const std::vector<Term>& terms, double rhs) { return add_row(terms, rhs, kInfinity); }
  int add_eq(const std::vector<Term>& terms, double rhs) { return add_row(terms, rhs, rhs); }
  /// Sets the objective coefficient of `var` (the objective is always minimized).
  void set_objective(int var, double coef);

  int num_vars() const { return static_cast<int>(lb_.size()); }
  int num_rows() const { return static_cast<int>(row_lb_.size()); }
  int num_integer() const;

  double lb(int var) const { return lb_[var]; }
  double ub(int var) const { return ub_[var]; }
  bool is_integer(int var) const { return integer_[var]; }
  double objective(int var) const { return obj_[var]; }
  const std::string& name(int var) const { return names_[var]; }
  const std::vector<Term>& row(int r) const { return rows_[r]; }
  double row_lb(int r) const { return row_lb_[r]; }
  double row_ub(int r) const { return row_ub_[r]; }

  /// Objective value of an assignment (one value per variable).
  double evaluate(const std::vector<double>& values) const;
  /// Largest violation of a bound, row or integrality by `values` (0 when feasible).
  double max_violation(const std::vector<double>& values) const;

 private:
  std::vector<double> lb_, ub_, obj_;
  std::vector<bool> integer_;
  std::vector<std::string> names_;
  std::vector<std::vector<Term>> rows_;
  std::vector<double> row_lb_, row_ub_;
};

/// Solver settings.
struct MilpOptions {
  double time_limit_s = 60.0;  // wall-clock budget for branch and bound
  double relative_gap = 1e-4;  // stop when (incumbent - bound) / |incumbent| is below this
  double absolute_gap = 1e-6;
  double stall_s = 0.0;           // stop when no better solution came for this long (0 = never)
  std::vector<double> mip_start;  // a feasible assignment (one value per variable) or empty
  int log_level = 0;              // CBC's log level; 0 keeps the library silent
};

/// kOptimal: proven within the gap; kFeasible: a solution, search stopped without proof (node
/// limit or stall_s without improvement); kTimedOut: time limit hit (values hold the incumbent if has_solution);
/// kInfeasible: proven infeasible; kUnbounded; kError: CBC stopped abnormally.
enum class MilpStatus { kOptimal, kFeasible, kTimedOut, kInfeasible, kUnbounded, kError };

/// "optimal", "feasible", "timed-out", "infeasible", "unbounded", "error".
std::string to_string(MilpStatus status);

/// Result of solve_milp. `gap` is (objective - best_bound) / max(|objective|, 1e-9), 0 when
/// optimal, infinity without a solution.
struct MilpResult {
  MilpStatus status = MilpStatus::kError;
  bool has_solution = false;
  double objective = kInfinity;
  double best_bound = -kInfinity;
  double gap = kInfinity;
  std::vector<double> values;
  double seconds = 0.0;
  int64_t nodes = 0;
  bool used_mip_start = false;  // the incumbent is (still) the MIP start
};

/// Solves `model` with CBC (CbcModel over OsiClpSolverInterface, default cuts and heuristics).
/// A MIP start that violates the model by more than 1e-6 is ignored. Never prints unless
/// options.log_level > 0.
/// Debugging: with the environment variable CCSYNTH_MILP_DUMP=PREFIX every model is also written
/// as PREFIX<n>.mps.gz (n counts the solves of the process), to try CBC settings on it offline.
MilpResult solve_milp(const MilpModel& model, const MilpOptions& options = {});

}  // namespace ccsynth::solvers
