#include "ccsynth/synth/sketch.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/formats/json_io.h"

namespace ccsynth::synth {

using Json = nlohmann::json;

std::string to_string(IntranodeStrategy strategy) {
  switch (strategy) {
    case IntranodeStrategy::kNone: return "none";
    case IntranodeStrategy::kSwitch: return "switch";
    case IntranodeStrategy::kMinMax: return "minmax";
    case IntranodeStrategy::kMaxMin: return "maxmin";
  }
  return "none";
}

std::string to_string(SwitchPolicy policy) {
  switch (policy) {
    case SwitchPolicy::kFree: return "free";
    case SwitchPolicy::kUcMin: return "uc-min";
    case SwitchPolicy::kUcMax: return "uc-max";
  }
  return "free";
}

std::string to_string(InternodeConn conn) {
  switch (conn) {
    case InternodeConn::kMap: return "map";
    case InternodeConn::kFullyConnected: return "fully-connected";
    case InternodeConn::kDirectMap: return "direct-map";
  }
  return "map";
}

namespace {

// Reading context: file name plus the JSON path of the current object, for error messages.
struct Ctx {
  const std::string& file;
  std::string path;

  std::string at(const std::string& key) const { return path.empty() ? key : path + "." + key; }
  [[noreturn]] void fail(const std::string& key, const std::string& reason) const {
    throw UserError(file, at(key), reason);
  }
  Ctx child(const std::string& key) const { return {file, at(key)}; }
};

void require_object(const Json& j, const Ctx& ctx, const std::string& key) {
  if (!j.is_object()) ctx.fail(key, "must be a JSON object");
}

void reject_unknown(const Json& j, const Ctx& ctx, const std::set<std::string>& allowed) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!allowed.count(it.key())) {
      std::string list;
      for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
      ctx.fail(it.key(), "unknown field (known: " + list + ")");
    }
  }
}

// An integer field; values outside int's range are rejected (never wrapped modulo 2^32).
int read_int(const Json& j, const Ctx& ctx, const std::string& key) {
  if (!j.is_number_integer()) ctx.fail(key, "must be an integer, got " + formats::json_excerpt(j));
  if (!formats::json_fits_int(j)) {
    ctx.fail(key, "integer " + j.dump() + " is outside the range of a 32-bit int");
  }
  return j.get<int>();
}

// Local GPU index written as a JSON key ("15") or number.
int parse_local(const std::string& text, const Ctx& ctx, const std::string& key) {
  size_t used = 0;
  int value = -1;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || value < 0) {
    ctx.fail(key, "'" + text + "' is not a local GPU index");
  }
  return value;
}

std::vector<int> read_int_list(const Json& j, const Ctx& ctx, const std::string& key) {
  if (!j.is_array()) ctx.fail(key, "must be an array of integers");
  std::vector<int> out;
  std::set<int> seen;
  for (size_t i = 0; i < j.size(); ++i) {
    const int v = read_int(j[i], ctx, key + "[" + std::to_string(i) + "]");
    if (v < 0) ctx.fail(key + "[" + std::to_string(i) + "]", "must be >= 0");
    if (!seen.insert(v).second) {
      ctx.fail(key, "lists GPU " + std::to_string(v) + " twice");
    }
    out.push_back(v);
  }
  return out;
}

std::map<int, std::vector<int>> read_gpu_map(const Json& j, const Ctx& ctx,
                                             const std::string& key) {
  if (!j.is_object()) ctx.fail(key, "must be an object of GPU -> [GPUs]");
  std::map<int, std::vector<int>> out;
  const Ctx sub = ctx.child(key);
  for (auto it = j.begin(); it != j.end(); ++it) {
    const int gpu = parse_local(it.key(), sub, it.key());
    out[gpu] = read_int_list(it.value(), sub, it.key());
  }
  return out;
}

SwitchPolicy parse_policy(const Json& j, const Ctx& ctx, const std::string& key) {
  if (!j.is_string()) ctx.fail(key, "must be \"uc-min\" or \"uc-max\"");
  const std::string s = j.get<std::string>();
  if (s == "uc-min") return SwitchPolicy::kUcMin;
  if (s == "uc-max") return SwitchPolicy::kUcMax;
  if (s == "free" || s == "none") return SwitchPolicy::kFree;
  ctx.fail(key, "unknown switch-hyperedge strategy '" + s + "' (uc-min, uc-max, free)");
}

