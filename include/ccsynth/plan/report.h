#pragma once
// What a verb prints about evaluated programs (docs/formats.md for the JSON): per program its
// verification status and per-size times; across programs, per size the fastest against the
// `nccl` reference and the lower bound, as JSON or as a table.

#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ccsynth/core/program.h"
#include "ccsynth/plan/evaluate.h"
#include "ccsynth/verify/report.h"

namespace ccsynth::plan {

/// The violations of a report as a JSON array of {kind, rank, threadblock, step, message}, keys
/// in that order.
nlohmann::ordered_json violations_json(const verify::VerifyReport& report);

/// Size and shape of a program: name, protocol, channels, threadblocks, steps, the largest
/// threadblock count of a rank and step count of a threadblock, chunks per loop.
nlohmann::json program_json(const Program& program);

/// JSON for one evaluated program: verification status, per-size results.
nlohmann::json to_json(const Evaluated& evaluated);

/// The fastest of several evaluated programs at one size (they share their size list).
struct BestAtSize {
  int64_t bytes = 0;
  int best = -1;                // index into the evaluated programs
  int instances = 1;            // compiler instances of the winning variant
  bool fused = true;            // whether the winning variant uses fusion
  bool schedule_order = false;  // whether it runs in the schedule's start-time order
  double time_us = 0;
  double busbw_gbps = 0;
  double lower_bound_us = 0;
  double ratio_to_bound = 0;   // best time / lower bound
  double speedup_vs_nccl = 0;  // nccl time / best time; 0 without a program named "nccl"
};

/// Per size, which program is fastest, and by how much against "nccl" and the bound.
std::vector<BestAtSize> best_per_size(const std::vector<std::string>& names,
                                      const std::vector<const Evaluated*>& evaluated);

/// JSON array of best_per_size(), naming the winner.
nlohmann::json best_json(const std::vector<std::string>& names,
                         const std::vector<const Evaluated*>& evaluated);

/// Human-readable table: per size the simulated time of every program, the lower bound, the
/// fastest program with its busbw, its ratio to the bound and its speedup over "nccl".
std::string results_table(const std::vector<std::string>& names,
                          const std::vector<const Evaluated*>& evaluated);

/// Rows of cells under named columns: what a verb prints with --csv (to_csv), for plots in
/// other tools. Numbers are written in the shortest form that reads back to the same value.
struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;

  /// Appends a row of one cell per column, each formatted with fmt's "{}".
  template <typename... Cells>
  void add(const Cells&... cells) {
    rows.push_back({fmt::format("{}", cells)...});
  }
};

/// CSV (RFC 4180): the column names, then one line per row; a cell holding a comma, a quote or
/// a line break is quoted, its quotes doubled.
std::string to_csv(const Table& table);

/// results_table() as rows: per size and program the time, busbw and lower bound, with the
/// fastest program's name ("size_bytes,program,time_us,busbw_gbps,lower_bound_us,best").
Table results_rows(const std::vector<std::string>& names,
                   const std::vector<const Evaluated*>& evaluated);

/// "compiled with N instance(s), fusion on|off[, in start-time order]".
std::string variant_description(const compiler::CompileOptions& options);

}  // namespace ccsynth::plan
