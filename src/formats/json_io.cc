#include "ccsynth/formats/json_io.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "ccsynth/core/error.h"

namespace ccsynth::formats {

namespace {

// "line L column C" of the byte before `byte` (nlohmann reports 1-based byte offsets).
std::string line_and_column(const std::string& text, size_t byte) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < std::min(byte == 0 ? 0 : byte - 1, text.size()); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + " column " + std::to_string(column);
}

// A SAX pass that rejects what nlohmann accepts but ccsynth must not: nesting deeper than
// kMaxJsonDepth and a key given twice in one object (nlohmann keeps the last). It runs before
// the document is built, so a deep nest is refused before anything recursive sees it. (It used
// to be the parser callback of Json::parse, but nlohmann's callback parser searches the
// enclosing array for discarded values after every object: quadratic in the elements, minutes
// for an algorithm of a million ops.) A syntax error stops it (false); the parse that follows
// reports it with its position.
class StructureCheck : public nlohmann::json_sax<Json> {
 public:
  explicit StructureCheck(const std::string& file) : file_(file) {}

  bool null() override { return element(); }
  bool boolean(bool /*value*/) override { return element(); }
  bool number_integer(number_integer_t /*value*/) override { return element(); }
  bool number_unsigned(number_unsigned_t /*value*/) override { return element(); }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override {
    return element();
  }
  bool string(string_t& /*value*/) override { return element(); }
  bool binary(binary_t& /*value*/) override { return element(); }
  bool start_object(std::size_t /*elements*/) override { return open(false); }
  bool key(string_t& key) override {
    add_key(key);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t /*elements*/) override { return open(true); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& /*error*/) override {
    return false;
  }

 private:
  struct Frame {
    bool is_array;
    size_t index;                // of the array element being read
    std::string key;             // of the object member being read
    std::set<std::string> keys;  // seen in this object
  };

  bool open(bool is_array) {
    if (frames_.size() >= kMaxJsonDepth) {
      throw UserError(file_, path(),
                      "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    frames_.push_back({is_array, 0, "", {}});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return element();
  }

  void add_key(const std::string& key) {
    Frame& object = frames_.back();
    object.key = key;
    if (!object.keys.insert(key).second) throw UserError(file_, path(), "duplicate key");
  }

  // One element of the enclosing array (or a member of the enclosing object) is complete.
  bool element() {
    if (!frames_.empty() && frames_.back().is_array) ++frames_.back().index;
    return true;
  }

  // The JSON path of the element being read ("links[3].src"), its first levels only when deep.
  std::string path() const {
    constexpr size_t kShownLevels = 8;
    std::string out;
    for (size_t level = 0; level < frames_.size(); ++level) {
      const Frame& f = frames_[level];
      if (level == kShownLevels) return out + "...";
      if (f.is_array) {
        out += "[" + std::to_string(f.index) + "]";
      } else {
        out += (out.empty() ? "" : ".") + f.key;
      }
    }
    return out;
  }

  const std::string& file_;
  std::vector<Frame> frames_;
};

}  // namespace

Json parse_json(const std::string& text, const std::string& file, bool allow_comments) {
  try {
    StructureCheck check(file);
    Json::sax_parse(text, &check, Json::input_format_t::json, /*strict=*/true, allow_comments);
    return Json::parse(text, nullptr, /*allow_exceptions=*/true, allow_comments);
  } catch (const Json::parse_error& e) {
    throw UserError(file, line_and_column(text, e.byte), "malformed JSON");
  } catch (const Json::out_of_range&) {
    // nlohmann's only range error while parsing: a number too large for a double.
    throw UserError(file, "", "a number is out of the range of a double (such as 1e400)");
  }
}

Json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path, "", "cannot open for reading (no such file?)");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_json(ss.str(), path);
}

JsonReader::JsonReader(const Json& object, std::string file, std::string path)
    : object_(object), file_(std::move(file)), path_(std::move(path)) {}

std::string JsonReader::field(const std::string& key) const {
  if (path_.empty()) return key;
  if (key.empty()) return path_;
  return path_ + "." + key;
}

void JsonReader::fail(const std::string& key, const std::string& reason) const {
  throw UserError(file_, field(key), reason);
}