IntranodeSketch parse_intranode(const Json& j, const Ctx& ctx) {
  require_object(j, ctx, "");
  reject_unknown(j, ctx, {"strategy", "switches", "switch_hyperedge_strategy"});
  IntranodeSketch out;
  if (j.contains("strategy") && !j["strategy"].is_string()) {
    ctx.fail("strategy", "must be a string, got " + formats::json_excerpt(j["strategy"]));
  }
  const std::string strategy = j.value("strategy", std::string("none"));
  if (strategy == "none") {
    out.strategy = IntranodeStrategy::kNone;
  } else if (strategy == "switch") {
    out.strategy = IntranodeStrategy::kSwitch;
  } else if (strategy == "minmax") {
    out.strategy = IntranodeStrategy::kMinMax;
  } else if (strategy == "maxmin") {
    out.strategy = IntranodeStrategy::kMaxMin;
  } else {
    ctx.fail("strategy", "unknown strategy '" + strategy + "' (switch, none, minmax, maxmin)");
  }
  if (j.contains("switches")) {
    const Json& sw = j["switches"];
    if (!sw.is_array()) ctx.fail("switches", "must be an array of GPU lists");
    for (size_t i = 0; i < sw.size(); ++i) {
      const std::string key = "switches[" + std::to_string(i) + "]";
      out.switches.push_back(read_int_list(sw[i], ctx, key));
      if (out.switches.back().size() < 2) ctx.fail(key, "a switch needs at least two GPUs");
    }
  }
  if (j.contains("switch_hyperedge_strategy")) {
    const Json& p = j["switch_hyperedge_strategy"];
    if (p.is_string()) {
      out.policies.push_back(parse_policy(p, ctx, "switch_hyperedge_strategy"));
    } else if (p.is_array()) {
      for (size_t i = 0; i < p.size(); ++i) {
        out.policies.push_back(
            parse_policy(p[i], ctx, "switch_hyperedge_strategy[" + std::to_string(i) + "]"));
      }
    } else {
      ctx.fail("switch_hyperedge_strategy", "must be a list of \"uc-min\" / \"uc-max\"");
    }
  }
  if (out.strategy == IntranodeStrategy::kSwitch) {
    if (out.switches.empty()) ctx.fail("switches", "strategy \"switch\" needs at least one switch");
    if (out.policies.size() > 1 && out.policies.size() != out.switches.size()) {
      ctx.fail("switch_hyperedge_strategy",
               "has " + std::to_string(out.policies.size()) + " entries for " +
                   std::to_string(out.switches.size()) + " switches (give one or one per switch)");
    }
    if (out.policies.empty()) out.policies.push_back(SwitchPolicy::kFree);
    if (out.policies.size() == 1) out.policies.resize(out.switches.size(), out.policies[0]);
  } else {
    if (!out.switches.empty()) {
      ctx.fail("switches",
               "only strategy \"switch\" takes switches (strategy is \"" + strategy + "\")");
    }
    if (!out.policies.empty()) {
      ctx.fail("switch_hyperedge_strategy",
               "only strategy \"switch\" takes a switch-hyperedge strategy");
    }
  }
  return out;
}

// internode_conn: absent or "fully-connected", "direct-map", or a map sender -> receivers.
void parse_internode_conn(const Json& j, const Ctx& ctx, InternodeSketch& out) {
  if (!j.contains("internode_conn")) {
    out.conn = InternodeConn::kFullyConnected;
  } else if (j["internode_conn"].is_string()) {
    const std::string s = j["internode_conn"].get<std::string>();
    if (s == "fully-connected") {
      out.conn = InternodeConn::kFullyConnected;
    } else if (s == "direct-map") {
      out.conn = InternodeConn::kDirectMap;
    } else {
      ctx.fail("internode_conn",
               "unknown connection '" + s + "' (a map, \"fully-connected\" or \"direct-map\")");
    }
  } else {
    out.conn = InternodeConn::kMap;
    out.conn_map = read_gpu_map(j["internode_conn"], ctx, "internode_conn");
    if (out.conn_map.empty()) ctx.fail("internode_conn", "names no sender");
    for (const auto& [sender, receivers] : out.conn_map) {
      if (receivers.empty()) {
        ctx.child("internode_conn").fail(std::to_string(sender), "sender without receivers");
      }
    }
  }
}

