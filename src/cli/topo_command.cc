// `ccsynth topo list|show|export`: the built-in topology library and topology JSON files.

#include <fmt/format.h>

#include <iostream>
#include <map>
#include <tuple>

#include "ccsynth/core/units.h"
#include "ccsynth/formats/topology_json.h"
#include "ccsynth/topologies/library.h"
#include "cli/command.h"

namespace ccsynth::cli {

namespace {

// Above this many ranks `show` skips the all-pairs BFS for the diameter unless asked.
constexpr int kDiameterRankLimit = 4096;

struct TopoOptions {
  std::string topology;
  std::string output;
  bool json = false;
  bool csv = false;
  bool diameter = false;
};

// Links with equal kind, lanes and cost, counted.
struct LinkGroup {
  std::string kind;
  int lanes;
  double alpha_us;
  double beta_us_per_mb;
  int count = 0;
};

// Switches with equal kind, size and cost, counted.
struct SwitchGroup {
  std::string kind;
  int ranks;
  int ports;  // fewer than ranks when members share a port (a NIC shared by several GPUs)
  double alpha_us;
  double port_beta_us_per_mb;
  std::string first_name;
  int count = 0;
};

std::vector<LinkGroup> group_links(const Topology& t) {
  std::map<std::tuple<std::string, int, double, double>, LinkGroup> groups;
  for (const Link& l : t.links) {
    auto [it, inserted] =
        groups.try_emplace({l.kind, l.lanes, l.alpha_us, l.beta_us_per_mb},
                           LinkGroup{l.kind, l.lanes, l.alpha_us, l.beta_us_per_mb});
    ++it->second.count;
  }
  std::vector<LinkGroup> out;
  for (auto& [key, group] : groups) out.push_back(group);
  return out;
}

std::vector<SwitchGroup> group_switches(const Topology& t) {
  std::map<std::tuple<std::string, int, int, double, double>, SwitchGroup> groups;
  for (const Switch& s : t.switches) {
    const int size = static_cast<int>(s.ranks.size());
    auto [it, inserted] = groups.try_emplace(
        {s.kind, size, s.num_ports(), s.alpha_us, s.port_beta_us_per_mb},
        SwitchGroup{s.kind, size, s.num_ports(), s.alpha_us, s.port_beta_us_per_mb, s.name});
    ++it->second.count;
  }
  std::vector<SwitchGroup> out;
  for (auto& [key, group] : groups) out.push_back(group);
  return out;
}

// The diameter in hops, or -2 when skipped because the topology is large.
int diameter_of(const Topology& t, bool force) {
  if (!force && t.num_ranks > kDiameterRankLimit) return -2;
  return t.diameter();
}

std::vector<int> node_sizes(const Topology& t) {
  std::vector<int> sizes;
  for (const auto& node : t.nodes) sizes.push_back(static_cast<int>(node.size()));
  return sizes;
}

nlohmann::json summary_json(const Topology& t, int diameter) {
  nlohmann::json links = nlohmann::json::array();
  for (const LinkGroup& g : group_links(t)) {
    links.push_back({{"kind", g.kind},
                     {"lanes", g.lanes},
                     {"alpha_us", g.alpha_us},
                     {"beta_us_per_mb", g.beta_us_per_mb},
                     {"gbps_per_lane", gbps_from_beta(g.beta_us_per_mb)},
                     {"count", g.count}});
  }
  nlohmann::json switches = nlohmann::json::array();
  for (const SwitchGroup& g : group_switches(t)) {
    switches.push_back({{"kind", g.kind},
                        {"ranks", g.ranks},
                        {"ports", g.ports},
                        {"alpha_us", g.alpha_us},
                        {"port_beta_us_per_mb", g.port_beta_us_per_mb},
                        {"gbps_per_port", gbps_from_beta(g.port_beta_us_per_mb)},
                        {"first_name", g.first_name},
                        {"count", g.count}});
  }
  return {{"format", "ccsynth-topology-summary"},
          {"version", 1},
          {"name", t.name},
          {"ranks", t.num_ranks},
          {"nodes", t.nodes.size()},
          {"node_sizes", node_sizes(t)},
          {"links", t.links.size()},
          {"link_groups", std::move(links)},
          {"switches", t.switches.size()},
          {"switch_groups", std::move(switches)},
          {"diameter", diameter >= -1 ? nlohmann::json(diameter) : nlohmann::json(nullptr)}};
}

void print_summary(const Topology& t, int diameter, std::ostream& out) {
  const std::vector<int> sizes = node_sizes(t);
  const bool uniform =
      std::all_of(sizes.begin(), sizes.end(), [&](int s) { return s == sizes.front(); });
  out << fmt::format("topology {}: {} ranks, {} node{}", t.name, t.num_ranks, sizes.size(),
                     sizes.size() == 1 ? "" : "s");
  if (!sizes.empty() && uniform) out << fmt::format(" of {} ranks", sizes.front());
  out << "\n\n";
  out << fmt::format("links: {} directed\n", t.links.size());
  if (!t.links.empty()) {
    out << fmt::format("  {:<10} {:>5} {:>9} {:>11} {:>10} {:>7}\n", "kind", "lanes", "alpha_us",
                       "beta_us/MB", "GB/s/lane", "count");
    for (const LinkGroup& g : group_links(t)) {
      out << fmt::format("  {:<10} {:>5} {:>9.3g} {:>11.4g} {:>10.4g} {:>7}\n", g.kind, g.lanes,
                         g.alpha_us, g.beta_us_per_mb, gbps_from_beta(g.beta_us_per_mb), g.count);
    }
  }
  out << fmt::format("\nswitches: {}\n", t.switches.size());
  if (!t.switches.empty()) {
    out << fmt::format("  {:<10} {:>6} {:>6} {:>9} {:>15} {:>10} {:>6}  {}\n", "kind", "ranks",
                       "ports", "alpha_us", "port_beta_us/MB", "GB/s/port", "count", "e.g.");
    for (const SwitchGroup& g : group_switches(t)) {
      out << fmt::format("  {:<10} {:>6} {:>6} {:>9.3g} {:>15.4g} {:>10.4g} {:>6}  {}\n", g.kind,
                         g.ranks, g.ports, g.alpha_us, g.port_beta_us_per_mb,
                         gbps_from_beta(g.port_beta_us_per_mb), g.count, g.first_name);
    }
  }
  out << "\ndiameter: ";
  if (diameter == -2) {
    out << fmt::format("not computed (more than {} ranks; pass --diameter)\n", kDiameterRankLimit);
  } else if (diameter == -1) {
    out << "infinite (some rank is unreachable)\n";
  } else {
    out << diameter << " hop" << (diameter == 1 ? "" : "s") << "\n";
  }
}

void run_list(const TopoOptions& options) {
  const auto catalog = topologies::builtin_catalog();
  if (options.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& info : catalog) {
      list.push_back({{"name", info.name}, {"description", info.description}});
    }
    std::cout << nlohmann::json{{"format", "ccsynth-topology-list"},
                                {"version", 1},
                                {"topologies", std::move(list)}}
                     .dump(2)
              << "\n";
    return;
  }
  if (options.csv) {
    plan::Table table{{"name", "description"}, {}};
    for (const auto& info : catalog) table.add(info.name, info.description);
    print_csv(table);
    return;
  }
  for (const auto& info : catalog)
    std::cout << fmt::format("{:<15} {}\n", info.name, info.description);
  std::cout << "\nShapes take '@' parameters, e.g. mesh2d:4x4@alpha=0.5,gbps=50 or "
               "rfs:8x8x8@gbps=200/100/50\n(one value, or one per dimension; keys alpha, gbps, "
               "beta, lanes). See docs/topologies.md.\n";
}

// The link and switch groups of the summary as one table: a switch group's lanes are its
// ports and its beta is per port.
plan::Table connection_groups(const Topology& t) {
  plan::Table table{
      {"type", "kind", "lanes_or_ports", "alpha_us", "beta_us_per_mb", "gbps", "count"}, {}};
  for (const LinkGroup& g : group_links(t)) {
    table.add("link", g.kind, g.lanes, g.alpha_us, g.beta_us_per_mb,
              gbps_from_beta(g.beta_us_per_mb), g.count);
  }
  for (const SwitchGroup& g : group_switches(t)) {
    table.add("switch", g.kind, g.ports, g.alpha_us, g.port_beta_us_per_mb,
              gbps_from_beta(g.port_beta_us_per_mb), g.count);
  }
  return table;
}

void run_show(const TopoOptions& options) {
  const Topology t = topologies::resolve_topology(options.topology);
  const int diameter = diameter_of(t, options.diameter);
  if (options.json) {
    std::cout << summary_json(t, diameter).dump(2) << "\n";
  } else if (options.csv) {
    print_csv(connection_groups(t));
  } else {
    print_summary(t, diameter, std::cout);
  }
}

void run_export(const TopoOptions& options) {
  refuse_overwrite("-o", options.output, {{"the topology", options.topology}});
  const Topology t = topologies::resolve_topology(options.topology);
  const std::string text = formats::write_topology_json(t);
  if (options.output.empty() || options.output == "-") {
    std::cout << text;
    return;
  }
  write_text_file(options.output, text);
  std::cerr << fmt::format("wrote {} ({} ranks, {} links, {} switches)\n", options.output,
                           t.num_ranks, t.links.size(), t.switches.size());
}

}  // namespace

