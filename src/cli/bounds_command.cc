// `ccsynth bounds --topology T --collective C --size S`: lower bounds on a collective's time
// (docs/bounds.md).

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "ccsynth/core/error.h"
#include "ccsynth/core/program.h"
#include "ccsynth/core/units.h"
#include "ccsynth/formats/collective_json.h"
#include "ccsynth/sim/bounds.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/topologies/library.h"
#include "cli/command.h"

namespace ccsynth::cli {
namespace {

struct BoundsOptions {
  std::string topology;
  std::string collective;
  std::string size;
  std::string protocol = "Simple";
  int chunks = 1;
  int root = 0;
  bool json = false;
  bool csv = false;
};

void run_bounds(const BoundsOptions& o) {
  const Topology topology = topologies::resolve_topology(o.topology);
  const Collective collective =
      formats::resolve_collective(o.collective, topology.num_ranks, o.chunks, o.root);
  const int64_t bytes = parse_bytes(o.size, "--size");
  const Protocol protocol = parse_protocol_flag(o.protocol);
  const sim::BoundOptions options = sim::bound_options_for(topology, protocol);
  const sim::LowerBound b = sim::lower_bound(topology, collective, bytes, options);
  if (o.json) {
    const nlohmann::json doc = {{"format", "ccsynth-bounds"},
                                {"version", 1},
                                {"topology", topology.name},
                                {"collective", collective.name},
                                {"bytes", bytes},
                                {"latency_bound_us", b.latency_us},
                                {"bandwidth_bound_us", b.bandwidth_us},
                                {"lower_bound_us", b.lower_bound_us},
                                {"extra",
                                 {{"protocol", to_string(protocol)},
                                  {"launch_us", b.launch_us},
                                  {"ingress_egress_bound_us", b.ingress_egress_us},
                                  {"cut_bound_us", b.cut_us},
                                  {"total_traffic_bound_us", b.total_traffic_us},
                                  {"node_traffic_bound_us", b.node_traffic_us}}}};
    std::cout << doc.dump(2) << "\n";
    return;
  }
  if (o.csv) {
    plan::Table table{{"bytes", "latency_us", "ingress_egress_us", "cut_us", "total_traffic_us",
                       "node_traffic_us", "bandwidth_us", "launch_us", "lower_bound_us"},
                      {}};
    table.add(bytes, b.latency_us, b.ingress_egress_us, b.cut_us, b.total_traffic_us,
              b.node_traffic_us, b.bandwidth_us, b.launch_us, b.lower_bound_us);
    print_csv(table);
    return;
  }
  std::cout << fmt::format("{} on {} ({} ranks), {} per rank, protocol {}\n", collective.name,
                           topology.name, topology.num_ranks, format_bytes(bytes),
                           to_string(protocol));
  std::cout << fmt::format("  latency bound          {:>14.3f} us\n", b.latency_us);
  std::cout << fmt::format("  ingress/egress bound   {:>14.3f} us\n", b.ingress_egress_us);
  std::cout << fmt::format("  cut bound              {:>14.3f} us\n", b.cut_us);
  std::cout << fmt::format("  total-traffic bound    {:>14.3f} us\n", b.total_traffic_us);
  std::cout << fmt::format("  node-traffic bound     {:>14.3f} us\n", b.node_traffic_us);
  std::cout << fmt::format("  bandwidth bound        {:>14.3f} us\n", b.bandwidth_us);
  if (b.launch_us > 0.0) {
    std::cout << fmt::format("  launch overhead        {:>14.3f} us (added)\n", b.launch_us);
  }
  std::cout << fmt::format("  lower bound            {:>14.3f} us", b.lower_bound_us);
  if (b.lower_bound_us > 0.0) {
    const double size = sim::nccl_size_bytes(collective.kind, topology.num_ranks, bytes);
    const double algbw = size / (b.lower_bound_us * 1e3);
    std::cout << fmt::format("  (algbw <= {:.3f} GB/s, busbw <= {:.3f} GB/s)", algbw,
                             algbw * sim::bus_factor(collective.kind, topology.num_ranks));
  }
  std::cout << "\n";
}

}  // namespace

void add_bounds_command(CLI::App& app, CommandResult& result) {
  auto o = std::make_shared<BoundsOptions>();
  CLI::App* cmd =
      app.add_subcommand("bounds",
                         "Lower bounds on a collective's time on a topology: latency, per-rank "
                         "ingress/egress, cuts, total traffic");
  cmd->add_option("-t,--topology", o->topology, "Built-in topology name or topology JSON file")
      ->required();
  cmd->add_option("-c,--collective", o->collective,
                  "Built-in collective name or collective JSON file")
      ->required();
  cmd->add_option("-s,--size", o->size, "Per-rank input size, e.g. 1M")->required();
  cmd->add_option("--chunks", o->chunks, "Chunks per rank of a built-in collective")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--root", o->root, "Root of a rooted collective")->capture_default_str();
  cmd->add_option("--proto", o->protocol,
                  "Scale alpha and beta by this protocol's factors and charge alpha per FIFO slot "
                  "of it (Simple, LL, LL128)")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one ccsynth-bounds JSON document");
  add_csv_flag(cmd, o->csv, "size");
  cmd->footer("See docs/bounds.md for the derivations. Exit codes: 0 ok, 2 bad input.");
  cmd->callback([o, &result] {
    run_bounds(*o);
    result.exit_code = kExitOk;
  });
}

}  // namespace ccsynth::cli