// beta_split: GPU -> n, the sender using 1/n of the bandwidth.
std::map<int, double> parse_beta_split(const Json& b, const Ctx& ctx) {
  if (!b.is_object()) ctx.fail("beta_split", "must be an object of GPU -> split");
  const Ctx sub = ctx.child("beta_split");
  std::map<int, double> out;
  for (auto it = b.begin(); it != b.end(); ++it) {
    const int gpu = parse_local(it.key(), sub, it.key());
    if (!it.value().is_number() || it.value().get<double>() < 1.0) {
      sub.fail(it.key(), "must be a number >= 1 (the sender uses 1/n of the bandwidth)");
    }
    out[gpu] = it.value().get<double>();
  }
  return out;
}

// Contradictions between the relay fields: relays and splits of GPUs that send nothing
// inter-node, and a chunk_to_relay_map that disagrees with gpus_to_sender_rev_map.
void check_relay_fields(const InternodeSketch& out, const Ctx& ctx) {
  auto is_sender = [&](int gpu) {
    return out.conn != InternodeConn::kMap || out.conn_map.count(gpu) > 0;
  };
  for (const auto& [sender, gpus] : out.sender_rev_map) {
    if (!is_sender(sender)) {
      ctx.child("gpus_to_sender_rev_map")
          .fail(std::to_string(sender), "GPU " + std::to_string(sender) +
                                            " relays chunks but internode_conn gives it no "
                                            "receivers");
    }
  }
  for (const auto& [sender, split] : out.beta_split) {
    if (!is_sender(sender)) {
      ctx.child("beta_split")
          .fail(std::to_string(sender),
                "GPU " + std::to_string(sender) + " is not an inter-node sender");
    }
  }
  if (out.chunk_to_relay_map && !out.sender_rev_map.empty()) {
    const auto [r1, r2] = *out.chunk_to_relay_map;
    for (const auto& [sender, gpus] : out.sender_rev_map) {
      for (int gpu : gpus) {
        if ((gpu / r1) * r1 + r2 != sender) {
          ctx.fail("chunk_to_relay_map", "sends GPU " + std::to_string(gpu) + "'s chunks via GPU " +
                                             std::to_string((gpu / r1) * r1 + r2) +
                                             " but gpus_to_sender_rev_map says GPU " +
                                             std::to_string(sender));
        }
      }
    }
  }
}

InternodeSketch parse_internode(const Json& j, const Ctx& ctx) {
  require_object(j, ctx, "");
  reject_unknown(j, ctx,
                 {"strategy", "internode_conn", "gpus_to_sender_rev_map", "enforce_ordering",
                  "beta_split", "chunk_to_relay_map"});
  InternodeSketch out;
  out.present = true;
  if (j.contains("strategy")) {
    if (!j["strategy"].is_string() || j["strategy"].get<std::string>() != "relay") {
      ctx.fail("strategy", "the only inter-node strategy is \"relay\"");
    }
  }
  parse_internode_conn(j, ctx, out);
  if (j.contains("gpus_to_sender_rev_map")) {
    out.sender_rev_map = read_gpu_map(j["gpus_to_sender_rev_map"], ctx, "gpus_to_sender_rev_map");
  }
  if (j.contains("enforce_ordering")) {
    if (!j["enforce_ordering"].is_boolean()) ctx.fail("enforce_ordering", "must be true or false");
    out.enforce_ordering = j["enforce_ordering"].get<bool>();
  }
  if (j.contains("beta_split")) out.beta_split = parse_beta_split(j["beta_split"], ctx);
  if (j.contains("chunk_to_relay_map")) {
    const std::vector<int> m = read_int_list(j["chunk_to_relay_map"], ctx, "chunk_to_relay_map");
    if (m.size() != 2 || m[0] < 1) {
      ctx.fail("chunk_to_relay_map", "must be [r1, r2] with r1 >= 1");
    }
    out.chunk_to_relay_map = std::pair(m[0], m[1]);
  }
  check_relay_fields(out, ctx);
  return out;
}

}  // namespace

