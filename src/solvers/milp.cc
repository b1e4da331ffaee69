#include "ccsynth/solvers/milp.h"

#include <coin/CbcEventHandler.hpp>
#include <coin/CbcModel.hpp>
#include <coin/CbcStrategy.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/CoinPackedVector.hpp>
#include <coin/OsiClpSolverInterface.hpp>
#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "ccsynth/core/error.h"

namespace ccsynth::solvers {

int MilpModel::add_var(double lb, double ub, bool integer, double objective,
                       const std::string& name) {
  CCSYNTH_CHECK(lb <= ub) << "variable " << name << " has lb " << lb << " > ub " << ub;
  lb_.push_back(lb);
  ub_.push_back(ub);
  obj_.push_back(objective);
  integer_.push_back(integer);
  if (name.empty()) {
    std::string generated(1, 'x');  // (avoids a GCC 12 -Wrestrict false positive on "x" + s)
    generated.append(std::to_string(lb_.size() - 1));
    names_.push_back(std::move(generated));
  } else {
    names_.push_back(name);
  }
  return num_vars() - 1;
}

int MilpModel::add_binary(double objective, const std::string& name) {
  return add_var(0.0, 1.0, true, objective, name);
}

int MilpModel::add_row(const std::vector<Term>& terms, double lb, double ub) {
  // Merge repeated variables so CBC sees each column once per row.
  std::map<int, double> merged;
  for (const Term& t : terms) {
    CCSYNTH_CHECK(t.var >= 0 && t.var < num_vars()) << "row uses unknown variable " << t.var;
    merged[t.var] += t.coef;
  }
  std::vector<Term> row;
  row.reserve(merged.size());
  for (auto [var, coef] : merged) {
    if (coef != 0.0) row.push_back({var, coef});
  }
  rows_.push_back(std::move(row));
  row_lb_.push_back(lb);
  row_ub_.push_back(ub);
  return num_rows() - 1;
}

void MilpModel::set_objective(int var, double coef) {
  CCSYNTH_CHECK(var >= 0 && var < num_vars()) << "unknown variable " << var;
  obj_[var] = coef;
}

int MilpModel::num_integer() const {
  return static_cast<int>(std::count(integer_.begin(), integer_.end(), true));
}

double MilpModel::evaluate(const std::vector<double>& values) const {
  double sum = 0.0;
  for (int v = 0; v < num_vars(); ++v) sum += obj_[v] * values[v];
  return sum;
}

double MilpModel::max_violation(const std::vector<double>& values) const {
  if (static_cast<int>(values.size()) != num_vars()) return kInfinity;
  double worst = 0.0;
  for (int v = 0; v < num_vars(); ++v) {
    worst = std::max({worst, lb_[v] - values[v], values[v] - ub_[v]});
    if (integer_[v]) worst = std::max(worst, std::abs(values[v] - std::round(values[v])));
  }
  for (int r = 0; r < num_rows(); ++r) {
    double sum = 0.0;
    for (const Term& t : rows_[r]) sum += t.coef * values[t.var];
    worst = std::max({worst, row_lb_[r] - sum, sum - row_ub_[r]});
  }
  return worst;
}

std::string to_string(MilpStatus status) {
  switch (status) {
    case MilpStatus::kOptimal: return "optimal";
    case MilpStatus::kFeasible: return "feasible";
    case MilpStatus::kTimedOut: return "timed-out";
    case MilpStatus::kInfeasible: return "infeasible";
    case MilpStatus::kUnbounded: return "unbounded";
    case MilpStatus::kError: return "error";
  }
  return "error";
}

namespace {

double to_coin(double value, double infinity) {
  if (value >= kInfinity) return infinity;
  if (value <= -kInfinity) return -infinity;
  return value;
}

// Loads the model into a Clp solver interface (row-wise matrix).
void load(const MilpModel& model, OsiClpSolverInterface& solver) {
  const double inf = solver.getInfinity();
  std::vector<double> col_lb(model.num_vars()), col_ub(model.num_vars()), obj(model.num_vars());
  for (int v = 0; v < model.num_vars(); ++v) {
    col_lb[v] = to_coin(model.lb(v), inf);
    col_ub[v] = to_coin(model.ub(v), inf);
    obj[v] = model.objective(v);
  }
  // Build from triplets: appending rows one by one is quadratic in CoinPackedMatrix.
  std::vector<int> rows, cols;
  std::vector<double> elements;
  std::vector<double> row_lb(model.num_rows()), row_ub(model.num_rows());
  for (int r = 0; r < model.num_rows(); ++r) {
    for (const Term& t : model.row(r)) {
      rows.push_back(r);
      cols.push_back(t.var);
      elements.push_back(t.coef);
    }
    row_lb[r] = to_coin(model.row_lb(r), inf);
    row_ub[r] = to_coin(model.row_ub(r), inf);
  }
  CoinPackedMatrix matrix(false, rows.data(), cols.data(), elements.data(),
                          static_cast<CoinBigIndex>(elements.size()));
  if (matrix.getNumCols() < model.num_vars() || matrix.getNumRows() < model.num_rows()) {
    matrix.setDimensions(model.num_rows(), model.num_vars());
  }
  solver.loadProblem(matrix, col_lb.data(), col_ub.data(), obj.data(), row_lb.data(),
                     row_ub.data());
  for (int v = 0; v < model.num_vars(); ++v) {
    if (model.is_integer(v)) solver.setInteger(v);
  }
}

// Stops branch and bound once no better incumbent has been found for `stall_s` seconds (the MIP
// start counts as the first incumbent; without any incumbent it never stops). CBC calls event() after every node and on every new
// solution.
class StallHandler : public CbcEventHandler {
 public:
  StallHandler(double stall_s, bool has_start)
      : stall_s_(stall_s),
        has_incumbent_(has_start),
        last_improvement_(std::chrono::steady_clock::now()) {}