void JsonReader::require_object() const {
  if (!object_.is_object()) fail("", "expected a JSON object");
}

void JsonReader::require_header(const std::string& format, int max_version) const {
  require_object();
  const std::string got = get_string("format");
  if (got != format) fail("format", "expected \"" + format + "\", got \"" + got + "\"");
  const int version = get_int("version");
  if (version < 1 || version > max_version) {
    fail("version", "version " + std::to_string(version) +
                        " is not supported (this ccsynth "
                        "reads 1.." +
                        std::to_string(max_version) + ")");
  }
}

void JsonReader::reject_unknown_keys(const std::vector<std::string>& allowed) const {
  require_object();
  for (const auto& [key, value] : object_.items()) {
    if (key == "extra") continue;
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(key, "unknown key (expected one of: " + list + ")");
    }
  }
}

bool JsonReader::has(const std::string& key) const {
  return object_.is_object() && object_.contains(key);
}

const Json& JsonReader::at(const std::string& key) const {
  require_object();
  if (!object_.contains(key)) fail(key, "missing required field");
  return object_.at(key);
}

int JsonReader::get_int(const std::string& key) const {
  const Json& v = at(key);
  if (!v.is_number_integer()) fail(key, "expected an integer, got " + json_excerpt(v));
  if (!json_fits_int(v)) fail(key, "integer " + v.dump() + " is outside the range of a 32-bit int");
  return v.get<int>();
}

double JsonReader::get_double(const std::string& key) const {
  const Json& v = at(key);
  if (!v.is_number()) fail(key, "expected a number, got " + json_excerpt(v));
  return v.get<double>();
}

std::string JsonReader::get_string(const std::string& key) const {
  const Json& v = at(key);
  if (!v.is_string()) fail(key, "expected a string, got " + json_excerpt(v));
  return v.get<std::string>();
}

bool JsonReader::get_bool(const std::string& key) const {
  const Json& v = at(key);
  if (!v.is_boolean()) fail(key, "expected true or false, got " + json_excerpt(v));
  return v.get<bool>();
}

const Json& JsonReader::get_array(const std::string& key) const {
  const Json& v = at(key);
  if (!v.is_array()) fail(key, "expected an array");
  return v;
}

const Json& JsonReader::get_object(const std::string& key) const {
  const Json& v = at(key);
  if (!v.is_object()) fail(key, "expected an object");
  return v;
}

int JsonReader::get_int(const std::string& key, int fallback) const {
  return has(key) ? get_int(key) : fallback;
}

double JsonReader::get_double(const std::string& key, double fallback) const {
  return has(key) ? get_double(key) : fallback;
}

std::string JsonReader::get_string(const std::string& key, const std::string& fallback) const {
  return has(key) ? get_string(key) : fallback;
}

bool JsonReader::get_bool(const std::string& key, bool fallback) const {
  return has(key) ? get_bool(key) : fallback;
}

JsonReader JsonReader::child(const std::string& key) const {
  return JsonReader(at(key), file_, field(key));
}

JsonReader JsonReader::child(const std::string& key, size_t index) const {
  const Json& array = get_array(key);
  if (index >= array.size()) fail(key, "index " + std::to_string(index) + " out of range");
  return JsonReader(array[index], file_, field(key) + "[" + std::to_string(index) + "]");
}

bool json_fits_int(const Json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>() <= INT32_MAX;
  if (!value.is_number_integer()) return false;
  const auto v = value.get<int64_t>();
  return v >= INT32_MIN && v <= INT32_MAX;
}

std::string json_excerpt(const Json& value, size_t max_chars) {
  constexpr size_t kMaxListed = 16;
  if (value.is_array() && value.size() > kMaxListed) {
    return "an array of " + std::to_string(value.size()) + " elements";
  }
  if (value.is_object() && value.size() > kMaxListed) {
    return "an object of " + std::to_string(value.size()) + " keys";
  }
  std::string text = value.dump();
  if (text.size() > max_chars) text = text.substr(0, max_chars) + "...";
  return text;
}

std::string dump_json(const Json& json) { return json.dump(2) + "\n"; }

}  // namespace ccsynth::formats
