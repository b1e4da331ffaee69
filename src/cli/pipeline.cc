#include "cli/pipeline.h"

#include <algorithm>

#include <fmt/format.h>

#include "ccsynth/compiler/instances.h"
#include "ccsynth/compiler/schedule_order.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/sim/bounds.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"

namespace ccsynth::cli {

namespace {

// The lower bound at every size (they depend on the collective, not on the program).
std::vector<double> bounds_at(const Topology& topology, const Collective& collective,
                              const std::vector<int64_t>& sizes) {
  std::vector<double> out;
  for (int64_t bytes : sizes) out.push_back(sim::lower_bound(topology, collective, bytes).lower_bound_us);
  return out;
}

// Compiles an already verified algorithm with `options`, verifies the program and, when it is
// correct, simulates it at every size. `out.algorithm` and its report are already set.
void compile_and_simulate(Evaluated& out, const Topology& topology,
                          const compiler::CompileOptions& options, const std::vector<int64_t>& sizes,
                          const std::vector<double>& bounds) {
  out.program = compiler::compile(out.algorithm, options);
  // With instances > 1 every chunk is split into subchunks: verify against that collective.
  const Collective replicated =
      compiler::replicate_collective(out.algorithm.collective, options.instances);
  verify::VerifyProgramOptions verify_options;
  verify_options.collective = &replicated;
  out.program_report = verify::verify_program(out.program, verify_options);
  if (!out.program_report.ok()) return;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const sim::SimResult sim = sim::simulate(out.program, topology, sizes[i]);
    out.results.push_back({sizes[i], sim.time_us, sim.algbw_gbps, sim.busbw_gbps, bounds[i],
                           options.instances, options.fuse, options.schedule_order});
  }
}

}  // namespace

Evaluated evaluate(const Algorithm& algorithm, const Topology& topology,
                   const compiler::CompileOptions& options, const std::vector<int64_t>& sizes) {
  Evaluated out;
  out.algorithm = algorithm;
  out.algorithm_report = verify::verify_algorithm(algorithm, &topology);
  if (!out.algorithm_report.ok()) return out;
  compile_and_simulate(out, topology, options, sizes,
                       bounds_at(topology, algorithm.collective, sizes));
  return out;
}

Evaluated evaluate_variants(const Algorithm& algorithm, const Topology& topology,
                            compiler::CompileOptions options, const std::vector<int>& instances,
                            const std::vector<int64_t>& sizes) {
  Evaluated base;
  base.algorithm = algorithm;
  base.algorithm_report = verify::verify_algorithm(algorithm, &topology);
  if (!base.algorithm_report.ok()) return base;
  const std::vector<double> bounds = bounds_at(topology, algorithm.collective, sizes);
  std::optional<Evaluated> best;
  std::optional<UserError> last_failure;
  std::vector<bool> orders = {false};
  if (compiler::has_schedule_order(algorithm)) orders.push_back(true);
  for (int count : instances) {
    for (const bool fuse : {true, false}) {
      for (const bool ordered : orders) {
        options.instances = count;
        options.fuse = fuse;
        options.schedule_order = ordered;
        Evaluated variant = base;
        try {
          compile_and_simulate(variant, topology, options, sizes, bounds);
        } catch (const UserError& e) {
          last_failure = e;  // over the runtime limits (e.g. steps per threadblock) this way
          continue;
        }
        if (!best || !best->ok()) {
          best = std::move(variant);
          continue;
        }
        if (!variant.ok()) continue;
        if (!sizes.empty() && variant.results.back().time_us < best->results.back().time_us) {
          std::swap(best->program, variant.program);
        }
        for (size_t i = 0; i < sizes.size(); ++i) {
          if (variant.results[i].time_us < best->results[i].time_us) {
            best->results[i] = variant.results[i];
          }
        }
      }
    }
  }
  if (!best && last_failure) throw *last_failure;
  CCSYNTH_CHECK(best.has_value()) << "evaluate_variants needs at least one instance count";
  return std::move(*best);
}

void apply_dialect_limits(compiler::CompileOptions& options, formats::XmlDialect dialect,
                          int max_steps, int max_threadblocks) {
  const bool classic = dialect == formats::XmlDialect::kClassic;
  options.max_steps_per_threadblock = max_steps > 0 ? max_steps : classic ? 256 : 64;
  options.max_threadblocks_per_rank = max_threadblocks > 0 ? max_threadblocks : classic ? 216 : 1024;
}

