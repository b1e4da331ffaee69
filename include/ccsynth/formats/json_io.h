#pragma once
// Helpers shared by every reader of ccsynth's JSON formats (docs/formats.md): parse a
// file with errors that name it, check the "format"/"version" header, reject unknown keys, and
// read typed fields whose errors name the JSON path.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ccsynth::formats {

using Json = nlohmann::json;

/// The deepest nesting of arrays and objects a reader accepts: no ccsynth format nests more than
/// a few levels, and deeper documents would only exhaust the stack of code that walks them.
inline constexpr int kMaxJsonDepth = 64;

/// Parses `text`; a syntax error becomes UserError(file, "line L column C", reason). Also
/// UserErrors naming the file: nesting deeper than kMaxJsonDepth, a key repeated in one object
/// (field = its JSON path), and a number outside the range of a double (1e400). With
/// `allow_comments`, // and /* */ comments are skipped (sketch files use them).
Json parse_json(const std::string& text, const std::string& file, bool allow_comments = false);
/// Reads and parses a file; a missing file is a UserError naming it.
Json read_json_file(const std::string& path);

/// Context for reading one JSON object: the file name for errors and the object's path
/// ("" for the document root, e.g. "links[3]" below it).
class JsonReader {
 public:
  JsonReader(const Json& object, std::string file, std::string path = "");

  /// Throws unless the object is a JSON object.
  void require_object() const;
  /// Checks "format" == format and "version" <= max_version (docs/formats.md sec. 0).
  void require_header(const std::string& format, int max_version) const;
  /// Rejects keys outside `allowed` ("extra" is always allowed, as the format says).
  void reject_unknown_keys(const std::vector<std::string>& allowed) const;

  bool has(const std::string& key) const;
  /// Required typed fields: a missing key or a wrong type is a UserError naming the path.
  int get_int(const std::string& key) const;
  double get_double(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  const Json& get_array(const std::string& key) const;
  const Json& get_object(const std::string& key) const;
  /// Optional typed fields with defaults.
  int get_int(const std::string& key, int fallback) const;
  double get_double(const std::string& key, double fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;

  /// A reader for a nested object or array element: child("links", 3) reads links[3].
  JsonReader child(const std::string& key) const;
  JsonReader child(const std::string& key, size_t index) const;

  /// The path of `key` below this object, for error messages ("links[3].lanes").
  std::string field(const std::string& key) const;
  const std::string& file() const { return file_; }
  const Json& json() const { return object_; }
  /// Throws UserError(file, field(key), reason).
  [[noreturn]] void fail(const std::string& key, const std::string& reason) const;

 private:
  const Json& at(const std::string& key) const;

  const Json& object_;
  std::string file_;
  std::string path_;
};

/// True when `value` is a JSON integer that fits an int (2^64 - 1 does not; it is never -1).
bool json_fits_int(const Json& value);

/// A JSON value for an error message, never longer than about `max_chars` characters: long
/// values are cut and end in "...", large arrays and objects are described by their size.
std::string json_excerpt(const Json& value, size_t max_chars = 60);

/// Pretty-prints a document with two-space indentation and a trailing newline.
std::string dump_json(const Json& json);

}  // namespace ccsynth::formats