bool Sketch::may_relay(int sender, int source) const {
  const InternodeSketch& in = internode;
  if (!in.sender_rev_map.empty()) {
    auto it = in.sender_rev_map.find(sender);
    if (it == in.sender_rev_map.end()) return false;
    return std::find(it->second.begin(), it->second.end(), source) != it->second.end();
  }
  if (in.chunk_to_relay_map) {
    const auto [r1, r2] = *in.chunk_to_relay_map;
    return (source / r1) * r1 + r2 == sender;
  }
  return true;
}

Sketch parse_sketch(const Json& json, const std::string& file) {
  const Ctx ctx{file, ""};
  if (!json.is_object()) throw UserError(file, "", "a sketch must be a JSON object");
  reject_unknown(json, ctx,
                 {"name", "description", "nnodes", "intranode_sketch", "internode_sketch",
                  "symmetry_offsets", "hyperparameters"});
  Sketch s;
  s.file = file;
  if (json.contains("name")) {
    if (!json["name"].is_string()) ctx.fail("name", "must be a string");
    s.name = json["name"].get<std::string>();
  }
  if (json.contains("description") && !json["description"].is_string()) {
    ctx.fail("description", "must be a string");
  }
  if (json.contains("nnodes")) {
    s.nnodes = read_int(json["nnodes"], ctx, "nnodes");
    if (s.nnodes < 1) ctx.fail("nnodes", "must be >= 1");
  }
  if (json.contains("intranode_sketch")) {
    s.intranode = parse_intranode(json["intranode_sketch"], ctx.child("intranode_sketch"));
  }
  if (json.contains("internode_sketch")) {
    if (s.nnodes == 1) {
      ctx.fail("internode_sketch", "a sketch with nnodes 1 has no inter-node links");
    }
    s.internode = parse_internode(json["internode_sketch"], ctx.child("internode_sketch"));
  }
  if (json.contains("symmetry_offsets")) {
    const Json& so = json["symmetry_offsets"];
    if (!so.is_array()) ctx.fail("symmetry_offsets", "must be a list of [offset, group size]");
    for (size_t i = 0; i < so.size(); ++i) {
      const std::string key = "symmetry_offsets[" + std::to_string(i) + "]";
      if (!so[i].is_array() || so[i].size() != 2) ctx.fail(key, "must be [offset, group size]");
      const int offset = read_int(so[i][0], ctx, key + "[0]");
      const int group = read_int(so[i][1], ctx, key + "[1]");
      if (group < 1) ctx.fail(key, "group size must be >= 1");
      if (offset < 0 || offset >= group) ctx.fail(key, "offset must be in 0..group size - 1");
      s.symmetry_offsets.emplace_back(offset, group);
    }
  }
  if (json.contains("hyperparameters")) {
    const Json& h = json["hyperparameters"];
    const Ctx hctx = ctx.child("hyperparameters");
    require_object(h, ctx, "hyperparameters");
    reject_unknown(h, hctx, {"input_chunkup", "input_size"});
    if (h.contains("input_chunkup")) {
      s.input_chunkup = read_int(h["input_chunkup"], hctx, "input_chunkup");
      if (s.input_chunkup < 1) hctx.fail("input_chunkup", "must be >= 1");
    }
    if (h.contains("input_size")) {
      const Json& sz = h["input_size"];
      if (sz.is_number_unsigned() && sz.get<uint64_t>() > uint64_t{INT64_MAX}) {
        hctx.fail("input_size", "byte count " + sz.dump() + " is out of range");
      } else if (sz.is_number_integer()) {
        s.input_size = sz.get<int64_t>();
      } else if (sz.is_string()) {
        try {
          s.input_size = parse_bytes(sz.get<std::string>(), hctx.at("input_size"));
        } catch (const UserError& e) {
          hctx.fail("input_size", e.reason());
        }
      } else {
        hctx.fail("input_size", "must be a size such as \"1M\" or a byte count");
      }
      if (*s.input_size < 1) hctx.fail("input_size", "must be positive");
    }
  }
  return s;
}

Sketch parse_sketch_text(const std::string& text, const std::string& file) {
  return parse_sketch(formats::parse_json(text, file, /*allow_comments=*/true), file);
}

Sketch read_sketch_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(path, "", "cannot open the sketch file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_sketch_text(buffer.str(), path);
}

