#include "ccsynth/formats/topology_json.h"

#include <tuple>
#include <utility>

#include "ccsynth/core/error.h"

namespace ccsynth::formats {

namespace {

constexpr const char* kFormat = "ccsynth-topology";
constexpr int kVersion = 1;

Json link_to_json(const Link& l) {
  return Json{{"src", l.src},
              {"dst", l.dst},
              {"lanes", l.lanes},
              {"alpha_us", l.alpha_us},
              {"beta_us_per_mb", l.beta_us_per_mb},
              {"kind", l.kind}};
}

// "port_group" only when some ranks share a port, so documents without it round-trip exactly.
Json switch_to_json(const Switch& s) {
  Json out{{"name", s.name},
           {"ranks", s.ranks},
           {"alpha_us", s.alpha_us},
           {"port_beta_us_per_mb", s.port_beta_us_per_mb},
           {"kind", s.kind}};
  if (!s.port_group.empty()) out["port_group"] = s.port_group;
  if (s.port_lanes != 0) out["port_lanes"] = s.port_lanes;
  if (!s.port_socket.empty()) out["port_socket"] = s.port_socket;
  if (s.socket_beta_us_per_mb != 0.0) out["socket_beta_us_per_mb"] = s.socket_beta_us_per_mb;
  return out;
}

// The protocols whose factors differ from the defaults, so documents without them round-trip.
Json protocols_to_json(const Topology& t) {
  const Topology defaults;
  Json out = Json::object();
  const std::tuple<const char*, const ProtocolCost*, const ProtocolCost*> protocols[] = {
      {"Simple", &t.simple, &defaults.simple},
      {"LL128", &t.ll128, &defaults.ll128},
      {"LL", &t.ll, &defaults.ll}};
  for (const auto& [name, cost, fallback] : protocols) {
    if (*cost == *fallback) continue;
    out[name] = Json{{"alpha_factor", cost->alpha_factor}, {"beta_factor", cost->beta_factor}};
  }
  return out;
}

void protocols_from_json(const JsonReader& r, Topology& t) {
  r.require_object();
  r.reject_unknown_keys({"Simple", "LL128", "LL"});
  const std::pair<const char*, ProtocolCost*> protocols[] = {
      {"Simple", &t.simple}, {"LL128", &t.ll128}, {"LL", &t.ll}};
  for (const auto& [name, cost] : protocols) {
    if (!r.has(name)) continue;
    const JsonReader p = r.child(name);
    p.require_object();
    p.reject_unknown_keys({"alpha_factor", "beta_factor"});
    cost->alpha_factor = p.get_double("alpha_factor", cost->alpha_factor);
    cost->beta_factor = p.get_double("beta_factor", cost->beta_factor);
  }
}

// An array of integers at reader.field(key) (e.g. nodes[2] or switches[0].ranks).
std::vector<int> int_array(const Json& value, const JsonReader& reader, const std::string& key,
                           const std::string& what = "rank") {
  if (!value.is_array()) reader.fail(key, "expected an array of " + what + "s");
  std::vector<int> out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    const Json& v = value[i];
    if (!json_fits_int(v)) {
      reader.fail(key, "element " + std::to_string(i) + " is not an integer " + what + ": " +
                           json_excerpt(v));
    }
    out.push_back(v.get<int>());
  }
  return out;
}

Link link_from_json(const JsonReader& r) {
  r.require_object();
  r.reject_unknown_keys({"src", "dst", "lanes", "alpha_us", "beta_us_per_mb", "kind"});
  Link l;
  l.src = r.get_int("src");
  l.dst = r.get_int("dst");
  l.lanes = r.get_int("lanes", 1);
  l.alpha_us = r.get_double("alpha_us");
  l.beta_us_per_mb = r.get_double("beta_us_per_mb");
  l.kind = r.get_string("kind", "generic");
  return l;
}

Switch switch_from_json(const JsonReader& r) {
  r.require_object();
  r.reject_unknown_keys({"name", "ranks", "alpha_us", "port_beta_us_per_mb", "kind", "port_group",
                         "port_lanes", "port_socket", "socket_beta_us_per_mb"});
  Switch s;
  s.name = r.get_string("name");
  s.ranks = int_array(r.get_array("ranks"), r, "ranks");
  s.alpha_us = r.get_double("alpha_us");
  s.port_beta_us_per_mb = r.get_double("port_beta_us_per_mb");
  s.kind = r.get_string("kind", "switch");
  if (r.has("port_group"))
    s.port_group = int_array(r.get_array("port_group"), r, "port_group", "port id");
  s.port_lanes = r.get_int("port_lanes", 0);
  if (r.has("port_socket"))
    s.port_socket = int_array(r.get_array("port_socket"), r, "port_socket", "socket id");
  s.socket_beta_us_per_mb = r.get_double("socket_beta_us_per_mb", 0.0);
  return s;
}

}  // namespace

Json topology_to_json(const Topology& t) {
  Json links = Json::array();
  for (const Link& l : t.links) links.push_back(link_to_json(l));
  Json switches = Json::array();
  for (const Switch& s : t.switches) switches.push_back(switch_to_json(s));
  Json out{{"format", kFormat},
           {"version", kVersion},
           {"name", t.name},
           {"ranks", t.num_ranks},
           {"nodes", t.nodes},
           {"links", std::move(links)},
           {"switches", std::move(switches)}};
  // Written only when set, so documents without them round-trip unchanged.
  if (t.launch_us != 0.0) out["launch_us"] = t.launch_us;
  if (t.memory_gbps != Topology{}.memory_gbps) out["memory_gbps"] = t.memory_gbps;
  if (t.shared_links) out["shared_links"] = true;
  if (t.threadblock_gbps != 0.0) out["threadblock_gbps"] = t.threadblock_gbps;
  if (!t.host_switches.empty()) {
    Json host = Json::array();
    for (const Switch& s : t.host_switches) host.push_back(switch_to_json(s));
    out["host_switches"] = std::move(host);
  }
  Json protocols = protocols_to_json(t);
  if (!protocols.empty()) out["protocols"] = std::move(protocols);
  return out;
}

