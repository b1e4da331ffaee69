#include "ccsynth/plan/report.h"

#include <algorithm>

#include <fmt/format.h>

#include "ccsynth/core/units.h"

namespace ccsynth::plan {

nlohmann::ordered_json violations_json(const verify::VerifyReport& report) {
  nlohmann::ordered_json violations = nlohmann::ordered_json::array();
  for (const auto& v : report.violations) {
    violations.push_back({{"kind", verify::to_string(v.kind)},
                          {"rank", v.rank},
                          {"threadblock", v.threadblock},
                          {"step", v.step},
                          {"message", v.message}});
  }
  return violations;
}

nlohmann::json program_json(const Program& program) {
  int max_threadblocks = 0;
  int max_steps = 0;
  for (const GpuProgram& g : program.gpus) {
    max_threadblocks = std::max(max_threadblocks, static_cast<int>(g.threadblocks.size()));
    for (const Threadblock& tb : g.threadblocks) {
      max_steps = std::max(max_steps, static_cast<int>(tb.steps.size()));
    }
  }
  return {{"name", program.name},
          {"protocol", to_string(program.protocol)},
          {"inplace", program.inplace},
          {"channels", program.num_channels},
          {"threadblocks", program.total_threadblocks()},
          {"max_threadblocks_per_rank", max_threadblocks},
          {"max_steps_per_threadblock", max_steps},
          {"steps", program.total_steps()},
          {"chunks_per_loop", program.chunks_per_loop}};
}

nlohmann::json to_json(const Evaluated& e) {
  nlohmann::json results = nlohmann::json::array();
  for (const SizedResult& r : e.results) {
    results.push_back({{"bytes", r.bytes},
                       {"time_us", r.time_us},
                       {"algbw_gbps", r.algbw_gbps},
                       {"busbw_gbps", r.busbw_gbps},
                       {"lower_bound_us", r.lower_bound_us},
                       {"ratio_to_bound", r.ratio_to_bound()},
                       {"instances", r.instances},
                       {"fused", r.fused},
                       {"schedule_order", r.schedule_order}});
  }
  return {{"name", e.algorithm.name},
          {"ok", e.ok()},
          {"steps", e.algorithm.num_steps()},
          {"ops", e.algorithm.ops.size()},
          {"algorithm_violations", violations_json(e.algorithm_report)},
          {"program_violations", violations_json(e.program_report)},
          {"results", results}};
}

std::vector<BestAtSize> best_per_size(const std::vector<std::string>& names,
                                      const std::vector<const Evaluated*>& evaluated) {
  std::vector<BestAtSize> out;
  if (evaluated.empty()) return out;
  const auto nccl_it = std::find(names.begin(), names.end(), "nccl");
  const int nccl = nccl_it == names.end() ? -1 : static_cast<int>(nccl_it - names.begin());
  for (size_t i = 0; i < evaluated[0]->results.size(); ++i) {
    BestAtSize row;
    for (size_t k = 0; k < evaluated.size(); ++k) {
      if (i >= evaluated[k]->results.size()) continue;
      const SizedResult& r = evaluated[k]->results[i];
      if (row.best >= 0 && r.time_us >= row.time_us) continue;
      row = {r.bytes,
             static_cast<int>(k),
             r.instances,
             r.fused,
             r.schedule_order,
             r.time_us,
             r.busbw_gbps,
             r.lower_bound_us,
             r.ratio_to_bound(),
             0};
    }
    if (nccl >= 0 && i < evaluated[nccl]->results.size() && row.time_us > 0) {
      row.speedup_vs_nccl = evaluated[nccl]->results[i].time_us / row.time_us;
    }
    out.push_back(row);
  }
  return out;
}

nlohmann::json best_json(const std::vector<std::string>& names,
                         const std::vector<const Evaluated*>& evaluated) {
  nlohmann::json rows = nlohmann::json::array();
  for (const BestAtSize& b : best_per_size(names, evaluated)) {
    rows.push_back({{"bytes", b.bytes},
                    {"best", names[b.best]},
                    {"instances", b.instances},
                    {"fused", b.fused},
                    {"schedule_order", b.schedule_order},
                    {"time_us", b.time_us},
                    {"busbw_gbps", b.busbw_gbps},
                    {"lower_bound_us", b.lower_bound_us},
                    {"ratio_to_bound", b.ratio_to_bound},
                    {"speedup_vs_nccl", b.speedup_vs_nccl}});
  }
  return rows;
}

namespace {

// "tacos x2 nf so": the winner and how its variant was compiled.
std::string winner_label(const std::string& name, const BestAtSize& best) {
  return name + (best.instances > 1 ? fmt::format(" x{}", best.instances) : "") +
         (best.fused ? "" : " nf") + (best.schedule_order ? " so" : "");
}

std::string table_header(const std::vector<std::string>& names) {
  std::string out = fmt::format("{:>8}", "size");
  for (const auto& name : names) out += fmt::format(" {:>12}", name + " us");
  return out + fmt::format(" {:>11}  {:<15} {:>8} {:>9} {:>8}\n", "bound us", "best", "busbw",
                           "vs bound", "vs nccl");
}

}  // namespace

std::string results_table(const std::vector<std::string>& names,
                          const std::vector<const Evaluated*>& evaluated) {
  std::string out = table_header(names);
  const std::vector<BestAtSize> best = best_per_size(names, evaluated);
  for (size_t i = 0; i < best.size(); ++i) {
    out += fmt::format("{:>8}", format_bytes(best[i].bytes));
    for (const Evaluated* e : evaluated) {
      out += i < e->results.size() ? fmt::format(" {:>12.2f}", e->results[i].time_us)
                                   : fmt::format(" {:>12}", "-");
    }
    out += fmt::format(" {:>11.2f}  {:<15} {:>8.2f} {:>8.2f}x", best[i].lower_bound_us,
                       winner_label(names[best[i].best], best[i]), best[i].busbw_gbps,
                       best[i].ratio_to_bound);
    out += best[i].speedup_vs_nccl > 0 ? fmt::format(" {:>7.2f}x\n", best[i].speedup_vs_nccl)
                                       : fmt::format(" {:>8}\n", "-");
  }
  const bool variants = std::any_of(best.begin(), best.end(), [](const BestAtSize& b) {
    return b.instances > 1 || !b.fused || b.schedule_order;
  });
  if (variants) {
    out +=
        "(best: \"xN\" compiled with N instances, \"nf\" without fusion, \"so\" in the "
        "schedule's start-time order)\n";
  }
  return out;
}

namespace {

std::string csv_cell(const std::string& cell) {
  if (cell.find_first_of(",\"\r\n") == std::string::npos) return cell;
  std::string out = "\"";
  for (const char c : cell) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_line(const std::vector<std::string>& cells) {
  std::string out;
  for (size_t i = 0; i < cells.size(); ++i) out += (i == 0 ? "" : ",") + csv_cell(cells[i]);
  return out + "\n";
}

}  // namespace

std::string to_csv(const Table& table) {
  std::string out = csv_line(table.columns);
  for (const std::vector<std::string>& row : table.rows) out += csv_line(row);
  return out;
}

Table results_rows(const std::vector<std::string>& names,
                   const std::vector<const Evaluated*>& evaluated) {
  Table table{{"size_bytes", "program", "time_us", "busbw_gbps", "lower_bound_us", "best"}, {}};
  const std::vector<BestAtSize> best = best_per_size(names, evaluated);
  for (size_t i = 0; i < best.size(); ++i) {
    for (size_t k = 0; k < evaluated.size(); ++k) {
      if (i >= evaluated[k]->results.size()) continue;
      const SizedResult& r = evaluated[k]->results[i];
      table.add(r.bytes, names[k], r.time_us, r.busbw_gbps, r.lower_bound_us,
                static_cast<int>(k) == best[i].best);
    }
  }
  return table;
}

std::string variant_description(const compiler::CompileOptions& options) {
  return fmt::format("compiled with {} instance{}, fusion {}{}", options.instances,
                     options.instances == 1 ? "" : "s", options.fuse ? "on" : "off",
                     options.schedule_order ? ", in start-time order" : "");
}

}  // namespace ccsynth::plan
