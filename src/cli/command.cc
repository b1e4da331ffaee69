#include "cli/command.h"

#include <fstream>
#include <sstream>

#include "ccsynth/core/error.h"

namespace ccsynth::cli {

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw UserError(path, "", "cannot open for writing");
  out << text;
  if (!out) throw UserError(path, "", "write failed");
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path, "", "cannot open for reading (no such file?)");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ccsynth::cli