  CbcAction event(CbcEvent which) override {
    const auto now = std::chrono::steady_clock::now();
    if (which == solution || which == heuristicSolution) {
      has_incumbent_ = true;
      last_improvement_ = now;
      return noAction;
    }
    const double idle = std::chrono::duration<double>(now - last_improvement_).count();
    return which == node && has_incumbent_ && idle > stall_s_ ? stop : noAction;
  }

  CbcEventHandler* clone() const override { return new StallHandler(*this); }

 private:
  double stall_s_;
  bool has_incumbent_;  // a stall only counts once there is something to return
  std::chrono::steady_clock::time_point last_improvement_;
};

}  // namespace

MilpResult solve_milp(const MilpModel& model, const MilpOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  MilpResult result;
  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(options.log_level);
  load(model, solver);
  if (const char* dump = std::getenv("CCSYNTH_MILP_DUMP")) {
    static int counter = 0;
    solver.writeMps((std::string(dump) + std::to_string(counter++)).c_str());
  }

  CbcModel cbc(solver);
  cbc.setLogLevel(options.log_level);
  cbc.solver()->messageHandler()->setLogLevel(options.log_level);
  cbc.setUseElapsedTime(true);
  cbc.setMaximumSeconds(std::max(0.01, options.time_limit_s));
  cbc.setAllowableFractionGap(options.relative_gap);
  cbc.setAllowableGap(options.absolute_gap);
  CbcStrategyDefault strategy(1, 0, 0, options.log_level);
  cbc.setStrategy(strategy);

  const bool start_ok =
      !options.mip_start.empty() && model.max_violation(options.mip_start) <= 1e-6;
  double start_objective = kInfinity;
  if (start_ok) {
    start_objective = model.evaluate(options.mip_start);
    cbc.setBestSolution(options.mip_start.data(), model.num_vars(), start_objective, false);
  }
  if (options.stall_s > 0) {
    const StallHandler stall(options.stall_s, start_ok);
    cbc.passInEventHandler(&stall);
  }
  cbc.initialSolve();  // branchAndBound assumes the root LP has been solved
  cbc.branchAndBound();

  const double* best = cbc.bestSolution();
  if (best != nullptr) {
    result.has_solution = true;
    result.values.assign(best, best + model.num_vars());
    // Snap integers: CBC returns them within its integer tolerance.
    for (int v = 0; v < model.num_vars(); ++v) {
      if (model.is_integer(v)) result.values[v] = std::round(result.values[v]);
    }
    result.objective = model.evaluate(result.values);
    result.used_mip_start = start_ok && result.objective >= start_objective - 1e-9;
  } else if (start_ok) {
    result.has_solution = true;
    result.values = options.mip_start;
    result.objective = start_objective;
    result.used_mip_start = true;
  }
  result.best_bound = cbc.getBestPossibleObjValue();
  result.nodes = cbc.getNodeCount();
  if (cbc.isProvenOptimal() && result.has_solution) {
    result.status = MilpStatus::kOptimal;
  } else if (cbc.isProvenInfeasible() && !result.has_solution) {
    result.status = MilpStatus::kInfeasible;
  } else if (cbc.isContinuousUnbounded()) {
    result.status = MilpStatus::kUnbounded;
  } else if (cbc.isSecondsLimitReached()) {
    result.status = MilpStatus::kTimedOut;
  } else if (result.has_solution) {
    result.status = MilpStatus::kFeasible;
  } else {
    result.status = MilpStatus::kError;
  }
  if (result.has_solution) {
    if (result.status == MilpStatus::kOptimal) {
      result.best_bound = std::min(result.best_bound, result.objective);
    }
    result.gap = std::max(0.0, result.objective - result.best_bound) /
                 std::max(std::abs(result.objective), 1e-9);
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace ccsynth::solvers
