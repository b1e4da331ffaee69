#include "ccsynth/formats/collective_json.h"

#include <cctype>
#include <filesystem>

#include "ccsynth/core/error.h"

namespace ccsynth::formats {

namespace {

constexpr const char* kFormat = "ccsynth-collective";
constexpr int kVersion = 1;

Json slots_to_json(const std::vector<Slot>& slots) {
  Json out = Json::array();
  for (const Slot& s : slots) out.push_back(Json::array({s.rank, s.index}));
  return out;
}

// A list of [rank, index] pairs at reader.field(key).
std::vector<Slot> slots_from_json(const JsonReader& r, const std::string& key) {
  const Json& list = r.get_array(key);
  std::vector<Slot> out;
  out.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& pair = list[i];
    const bool ok =
        pair.is_array() && pair.size() == 2 && json_fits_int(pair[0]) && json_fits_int(pair[1]);
    if (!ok) {
      r.fail(key + "[" + std::to_string(i) + "]",
             "expected a [rank, index] pair of integers, got " + json_excerpt(pair));
    }
    out.push_back({pair[0].get<int>(), pair[1].get<int>()});
  }
  return out;
}

}  // namespace

Json collective_to_json(const Collective& c) {
  Json chunks = Json::array();
  for (const ChunkSpec& spec : c.chunks) {
    chunks.push_back(Json{{"pre", slots_to_json(spec.pre)}, {"post", slots_to_json(spec.post)}});
  }
  return Json{{"format", kFormat},
              {"version", kVersion},
              {"name", c.name},
              {"kind", to_string(c.kind)},
              {"ranks", c.num_ranks},
              {"chunks_per_rank", c.chunks_per_rank},
              {"root", c.root},
              {"input_chunks", c.input_chunks},
              {"output_chunks", c.output_chunks},
              {"combining", c.combining},
              {"chunks", std::move(chunks)}};
}

Collective collective_from_json(const Json& json, const std::string& file) {
  const JsonReader r(json, file);
  r.require_header(kFormat, kVersion);
  r.reject_unknown_keys({"format", "version", "name", "kind", "ranks", "chunks_per_rank", "root",
                         "input_chunks", "output_chunks", "combining", "chunks"});
  Collective c;
  c.name = r.get_string("name");
  try {
    c.kind = parse_collective_kind(r.get_string("kind", "custom"), "kind");
  } catch (const UserError& e) {
    throw UserError(file, e.field(), e.reason());
  }
  c.num_ranks = r.get_int("ranks");
  c.chunks_per_rank = r.get_int("chunks_per_rank", 1);
  c.root = r.get_int("root", 0);
  c.input_chunks = r.get_int("input_chunks");
  c.output_chunks = r.get_int("output_chunks");
  c.combining = r.get_bool("combining", false);
  if (c.num_ranks < 1) r.fail("ranks", "must be >= 1, got " + std::to_string(c.num_ranks));
  if (c.chunks_per_rank < 1) r.fail("chunks_per_rank", "must be >= 1");
  if (c.root < 0 || c.root >= c.num_ranks) r.fail("root", "not a rank of the collective");
  const Json& chunks = r.get_array("chunks");
  for (size_t k = 0; k < chunks.size(); ++k) {
    const JsonReader chunk = r.child("chunks", k);
    chunk.require_object();
    chunk.reject_unknown_keys({"pre", "post"});
    c.chunks.push_back({slots_from_json(chunk, "pre"), slots_from_json(chunk, "post")});
  }
  validate(c, file);
  if (c.kind != CollectiveKind::kCustom) {
    Collective expected = make_collective(c.kind, c.num_ranks, c.chunks_per_rank, c.root);
    expected.name = c.name;
    if (!(expected == c)) {
      r.fail("kind", "the chunks and buffer sizes do not match the built-in " + to_string(c.kind) +
                         " (use \"kind\": \"custom\" for a custom relation)");
    }
  }
  return c;
}

Collective read_collective_file(const std::string& path) {
  return collective_from_json(read_json_file(path), path);
}

Collective resolve_collective(const std::string& name_or_path, int num_ranks, int chunks_per_rank,
                              int root) {
  std::error_code ec;
  const bool is_file = std::filesystem::is_regular_file(name_or_path, ec);
  const bool json_suffix =
      name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0;
  if (is_file || json_suffix) {
    Collective c = read_collective_file(name_or_path);
    if (c.num_ranks != num_ranks) {
      throw UserError(name_or_path, "ranks",
                      "the collective has " + std::to_string(c.num_ranks) +
                          " ranks but the topology has " + std::to_string(num_ranks));
    }
    if (chunks_per_rank > 1 && chunks_per_rank != c.chunks_per_rank) {
      throw UserError(name_or_path, "chunks_per_rank",
                      "the file has " + std::to_string(c.chunks_per_rank) +
                          " chunks per rank but " + std::to_string(chunks_per_rank) +
                          " were requested");
    }
    return c;
  }
  std::string key;
  for (char ch : name_or_path) {
    if (ch != '_' && ch != '-')
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  if (key == "alltonext") return make_alltonext(num_ranks, chunks_per_rank);
  if (key == "custom") {
    throw UserError("", "collective", "a custom collective is given as a collective JSON file");
  }
  try {
    return make_collective(parse_collective_kind(name_or_path), num_ranks, chunks_per_rank, root);
  } catch (const UserError& e) {
    if (e.field() != "collective") throw;
    throw UserError("", "collective",
                    "unknown collective '" + name_or_path +
                        "' (expected allgather, reducescatter, allreduce, alltoall, broadcast, "
                        "reduce, gather, scatter, alltonext, or a collective JSON file)");
  }
}

}  // namespace ccsynth::formats
