#include "ccsynth/formats/tuning_json.h"

namespace ccsynth::formats {

namespace {

int64_t read_bytes(const JsonReader& reader, const std::string& key) {
  const Json& v = reader.json().contains(key) ? reader.json().at(key) : Json();
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    reader.fail(key, "expected a non-negative integer number of bytes");
  return v.get<int64_t>();
}

TuningTableEntry read_entry(const JsonReader& entry) {
  entry.require_object();
  TuningTableEntry e;
  e.method = entry.get_string("method", "tuned");
  e.file = entry.get_string("file");
  if (e.file.empty() || e.file.find('/') != std::string::npos)
    entry.fail("file", "expected a file name inside the tuning directory");
  e.min_bytes = read_bytes(entry, "min_bytes");
  e.max_bytes = read_bytes(entry, "max_bytes");
  if (e.max_bytes > 0 && e.max_bytes < e.min_bytes) entry.fail("max_bytes", "is below min_bytes");
  return e;
}

}  // namespace

std::vector<TuningTableEntry> read_tuning_table(const Json& doc, const std::string& file) {
  const JsonReader reader(doc, file);
  reader.require_object();
  reader.require_header("ccsynth-tuning", kTuningTableVersion);
  const Json& entries = reader.get_array("entries");
  std::vector<TuningTableEntry> out;
  out.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) out.push_back(read_entry(reader.child("entries", i)));
  return out;
}

}  // namespace ccsynth::formats
