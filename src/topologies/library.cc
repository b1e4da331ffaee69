// Name parsing and dispatch for the built-in topology library. Grammar (docs/topologies.md):
//   machine            dgx1 | ndv2 | dgx2 | ndv4 | dgxh100 | amdz52
//   machine "x" N      N nodes of the machine joined by IB (dgx2x2)
//   shape ":" D1 "x" D2 ... [ "@" key "=" V1 ["/" V2 ...] { "," key "=" ... } ]
// with keys alpha (us), gbps (GB/s), beta (us/MB, instead of gbps) and lanes; one value applies
// to every dimension, otherwise one value per dimension in the order of the numbers.

#include "ccsynth/topologies/library.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

#include "builders.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/formats/topology_json.h"

namespace ccsynth::topologies {

namespace {

using detail::DimCost;

constexpr int64_t kMaxRanks = kMaxTopologyRanks;
constexpr int64_t kMaxLinks = 1 << 25;

const std::vector<BuiltinInfo>& catalog() {
  static const std::vector<BuiltinInfo> kCatalog = {
      {"dgx1",
       "NVIDIA DGX-1: 8 V100, two 4-cliques + 4 cross NVLinks, 6 lanes per GPU (SCCL fig. 1)"},
      {"ndv2", "Azure NDv2: DGX-1 NVLink graph; NIC on the PCIe switch of GPUs 0/1 (TACCL 4.2)"},
      {"dgx2", "NVIDIA DGX-2: 16 V100 on NVSwitch, 8 NICs shared by GPUs 2k, 2k+1"},
      {"ndv4", "Azure NDv4: 8 A100 on NVSwitch, one 200 Gb/s NIC per GPU"},
      {"dgxh100", "NVIDIA DGX H100: 8 H100 on NVSwitch, one 400 Gb/s NIC per GPU"},
      {"amdz52", "Gigabyte Z52: 8 AMD MI50, two xGMI islands joined over PCIe (SCCL fig. 3)"},
      {"dgx1xN", "N DGX-1 nodes; one IB rail per NIC (GPUs 2k, 2k+1 of every node)"},
      {"ndv2xN", "N NDv2 nodes; IB switch over GPUs 0 and 1 of every node"},
      {"dgx2xN", "N DGX-2 nodes joined by an IB switch (e.g. dgx2x2)"},
      {"ndv4xN", "N NDv4 nodes joined by an IB switch"},
      {"dgxh100xN", "N DGX H100 nodes joined by an IB switch"},
      {"ring:N", "bidirectional ring of N ranks"},
      {"uring:N", "unidirectional ring r -> r+1 of N ranks"},
      {"line:N", "bidirectional line (chain) of N ranks"},
      {"fc:N", "fully connected: a link between every pair of N ranks"},
      {"switch:N", "N ranks on one switch"},
      {"mesh2d:AxB", "2-D mesh, rank = i + A*j"},
      {"torus2d:AxB", "2-D torus, rank = i + A*j"},
      {"mesh3d:AxBxC", "3-D mesh, rank = i + A*j + A*B*k"},
      {"torus3d:AxBxC", "3-D torus, rank = i + A*j + A*B*k"},
      {"hypercube:D", "2^D ranks, r linked to r xor 2^d"},
      {"dragonfly:GxP", "G fully-connected groups of P ranks, one global link per group pair"},
      {"rfs:AxBxC", "TACOS 3-D ring (A) x fully-connected (B) x switch (C); 200/100/50 GB/s"},
  };
  return kCatalog;
}

[[noreturn]] void fail(const std::string& reason) { throw UserError("", "topology", reason); }

std::string known_names() {
  std::string out;
  for (const BuiltinInfo& info : catalog()) out += (out.empty() ? "" : ", ") + info.name;
  return out;
}

std::string lower_trimmed(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    out.push_back(text.substr(start, end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

int parse_positive_int(const std::string& text, const std::string& what) {
  int value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value < 1) {
    fail(what + ": '" + text + "' is not a positive integer");
  }
  return value;
}

double parse_number(const std::string& text, const std::string& what) {
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() ||
      !std::isfinite(value)) {
    fail(what + ": '" + text + "' is not a number");
  }
  return value;
}

std::string format_number(double value) {
  char buffer[64];
  const auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, ptr);
}

// The @ parameters, expanded to one DimCost per cost dimension. `canonical` receives the
// parameters in canonical order (alpha, beta, gbps, lanes) for the topology's name.
std::vector<DimCost> parse_costs(const std::string& shape, int dims, const std::string& params,
                                 bool has_params, std::string& canonical) {
  std::vector<DimCost> costs(dims);
  for (int d = 0; d < dims; ++d) {
    costs[d] = {detail::kGenericAlphaUs, beta_from_gbps(detail::default_gbps(shape, d)), 1};
  }
  if (!has_params) return costs;
  std::map<std::string, std::vector<double>> values;
  for (const std::string& item : split(params, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) fail("parameter '" + item + "' is not key=value");
    const std::string key = item.substr(0, eq);
    if (key != "alpha" && key != "gbps" && key != "beta" && key != "lanes") {
      fail("unknown parameter '" + key + "' (expected alpha, gbps, beta or lanes)");
    }
    if (values.count(key)) fail("parameter '" + key + "' given twice");
    std::vector<double>& list = values[key];
    for (const std::string& v : split(item.substr(eq + 1), '/')) {
      list.push_back(parse_number(v, key));
    }
    if (list.size() != 1 && static_cast<int>(list.size()) != dims) {
      fail("parameter '" + key + "' has " + std::to_string(list.size()) +
           " values; give one, or one per dimension (" + std::to_string(dims) + ")");
    }
  }
  if (values.count("gbps") && values.count("beta")) fail("give gbps or beta, not both");
  for (const auto& [key, list] : values) {
    for (double v : list) {
      if (key == "alpha" && v < 0) fail("alpha must be >= 0 us");
      if ((key == "gbps" || key == "beta") && v <= 0) fail(key + " must be positive");
      if (key == "lanes" && (v < 1 || v != std::floor(v) || v > 1024)) {
        fail("lanes must be a whole number >= 1");
      }
    }
  }
  for (const char* key : {"alpha", "beta", "gbps", "lanes"}) {
    auto it = values.find(key);
    if (it == values.end()) continue;
    std::string text;
    for (double v : it->second) text += (text.empty() ? "" : "/") + format_number(v);
    canonical += (canonical.empty() ? "" : ",") + std::string(key) + "=" + text;
    for (int d = 0; d < dims; ++d) {
      const double v = it->second.size() == 1 ? it->second[0] : it->second[d];
      if (it->first == "alpha") costs[d].alpha_us = v;
      if (it->first == "beta") costs[d].beta_us_per_mb = v;
      if (it->first == "gbps") costs[d].beta_us_per_mb = beta_from_gbps(v);
      if (it->first == "lanes") costs[d].lanes = static_cast<int>(v);
    }
  }
  return costs;
}

Topology make_parameterized(const std::string& spec, const std::string& params, bool has_params) {
  const size_t colon = spec.find(':');
  const std::string shape = spec.substr(0, colon);
  const int arity = detail::shape_arity(shape);
  if (arity < 0) fail("unknown topology '" + spec + "' (known: " + known_names() + ")");
  std::vector<int> dims;
  for (const std::string& part : split(spec.substr(colon + 1), 'x')) {
    dims.push_back(parse_positive_int(part, shape + " size"));
  }
  if (static_cast<int>(dims.size()) != arity) {
    const char* example = arity == 1 ? ":8" : arity == 2 ? ":4x4" : ":4x4x4";
    fail(shape + " takes " + std::to_string(arity) + " size(s), e.g. " + shape + example);
  }
  int64_t ranks = 1;
  if (shape == "hypercube") {
    if (dims[0] > 22) fail("hypercube dimension must be <= 22");
    ranks = int64_t{1} << dims[0];
  } else {
    for (int d : dims) {
      ranks *= d;
      if (ranks > kMaxRanks) fail("more than " + std::to_string(kMaxRanks) + " ranks");
    }
  }
  if (ranks < 2) fail(shape + " needs at least 2 ranks");
  // Full meshes grow quadratically: refuse sizes whose link list alone would take gigabytes.
  int64_t links = 0;
  if (shape == "fc") links = ranks * ranks;
  if (shape == "dragonfly") links = ranks * dims[1] + int64_t{dims[0]} * dims[0];
  if (shape == "rfs") links = ranks * (dims[1] + 2);
  if (links > kMaxLinks) fail("more than " + std::to_string(kMaxLinks) + " links");
  std::string canonical_params;
  const std::vector<DimCost> costs = parse_costs(shape, detail::cost_dimensions(shape, dims),
                                                 params, has_params, canonical_params);
  Topology t = detail::make_shape(shape, dims, costs);
  t.name = shape + ":";
  for (size_t d = 0; d < dims.size(); ++d) t.name += (d ? "x" : "") + std::to_string(dims[d]);
  if (!canonical_params.empty()) t.name += "@" + canonical_params;
  return t;
}

// "dgx2x4" -> multi-node, or nothing when `spec` is not machine "x" N.
std::optional<Topology> make_cluster(const std::string& spec) {
  for (const std::string& machine : detail::machine_names()) {
    if (spec.size() <= machine.size() + 1 || spec.compare(0, machine.size(), machine) != 0 ||
        spec[machine.size()] != 'x') {
      continue;
    }
    const std::string count = spec.substr(machine.size() + 1);
    if (!std::all_of(count.begin(), count.end(), [](char c) { return std::isdigit(c); })) {
      continue;
    }
    const int nodes = parse_positive_int(count, machine + " node count");
    if (nodes == 1) return detail::make_machine(machine);
    if (static_cast<int64_t>(nodes) * 16 > kMaxRanks) fail("too many nodes");
    return detail::make_multi_node(machine, nodes);
  }
  return std::nullopt;
}

}  // namespace

Topology make_builtin(const std::string& name) {
  const std::string text = lower_trimmed(name);
  const size_t at = text.find('@');
  const std::string spec = text.substr(0, at);
  const std::string params = at == std::string::npos ? "" : text.substr(at + 1);
  Topology t;
  if (spec.find(':') != std::string::npos) {
    t = make_parameterized(spec, params, at != std::string::npos);
  } else {
    if (at != std::string::npos) {
      fail("'@' parameters apply to parameterized shapes (ring:N, mesh2d:AxB, ...) only");
    }
    const auto& machines = detail::machine_names();
    if (std::find(machines.begin(), machines.end(), spec) != machines.end()) {
      t = detail::make_machine(spec);
    } else if (auto cluster = make_cluster(spec)) {
      t = std::move(*cluster);
    } else {
      fail("unknown topology '" + name + "' (known: " + known_names() +
           "; or a topology JSON file)");
    }
  }
  validate(t, "");
  return t;
}

std::vector<std::string> builtin_names() {
  std::vector<std::string> out;
  for (const BuiltinInfo& info : catalog()) out.push_back(info.name);
  return out;
}

std::vector<BuiltinInfo> builtin_catalog() { return catalog(); }

Topology resolve_topology(const std::string& name_or_path) {
  std::error_code ec;
  const bool is_file = std::filesystem::is_regular_file(name_or_path, ec);
  const bool json_suffix =
      name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0;
  if (is_file || json_suffix) return formats::read_topology_file(name_or_path);
  return make_builtin(name_or_path);
}

}  // namespace ccsynth::topologies
