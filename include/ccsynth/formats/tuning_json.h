#pragma once
// The tuner's table, "format": "ccsynth-tuning", "version": 1 (docs/formats.md): written by
// `ccsynth tune -o DIR` as DIR/tuning.json, read back by plan::load_tuning_dir (a Communicator
// loading the directory) and `ccsynth report --from DIR/tuning.json`.

#include <cstdint>
#include <string>
#include <vector>

#include "ccsynth/formats/json_io.h"

namespace ccsynth::formats {

/// The version the tuner writes and the reader accepts (and below).
inline constexpr int kTuningTableVersion = 1;

/// One entry of a tuning table as read back: the method's label, the program's file (a name
/// inside the table's directory) and the byte range it serves (max_bytes 0 = unlimited).
struct TuningTableEntry {
  std::string method;
  std::string file;
  int64_t min_bytes = 0;
  int64_t max_bytes = 0;
};

/// The entries of a "ccsynth-tuning" document, validated: a known header, an array of objects
/// each with a file name without '/', non-negative integer byte bounds with max_bytes 0 or >=
/// min_bytes, an optional string method ("tuned" when absent). UserError naming `file` and the
/// field otherwise. The rest of the document (per-size times) is not read.
std::vector<TuningTableEntry> read_tuning_table(const Json& doc, const std::string& file);

}  // namespace ccsynth::formats
