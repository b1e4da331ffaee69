// `ccsynth simulate FILE.xml --topology T --size LIST`: event-driven simulation of an MSCCL-IR
// program (docs/simulator.md), each size reported with its lower bound (docs/bounds.md).

#include <fmt/format.h>

#include <unistd.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/formats/collective_json.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/plan/trace.h"
#include "ccsynth/sim/bounds.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/verify_program.h"
#include "cli/command.h"

namespace ccsynth::cli {
namespace {

struct SimulateOptions {
  std::string file;
  std::string topology;
  std::string sizes = "1K:1G";
  std::string collective;
  bool json = false;
  bool csv = false;
  bool no_pipelining = false;
  int slices = 0;
  double memory_gbps = sim::SimOptions{}.memory_bandwidth_gbps;
  bool show_links = false;
  bool show_critical_path = false;
  std::string trace;
};

struct Row {
  sim::SimResult result;
  sim::LowerBound bound;
  double ratio = 0.0;
};

Collective collective_for(const Program& program, const std::string& name) {
  if (!name.empty()) {
    return formats::resolve_collective(name, program.num_ranks, 1, program.root);
  }
  try {
    return verify::collective_of(program);
  } catch (const UserError& e) {
    throw UserError(e.file(), "--collective",
                    e.reason() + " (pass --collective NAME|FILE.json for custom programs)");
  }
}

nlohmann::json to_json(const SimulateOptions& o, const Program& p, const Collective& c,
                       const Topology& t, const std::vector<Row>& rows) {
  nlohmann::json results = nlohmann::json::array();
  for (const Row& row : rows) {
    results.push_back({{"bytes", row.result.bytes},
                       {"time_us", row.result.time_us},
                       {"algbw_gbps", row.result.algbw_gbps},
                       {"busbw_gbps", row.result.busbw_gbps},
                       {"lower_bound_us", row.bound.lower_bound_us},
                       {"ratio_to_bound", row.ratio}});
  }
  nlohmann::json links = nlohmann::json::array();
  const sim::SimResult& last = rows.back().result;
  for (const sim::LinkUsage& u : last.links) {
    links.push_back(
        {{"src", u.src}, {"dst", u.dst}, {"busy_us", u.busy_us}, {"utilization", u.utilization}});
  }
  nlohmann::json per_size = nlohmann::json::array();
  for (const Row& row : rows) {
    per_size.push_back({{"bytes", row.result.bytes},
                        {"slices", row.result.slices},
                        {"events", row.result.events},
                        {"latency_bound_us", row.bound.latency_us},
                        {"bandwidth_bound_us", row.bound.bandwidth_us}});
  }
  return {{"format", "ccsynth-simulation"},
          {"version", 1},
          {"program", p.name},
          {"collective", c.name},
          {"topology", t.name},
          {"results", std::move(results)},
          {"links", std::move(links)},
          {"extra",
           {{"file", o.file},
            {"protocol", to_string(p.protocol)},
            {"links_bytes", last.bytes},
            {"per_size", std::move(per_size)},
            {"critical_path", last.critical_path}}}};
}

void print_table(const SimulateOptions& o, const Program& p, const Collective& c, const Topology& t,
                 const std::vector<Row>& rows) {
  std::cout << fmt::format("program {} ({}, {}, {} ranks) on {}\n", p.name, c.name,
                           to_string(p.protocol), p.num_ranks, t.name);
  std::cout << fmt::format("{:>10} {:>14} {:>11} {:>11} {:>14} {:>8} {:>7} {:>10}\n", "bytes",
                           "time_us", "algbw_GB/s", "busbw_GB/s", "bound_us", "ratio", "slices",
                           "events");
  for (const Row& row : rows) {
    const sim::SimResult& r = row.result;
    std::cout << fmt::format(
        "{:>10} {:>14.3f} {:>11.3f} {:>11.3f} {:>14.3f} {:>8.3f} {:>7} {:>10}\n",
        format_bytes(r.bytes), r.time_us, r.algbw_gbps, r.busbw_gbps, row.bound.lower_bound_us,
        row.ratio, r.slices, r.events);
  }
  const sim::SimResult& last = rows.back().result;
  if (o.show_links) {
    std::cout << fmt::format("\nlink usage at {} (src -> dst; -1 marks a switch port):\n",
                             format_bytes(last.bytes));
    for (const sim::LinkUsage& u : last.links) {
      std::cout << fmt::format("  {:>5} -> {:<5} busy {:>12.3f} us  utilization {:>6.1f}%\n", u.src,
                               u.dst, u.busy_us, 100.0 * u.utilization);
    }
  }
  if (o.show_critical_path) {
    std::cout << fmt::format("\ncritical path at {}:\n", format_bytes(last.bytes));
    for (const std::string& line : last.critical_path) std::cout << "  " << line << "\n";
  }
}

plan::Table csv_table(const std::vector<Row>& rows) {
  plan::Table table{
      {"bytes", "time_us", "algbw_gbps", "busbw_gbps", "lower_bound_us", "ratio_to_bound"}, {}};
  for (const Row& row : rows) {
    table.add(row.result.bytes, row.result.time_us, row.result.algbw_gbps, row.result.busbw_gbps,
              row.bound.lower_bound_us, row.ratio);
  }
  return table;
}

void run_simulate(const SimulateOptions& o) {
  const Program program = formats::read_msccl_xml_file(o.file);
  validate_structure(program, o.file);
  const Topology topology = topologies::resolve_topology(o.topology);
  const Collective collective = collective_for(program, o.collective);
  const std::vector<int64_t> sizes = parse_byte_list(o.sizes, "--size");
  if (sizes.empty()) throw UserError("", "--size", "no sizes given");

  sim::SimOptions options;
  options.pipelining = !o.no_pipelining;
  options.num_slices = o.slices;
  options.memory_bandwidth_gbps = o.memory_gbps;
  const sim::BoundOptions bound_options =
      sim::bound_options_for(topology, program.protocol, false, options);

  // Progress on stderr only for a terminal: large sizes can take seconds.
  const bool progress = isatty(STDERR_FILENO) && sizes.size() > 1;
  std::vector<Row> rows;
  for (int64_t bytes : sizes) {
    if (progress) std::cerr << fmt::format("\rsimulating {}...   ", format_bytes(bytes));
    // The trace is of the largest (last) size, like --links and --critical-path.
    options.record_timeline = !o.trace.empty() && bytes == sizes.back();
    Row row;
    try {
      row.result = sim::simulate(program, topology, bytes, options);
    } catch (const UserError& e) {
      throw in_user_terms(e, program.name, o.file);
    }
    row.bound = sim::lower_bound(topology, collective, bytes, bound_options);
    row.ratio =
        row.bound.lower_bound_us > 0.0 ? row.result.time_us / row.bound.lower_bound_us : 1.0;
    rows.push_back(std::move(row));
  }
  if (progress) std::cerr << "\r" << std::string(40, ' ') << "\r";
  if (!o.trace.empty()) {
    write_text_file(o.trace, plan::trace_json(rows.back().result, program, topology).dump());
  }
  if (o.json) {
    std::cout << to_json(o, program, collective, topology, rows).dump(2) << "\n";
  } else if (o.csv) {
    print_csv(csv_table(rows));
  } else {
    print_table(o, program, collective, topology, rows);
  }
}

}  // namespace

void add_simulate_command(CLI::App& app, CommandResult& result) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "Simulate an MSCCL-IR XML program on a topology (event-driven, alpha-beta with "
      "contention) and compare with the lower bound");
  cmd->add_option("file", o->file, "MSCCL-IR XML program (classic or executor dialect)")
      ->required();
  cmd->add_option("-t,--topology", o->topology, "Built-in topology name or topology JSON file")
      ->required();
  cmd->add_option("-s,--size", o->sizes,
                  "Per-rank input sizes: a list 1K,1M,64M or a range 1K:1G (powers of 4 from "
                  "first to last) or 1K:1G:2 (powers of 2)")
      ->capture_default_str();
  cmd->add_option("-c,--collective", o->collective,
                  "Collective for the bound: built-in name or collective JSON file (default: "
                  "implied by the program's coll, ngpus and buffer sizes)");
  cmd->add_flag("--json", o->json, "Print one ccsynth-simulation JSON document");
  add_csv_flag(cmd, o->csv, "size");
  cmd->add_flag("--no-pipelining", o->no_pipelining,
                "One slice per chunk (SCCL's synchronous cost model)");
  cmd->add_option("--slices", o->slices, "Exactly this many slices per chunk (0 = by protocol)")
      ->check(kNonNegative);
  cmd->add_option("--memory-gbps", o->memory_gbps,
                  "Bandwidth of local copies and reductions in GB/s (0 = free; default: the "
                  "topology's memory_gbps, 1000 on GPU machines, free on the abstract shapes)")
      ->check(kNonNegative);
  cmd->add_flag("--links", o->show_links, "Table: per-link busy time at the largest size");
  cmd->add_flag("--critical-path", o->show_critical_path,
                "Table: the critical path at the largest size");
  cmd->add_option("--trace", o->trace,
                  "Write the largest size's timeline as Chrome trace-event JSON (Perfetto, "
                  "chrome://tracing; docs/formats.md)");
  cmd->footer(
      "Sizes are per-rank input bytes; algbw/busbw follow nccl-tests. See "
      "docs/simulator.md and docs/bounds.md.\nExit codes: 0 ok, 2 bad input (including a "
      "program that deadlocks or does not fit the topology).");
  cmd->callback([o, &result] {
    run_simulate(*o);
    result.exit_code = kExitOk;
  });
}

}  // namespace ccsynth::cli