std::optional<Algorithm> reference_ring(const Collective& collective, const Topology& topology) {
  if (collective.kind == CollectiveKind::kCustom) return std::nullopt;
  const auto kind = synth::BaselineKind::kRing;
  constexpr int kMaxRings = 16;
  const int rings =
      std::max<int>(1, static_cast<int>(synth::find_rings(topology, kMaxRings).size()));
  const Collective per_ring =
      make_collective(collective.kind, topology.num_ranks, rings, collective.root);
  if (!synth::baseline_applies(kind, per_ring, topology)) return std::nullopt;
  return synth::make_baseline(kind, per_ring, topology);
}

namespace {
nlohmann::json report_json(const verify::VerifyReport& report) {
  nlohmann::json violations = nlohmann::json::array();
  for (const auto& v : report.violations) {
    violations.push_back({{"kind", verify::to_string(v.kind)},
                          {"rank", v.rank},
                          {"threadblock", v.threadblock},
                          {"step", v.step},
                          {"message", v.message}});
  }
  return violations;
}
}  // namespace

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
          {"algorithm_violations", report_json(e.algorithm_report)},
          {"program_violations", report_json(e.program_report)},
          {"results", results}};
}

std::vector<BestAtSize> best_per_size(const std::vector<std::string>& names,
                                      const std::vector<const Evaluated*>& evaluated) {
  std::vector<BestAtSize> out;
  if (evaluated.empty()) return out;
  int ring = -1;
  for (size_t k = 0; k < names.size(); ++k) {
    if (names[k] == "ring") ring = static_cast<int>(k);
  }
  for (size_t i = 0; i < evaluated[0]->results.size(); ++i) {
    BestAtSize row;
    for (size_t k = 0; k < evaluated.size(); ++k) {
      if (i >= evaluated[k]->results.size()) continue;
      const SizedResult& r = evaluated[k]->results[i];
      if (row.best >= 0 && r.time_us >= row.time_us) continue;
      row = {r.bytes, static_cast<int>(k), r.instances, r.fused, r.schedule_order, r.time_us,
             r.busbw_gbps, r.lower_bound_us, r.ratio_to_bound(), 0};
    }
    if (ring >= 0 && i < evaluated[ring]->results.size() && row.time_us > 0) {
      row.speedup_vs_ring = evaluated[ring]->results[i].time_us / row.time_us;
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
                    {"speedup_vs_ring", b.speedup_vs_ring}});
  }
  return rows;
}

std::string results_table(const std::vector<std::string>& names,
                          const std::vector<const Evaluated*>& evaluated) {
  std::string out = fmt::format("{:>8}", "size");
  for (const auto& name : names) out += fmt::format(" {:>12}", name + " us");
  out += fmt::format(" {:>11}  {:<15} {:>8} {:>9} {:>8}\n", "bound us", "best", "busbw",
                     "vs bound", "vs ring");
  const std::vector<BestAtSize> best = best_per_size(names, evaluated);
  for (size_t i = 0; i < best.size(); ++i) {
    out += fmt::format("{:>8}", format_bytes(best[i].bytes));
    for (const Evaluated* e : evaluated) {
      out += i < e->results.size() ? fmt::format(" {:>12.2f}", e->results[i].time_us)
                                   : fmt::format(" {:>12}", "-");
    }
    const std::string winner = names[best[i].best] +
                               (best[i].instances > 1 ? fmt::format(" x{}", best[i].instances) : "") +
                               (best[i].fused ? "" : " nf") +
                               (best[i].schedule_order ? " so" : "");
    out += fmt::format(" {:>11.2f}  {:<15} {:>8.2f} {:>8.2f}x", best[i].lower_bound_us, winner,
                       best[i].busbw_gbps, best[i].ratio_to_bound);
    out += best[i].speedup_vs_ring > 0 ? fmt::format(" {:>7.2f}x\n", best[i].speedup_vs_ring)
                                       : fmt::format(" {:>8}\n", "-");
  }
  const bool variants = std::any_of(best.begin(), best.end(), [](const BestAtSize& b) {
    return b.instances > 1 || !b.fused || b.schedule_order;
  });
  if (variants) {
    out += "(best: \"xN\" compiled with N instances, \"nf\" without fusion, \"so\" in the "
           "schedule's start-time order)\n";
  }
  return out;
}

}  // namespace ccsynth::cli