void add_topo_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<TopoOptions>();
  CLI::App* topo = app.add_subcommand(
      "topo", "List, inspect and export topologies (built-in names or topology JSON files)");
  topo->require_subcommand(1);
  topo->footer(
      "Built-in names are case-insensitive: machines (dgx1, ndv2, dgx2, ndv4, dgxh100, amdz52),\n"
      "clusters <machine>x<N> (dgx2x2), shapes (ring:8, mesh2d:4x4@gbps=100, rfs:2x4x8).\n"
      "Exit codes: 0 ok, 2 bad input. See docs/topologies.md.");

  CLI::App* list = topo->add_subcommand("list", "List the built-in topologies and name patterns");
  list->add_flag("--json", options->json, "Print one JSON document");
  add_csv_flag(list, options->csv, "topology");
  list->callback([options, &result] {
    run_list(*options);
    result.exit_code = kExitOk;
  });

  CLI::App* show = topo->add_subcommand(
      "show",
      "Summarize a topology: ranks, nodes, links grouped by kind and cost, switches, "
      "diameter");
  show->add_option("topology", options->topology, "Built-in name or topology JSON file")
      ->required();
  show->add_flag("--json", options->json, "Print one JSON document (ccsynth-topology-summary)");
  add_csv_flag(show, options->csv, "group of equal links or switches");
  show->add_flag(
      "--diameter", options->diameter,
      fmt::format("Compute the diameter even above {} ranks (all-pairs BFS)", kDiameterRankLimit));
  show->callback([options, &result] {
    run_show(*options);
    result.exit_code = kExitOk;
  });

  CLI::App* exp =
      topo->add_subcommand("export", "Write a topology as ccsynth-topology JSON (docs/formats.md)");
  exp->add_option("topology", options->topology, "Built-in name or topology JSON file")->required();
  exp->add_option("-o,--output", options->output, "Output file (default: stdout)");
  exp->callback([options, &result] {
    run_export(*options);
    result.exit_code = kExitOk;
  });
}

}  // namespace ccsynth::cli