Json sketch_to_json(const Sketch& s) {
  Json j = Json::object();
  if (!s.name.empty()) j["name"] = s.name;
  j["nnodes"] = s.nnodes;
  Json intra = Json::object();
  intra["strategy"] = to_string(s.intranode.strategy);
  if (s.intranode.strategy == IntranodeStrategy::kSwitch) {
    intra["switches"] = s.intranode.switches;
    Json policies = Json::array();
    for (SwitchPolicy p : s.intranode.policies) policies.push_back(to_string(p));
    intra["switch_hyperedge_strategy"] = policies;
  }
  j["intranode_sketch"] = intra;
  if (s.internode.present) {
    const InternodeSketch& in = s.internode;
    Json inter = Json::object();
    inter["strategy"] = "relay";
    auto gpu_map = [](const std::map<int, std::vector<int>>& m) {
      Json o = Json::object();
      for (const auto& [k, v] : m) o[std::to_string(k)] = v;
      return o;
    };
    if (in.conn == InternodeConn::kMap) {
      inter["internode_conn"] = gpu_map(in.conn_map);
    } else {
      inter["internode_conn"] = to_string(in.conn);
    }
    if (!in.sender_rev_map.empty()) inter["gpus_to_sender_rev_map"] = gpu_map(in.sender_rev_map);
    if (in.enforce_ordering) inter["enforce_ordering"] = true;
    if (!in.beta_split.empty()) {
      Json b = Json::object();
      for (const auto& [k, v] : in.beta_split) b[std::to_string(k)] = v;
      inter["beta_split"] = b;
    }
    if (in.chunk_to_relay_map) {
      inter["chunk_to_relay_map"] = {in.chunk_to_relay_map->first, in.chunk_to_relay_map->second};
    }
    j["internode_sketch"] = inter;
  }
  Json sym = Json::array();
  for (auto [o, g] : s.symmetry_offsets) sym.push_back({o, g});
  j["symmetry_offsets"] = sym;
  Json hyper = Json::object();
  hyper["input_chunkup"] = s.input_chunkup;
  if (s.input_size) hyper["input_size"] = *s.input_size;
  j["hyperparameters"] = hyper;
  return j;
}

void check_sketch_fits(const Sketch& s, const Topology& t) {
  const int nodes = t.nodes.empty() ? 1 : static_cast<int>(t.nodes.size());
  if (s.nnodes != nodes) {
    throw UserError(s.file, "nnodes",
                    "sketch is for " + std::to_string(s.nnodes) + " node(s) but topology " +
                        t.name + " has " + std::to_string(nodes));
  }
  const int per_node = t.num_ranks / nodes;
  for (const auto& node : t.nodes) {
    if (static_cast<int>(node.size()) != per_node) {
      throw UserError(s.file, "nnodes", "topology " + t.name + " has nodes of different sizes");
    }
  }
  auto check_local = [&](int gpu, const std::string& field) {
    if (gpu < 0 || gpu >= per_node) {
      throw UserError(s.file, field,
                      "GPU " + std::to_string(gpu) + " is outside 0.." +
                          std::to_string(per_node - 1) + " (GPUs per node of " + t.name + ")");
    }
  };
  for (size_t i = 0; i < s.intranode.switches.size(); ++i) {
    for (int g : s.intranode.switches[i]) {
      check_local(g, "intranode_sketch.switches[" + std::to_string(i) + "]");
    }
  }
  const InternodeSketch& in = s.internode;
  for (const auto& [k, v] : in.conn_map) {
    check_local(k, "internode_sketch.internode_conn");
    for (int g : v) check_local(g, "internode_sketch.internode_conn." + std::to_string(k));
  }
  for (const auto& [k, v] : in.sender_rev_map) {
    check_local(k, "internode_sketch.gpus_to_sender_rev_map");
    for (int g : v) check_local(g, "internode_sketch.gpus_to_sender_rev_map." + std::to_string(k));
  }
  for (const auto& [k, v] : in.beta_split) check_local(k, "internode_sketch.beta_split");
  for (size_t i = 0; i < s.symmetry_offsets.size(); ++i) {
    const int g = s.symmetry_offsets[i].second;
    if (t.num_ranks % g != 0) {
      throw UserError(s.file, "symmetry_offsets[" + std::to_string(i) + "]",
                      "group size " + std::to_string(g) + " does not divide the " +
                          std::to_string(t.num_ranks) + " ranks of " + t.name);
    }
  }
}

}  // namespace ccsynth::synth
