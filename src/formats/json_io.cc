#include "ccsynth/formats/json_io.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "ccsynth/core/error.h"

namespace ccsynth::formats {

Json parse_json(const std::string& text, const std::string& file) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    // nlohmann reports a byte offset; turn it into line and column for people.
    size_t line = 1, column = 1;
    for (size_t i = 0; i < std::min(e.byte == 0 ? 0 : e.byte - 1, text.size()); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw UserError(file, "line " + std::to_string(line) + " column " + std::to_string(column),
                    "malformed JSON");
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
  if (!v.is_number_integer()) fail(key, "expected an integer, got " + v.dump());
  const auto value = v.get<int64_t>();
  if (value < INT32_MIN || value > INT32_MAX) fail(key, "integer out of range");
  return static_cast<int>(value);
}

double JsonReader::get_double(const std::string& key) const {
  const Json& v = at(key);
  if (!v.is_number()) fail(key, "expected a number, got " + v.dump());
  return v.get<double>();
}

std::string JsonReader::get_string(const std::string& key) const {
  const Json& v = at(key);
  if (!v.is_string()) fail(key, "expected a string, got " + v.dump());
  return v.get<std::string>();
}

bool JsonReader::get_bool(const std::string& key) const {
  const Json& v = at(key);
  if (!v.is_boolean()) fail(key, "expected true or false, got " + v.dump());
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

std::string dump_json(const Json& json) { return json.dump(2) + "\n"; }

}  // namespace ccsynth::formats
