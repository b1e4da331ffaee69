#include "ccsynth/formats/algorithm_json.h"

#include "ccsynth/core/error.h"
#include "ccsynth/formats/collective_json.h"

namespace ccsynth::formats {

namespace {

constexpr const char* kFormat = "ccsynth-algorithm";
constexpr int kVersion = 1;

// A built-in collective exactly as make_collective builds it can be named by its parameters.
bool is_plain_builtin(const Collective& c) {
  if (c.kind == CollectiveKind::kCustom) return false;
  try {
    return make_collective(c.kind, c.num_ranks, c.chunks_per_rank, c.root) == c;
  } catch (const UserError&) {
    return false;
  }
}

Json collective_field(const Collective& c) {
  if (!is_plain_builtin(c)) return collective_to_json(c);
  return Json{{"kind", to_string(c.kind)},
              {"ranks", c.num_ranks},
              {"chunks_per_rank", c.chunks_per_rank},
              {"root", c.root}};
}

Json op_to_json(const ChunkOp& op) {
  Json j{{"chunk", op.chunk},
         {"src", op.src},
         {"dst", op.dst},
         {"kind", to_string(op.kind)},
         {"step", op.step}};
  if (op.start_us >= 0) j["start_us"] = op.start_us;
  if (op.count != 1) j["count"] = op.count;
  if (op.channel >= 0) j["channel"] = op.channel;
  if (op.send_tb >= 0) j["send_tb"] = op.send_tb;
  if (op.recv_tb >= 0) j["recv_tb"] = op.recv_tb;
  return j;
}

// Re-throws errors of a nested reader with the field prefixed by `prefix`.
template <typename F>
auto nested(const std::string& file, const std::string& prefix, F&& read) {
  try {
    return read();
  } catch (const UserError& e) {
    throw UserError(file, e.field().empty() ? prefix : prefix + "." + e.field(), e.reason());
  }
}

Collective collective_from_field(const JsonReader& r) {
  const JsonReader c = r.child("collective");
  c.require_object();
  if (c.has("format")) {
    return nested(r.file(), r.field("collective"),
                  [&] { return collective_from_json(c.json(), ""); });
  }
  c.reject_unknown_keys({"kind", "ranks", "chunks_per_rank", "root"});
  const std::string kind_name = c.get_string("kind");
  const CollectiveKind kind = nested(r.file(), r.field("collective"),
                                     [&] { return parse_collective_kind(kind_name, "kind"); });
  if (kind == CollectiveKind::kCustom) {
    c.fail("kind", "a custom collective is embedded as a full ccsynth-collective document");
  }
  const int ranks = c.get_int("ranks");
  const int chunks = c.get_int("chunks_per_rank", 1);
  const int root = c.get_int("root", 0);
  return nested(r.file(), r.field("collective"),
                [&] { return make_collective(kind, ranks, chunks, root); });
}

OpKind parse_op_kind(const JsonReader& r) {
  const std::string kind = r.get_string("kind");
  if (kind == "copy") return OpKind::kCopy;
  if (kind == "reduce") return OpKind::kReduce;
  r.fail("kind", "expected \"copy\" or \"reduce\", got \"" + kind + "\"");
}

ChunkOp op_from_json(const JsonReader& r, const Collective& c) {
  r.require_object();
  r.reject_unknown_keys({"chunk", "src", "dst", "kind", "step", "start_us", "count", "channel",
                         "send_tb", "recv_tb"});
  ChunkOp op;
  op.chunk = r.get_int("chunk");
  op.src = r.get_int("src");
  op.dst = r.get_int("dst");
  op.kind = parse_op_kind(r);
  op.step = r.get_int("step");
  op.start_us = r.get_double("start_us", -1);
  op.count = r.get_int("count", 1);
  op.channel = r.get_int("channel", -1);
  op.send_tb = r.get_int("send_tb", -1);
  op.recv_tb = r.get_int("recv_tb", -1);
  const std::string ranks = "0.." + std::to_string(c.num_ranks - 1);
  if (op.src < 0 || op.src >= c.num_ranks) r.fail("src", "rank outside " + ranks);
  if (op.dst < 0 || op.dst >= c.num_ranks) r.fail("dst", "rank outside " + ranks);
  if (op.src == op.dst) r.fail("dst", "equals src (a rank cannot send to itself)");
  if (op.count < 1) r.fail("count", "must be >= 1");
  if (op.chunk < 0 || op.chunk + op.count > c.num_chunks()) {
    r.fail("chunk", "chunks " + std::to_string(op.chunk) + ".." +
                        std::to_string(op.chunk + op.count - 1) + " outside 0.." +
                        std::to_string(c.num_chunks() - 1));
  }
  if (op.step < 0) r.fail("step", "must be >= 0");
  if (r.has("start_us") && op.start_us < 0) r.fail("start_us", "must be >= 0");
  if (op.channel < -1 || op.channel >= 32) r.fail("channel", "must be in 0..31");
  if (op.send_tb < -1 || op.send_tb >= 1024) r.fail("send_tb", "must be in 0..1023");
  if (op.recv_tb < -1 || op.recv_tb >= 1024) r.fail("recv_tb", "must be in 0..1023");
  if (op.kind == OpKind::kReduce && !c.combining) {
    r.fail("kind", "reduce in the non-combining collective " + c.name);
  }
  return op;
}

}  // namespace

Json algorithm_to_json(const Algorithm& a) {
  Json ops = Json::array();
  for (const ChunkOp& op : a.ops) ops.push_back(op_to_json(op));
  Json j{{"format", kFormat},
         {"version", kVersion},
         {"name", a.name},
         {"topology", a.topology},
         {"collective", collective_field(a.collective)}};
  if (!a.rounds_per_step.empty()) j["rounds_per_step"] = a.rounds_per_step;
  if (a.routed) j["routed"] = true;
  j["ops"] = std::move(ops);
  return j;
}

Algorithm algorithm_from_json(const Json& json, const std::string& file) {
  const JsonReader r(json, file);
  r.require_object();
  r.require_header(kFormat, kVersion);
  r.reject_unknown_keys(
      {"format", "version", "name", "topology", "collective", "rounds_per_step", "routed", "ops"});
  Algorithm a;
  a.name = r.get_string("name", "");
  a.topology = r.get_string("topology", "");
  a.collective = collective_from_field(r);
  a.routed = r.get_bool("routed", false);
  if (r.has("rounds_per_step")) {
    const Json& rounds = r.get_array("rounds_per_step");
    for (size_t i = 0; i < rounds.size(); ++i) {
      const std::string field = "rounds_per_step[" + std::to_string(i) + "]";
      if (!json_fits_int(rounds[i]) || rounds[i].get<int>() < 1) {
        r.fail(field, "expected an integer >= 1, got " + json_excerpt(rounds[i]));
      }
      a.rounds_per_step.push_back(rounds[i].get<int>());
    }
  }
  const Json& ops = r.get_array("ops");
  a.ops.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i)
    a.ops.push_back(op_from_json(r.child("ops", i), a.collective));
  return a;
}

Algorithm read_algorithm_file(const std::string& path) {
  return algorithm_from_json(read_json_file(path), path);
}

}  // namespace ccsynth::formats
