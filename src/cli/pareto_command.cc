// `ccsynth pareto`: SCCL's Pareto search (algorithm 1, sec. 3.7) for a collective on a
// topology, printing the frontier of k-synchronous algorithms (C, S, R).

#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ccsynth/synth/sccl.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "cli/command.h"

namespace ccsynth::cli {

namespace {

struct ParetoFlags {
  std::string topology;
  std::string collective = "allgather";
  int root = 0;
  int k = 4;
  double time_limit_s = 0;
  double instance_time_limit_s = 0;
  int max_steps = 0;
  int max_chunks = 0;
  bool full_model = false;
  bool json = false;
  bool csv = false;
};

std::string ratio_text(const synth::Ratio& r) {
  return r.den == 1 ? std::to_string(r.num) : fmt::format("{}/{}", r.num, r.den);
}

int run_pareto(const ParetoFlags& f) {
  const Topology topology = topologies::resolve_topology(f.topology);
  int root = f.root;
  const CollectiveKind kind =
      builtin_collective_kind(f.collective, topology.num_ranks, root, "pareto");
  const synth::BandwidthModel model =
      f.full_model ? synth::bandwidth_model(topology) : synth::paper_bandwidth_model(topology);
  synth::ParetoOptions options;
  options.k = f.k;
  options.time_limit_s = f.time_limit_s;
  options.solve.time_limit_s = f.instance_time_limit_s;
  options.max_steps = f.max_steps;
  options.max_chunks = f.max_chunks;
  std::cerr << "pareto: " << to_string(kind) << " on " << model.name << ", k = " << f.k << "\n";
  const synth::ParetoResult result =
      synth::synthesize_sccl_pareto(kind, model, options, root, [](const synth::ParetoAttempt& a) {
        std::cerr << fmt::format("pareto: (C={}, S={}, R={}): {} in {:.2f} s\n", a.chunks, a.steps,
                                 a.rounds, to_string(a.status), a.seconds);
      });
  bool all_verified = true;
  nlohmann::json frontier = nlohmann::json::array();
  for (const synth::ParetoPoint& p : result.frontier) {
    const verify::VerifyReport report = verify::verify_algorithm(p.algorithm, &topology);
    all_verified = all_verified && report.ok();
    frontier.push_back({{"chunks", p.chunks},
                        {"steps", p.steps},
                        {"rounds", p.rounds},
                        {"bandwidth_cost", static_cast<double>(p.rounds) / p.chunks},
                        {"latency_optimal", p.latency_optimal},
                        {"bandwidth_optimal", p.bandwidth_optimal},
                        {"seconds", p.seconds},
                        {"ops", p.algorithm.ops.size()},
                        {"verified", report.ok()}});
  }
  if (f.json) {
    nlohmann::json attempts = nlohmann::json::array();
    for (const synth::ParetoAttempt& a : result.attempts) {
      attempts.push_back({{"chunks", a.chunks},
                          {"steps", a.steps},
                          {"rounds", a.rounds},
                          {"status", a.status == SynthStatus::kOptimal      ? "sat"
                                     : a.status == SynthStatus::kInfeasible ? "unsat"
                                                                            : to_string(a.status)},
                          {"seconds", a.seconds}});
    }
    const nlohmann::json doc = {{"format", "ccsynth-pareto"},
                                {"version", 1},
                                {"topology", model.name},
                                {"collective", to_string(kind)},
                                {"k", f.k},
                                {"status", to_string(result.status)},
                                {"latency_lower_bound", result.latency_bound},
                                {"bandwidth_lower_bound",
                                 {{"num", result.bandwidth_bound.num},
                                  {"den", result.bandwidth_bound.den},
                                  {"value", result.bandwidth_bound.value()}}},
                                {"seconds", result.seconds},
                                {"frontier", frontier},
                                {"attempts", attempts}};
    std::cout << doc.dump(2) << "\n";
  } else if (f.csv) {
    plan::Table table{{"chunks", "steps", "rounds", "bandwidth_cost", "latency_optimal",
                       "bandwidth_optimal", "seconds", "ops", "verified"},
                      {}};
    for (const nlohmann::json& p : frontier) {
      table.add(p["chunks"].get<int>(), p["steps"].get<int>(), p["rounds"].get<int>(),
                p["bandwidth_cost"].get<double>(), p["latency_optimal"].get<bool>(),
                p["bandwidth_optimal"].get<bool>(), p["seconds"].get<double>(),
                p["ops"].get<size_t>(), p["verified"].get<bool>());
    }
    print_csv(table);
  } else {
    std::cout << fmt::format(
        "{} on {} (k = {}): latency bound {} steps, bandwidth bound R/C >= {}; {} in {:.2f} s\n",
        to_string(kind), model.name, f.k, result.latency_bound, ratio_text(result.bandwidth_bound),
        to_string(result.status), result.seconds);
    std::cout << fmt::format("{:>6} {:>5} {:>6} {:>7}  {:<18} {:>8}\n", "chunks", "steps", "rounds",
                             "R/C", "optimality", "time_s");
    for (const synth::ParetoPoint& p : result.frontier) {
      std::string opt = p.latency_optimal && p.bandwidth_optimal ? "both"
                        : p.latency_optimal                      ? "latency"
                        : p.bandwidth_optimal                    ? "bandwidth"
                                                                 : "";
      std::cout << fmt::format("{:>6} {:>5} {:>6} {:>7.4f}  {:<18} {:>8.2f}\n", p.chunks, p.steps,
                               p.rounds, static_cast<double>(p.rounds) / p.chunks, opt, p.seconds);
    }
    if (!all_verified) std::cout << "verification FAILED for some algorithm\n";
  }
  return result.frontier.empty() || !all_verified ? kExitCheckFailed : kExitOk;
}

}  // namespace

void add_pareto_command(CLI::App& app, CommandResult& result) {
  auto f = std::make_shared<ParetoFlags>();
  CLI::App* cmd = app.add_subcommand(
      "pareto",
      "SCCL Pareto search (PPoPP'21 algorithm 1): the frontier of k-synchronous algorithms "
      "(chunks C, steps S, rounds R) for a collective on a topology, each solved with Z3 and "
      "verified. Cost S * alpha + R/C * L * beta (SCCL sec. 3.6).");
  cmd->add_option("--topology,-t", f->topology, "built-in topology name or topology JSON file")
      ->required();
  cmd->add_option("--collective,-c", f->collective, "collective (allgather, alltoall, ...)")
      ->capture_default_str();
  cmd->add_option("--root", f->root, "root rank of rooted collectives")->capture_default_str();
  cmd->add_option("--k", f->k, "k-synchronous: rounds R <= steps S + k")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--time-limit", f->time_limit_s, "whole search, seconds (0 = none)")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--instance-time-limit", f->instance_time_limit_s,
                  "per (C, S, R) instance, seconds (0 = none)")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--max-steps", f->max_steps, "largest S tried (0 = latency bound + 16)")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--max-chunks", f->max_chunks, "largest C tried (0 = no cap)")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_flag("--full-model", f->full_model,
                "model every link of amdz52 instead of SCCL's ring (sec. 5.2.2)");
  cmd->add_flag("--json", f->json, "print one JSON document (field frontier) on stdout");
  add_csv_flag(cmd, f->csv, "frontier point");
  cmd->callback([f, &result] { result.exit_code = run_pareto(*f); });
}

}  // namespace ccsynth::cli