Topology topology_from_json(const Json& json, const std::string& file) {
  const JsonReader r(json, file);
  r.require_header(kFormat, kVersion);
  r.reject_unknown_keys({"format", "version", "name", "ranks", "nodes", "links", "switches",
                         "launch_us", "memory_gbps", "shared_links", "protocols",
                         "threadblock_gbps", "host_switches"});
  Topology t;
  t.name = r.get_string("name");
  t.num_ranks = r.get_int("ranks");
  if (t.num_ranks < 1 || t.num_ranks > kMaxTopologyRanks) {
    r.fail("ranks", "must be 1.." + std::to_string(kMaxTopologyRanks) + ", got " +
                        std::to_string(t.num_ranks));
  }
  t.launch_us = r.get_double("launch_us", 0.0);
  t.memory_gbps = r.get_double("memory_gbps", Topology{}.memory_gbps);
  t.shared_links = r.get_bool("shared_links", false);
  t.threadblock_gbps = r.get_double("threadblock_gbps", 0.0);
  if (r.has("protocols")) protocols_from_json(r.child("protocols"), t);
  if (r.has("nodes")) {
    const Json& nodes = r.get_array("nodes");
    for (size_t n = 0; n < nodes.size(); ++n) {
      t.nodes.push_back(int_array(nodes[n], r, "nodes[" + std::to_string(n) + "]"));
    }
  } else if (t.num_ranks > 0) {
    std::vector<int> all(t.num_ranks);
    for (int i = 0; i < t.num_ranks; ++i) all[i] = i;
    t.nodes.push_back(std::move(all));
  }
  const Json& links = r.get_array("links");
  t.links.reserve(links.size());
  for (size_t i = 0; i < links.size(); ++i) t.links.push_back(link_from_json(r.child("links", i)));
  for (const auto& [key, list] :
       {std::pair{"switches", &t.switches}, std::pair{"host_switches", &t.host_switches}}) {
    if (!r.has(key)) continue;
    const Json& switches = r.get_array(key);
    for (size_t i = 0; i < switches.size(); ++i) {
      list->push_back(switch_from_json(r.child(key, i)));
    }
  }
  validate(t, file);
  return t;
}

Topology read_topology_file(const std::string& path) {
  return topology_from_json(read_json_file(path), path);
}

namespace {

// {"k": v, ...} on one line, keys in the given order (the order docs/formats.md uses).
std::string inline_object(const Json& object, const std::vector<const char*>& keys) {
  std::string out = "{";
  for (size_t i = 0; i < keys.size(); ++i) {
    out += (i ? ", \"" : "\"") + std::string(keys[i]) + "\": " + object[keys[i]].dump(-1, ' ');
  }
  return out + "}";
}

std::string inline_array(const Json& array) {
  std::string out = "[";
  for (size_t i = 0; i < array.size(); ++i) out += (i ? ", " : "") + array[i].dump();
  return out + "]";
}

// One line per switch of a "switches" / "host_switches" array.
std::vector<std::string> switch_lines(const Json& switches) {
  std::vector<std::string> items;
  for (const Json& sw : switches) {
    std::string line = inline_object(sw, {"name", "kind", "alpha_us", "port_beta_us_per_mb"});
    line.pop_back();
    line += ", \"ranks\": " + inline_array(sw["ranks"]);
    if (sw.contains("port_group")) line += ", \"port_group\": " + inline_array(sw["port_group"]);
    if (sw.contains("port_lanes")) line += ", \"port_lanes\": " + sw["port_lanes"].dump();
    if (sw.contains("port_socket")) {
      line += ", \"port_socket\": " + inline_array(sw["port_socket"]);
    }
    if (sw.contains("socket_beta_us_per_mb")) {
      line += ", \"socket_beta_us_per_mb\": " + sw["socket_beta_us_per_mb"].dump();
    }
    items.push_back(line + "}");
  }
  return items;
}

}  // namespace

std::string write_topology_json(const Topology& t) {
  const Json doc = topology_to_json(t);
  std::string out = "{\n";
  for (const char* key : {"format", "version", "name", "ranks", "launch_us", "memory_gbps",
                          "shared_links", "threadblock_gbps", "protocols"}) {
    if (!doc.contains(key)) continue;
    out += "  \"" + std::string(key) + "\": " + doc[key].dump() + ",\n";
  }
  auto list = [&out](const char* key, const std::vector<std::string>& items, bool last) {
    out += "  \"" + std::string(key) + "\": [";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ",\n    " : "\n    ") + items[i];
    out += items.empty() ? "]" : "\n  ]";
    out += last ? "\n" : ",\n";
  };
  std::vector<std::string> items;
  for (const Json& node : doc["nodes"]) items.push_back(inline_array(node));
  list("nodes", items, false);
  items.clear();
  for (const Json& link : doc["links"]) {
    items.push_back(
        inline_object(link, {"src", "dst", "lanes", "alpha_us", "beta_us_per_mb", "kind"}));
  }
  list("links", items, false);
  const bool host = doc.contains("host_switches");
  list("switches", switch_lines(doc["switches"]), !host);
  if (host) list("host_switches", switch_lines(doc["host_switches"]), true);
  return out + "}\n";
}

}  // namespace ccsynth::formats
