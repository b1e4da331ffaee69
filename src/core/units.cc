#include "ccsynth/core/units.h"

#include <cctype>
#include <limits>

#include "ccsynth/core/error.h"

namespace ccsynth {

namespace {
int64_t suffix_multiplier(std::string suffix, const std::string& text, const std::string& field) {
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix.empty() || suffix == "B") return 1;
  if (suffix == "K" || suffix == "KB" || suffix == "KIB") return int64_t{1} << 10;
  if (suffix == "M" || suffix == "MB" || suffix == "MIB") return int64_t{1} << 20;
  if (suffix == "G" || suffix == "GB" || suffix == "GIB") return int64_t{1} << 30;
  if (suffix == "T" || suffix == "TB" || suffix == "TIB") return int64_t{1} << 40;
  throw UserError("", field, "'" + text + "' is not a size (use e.g. 512, 1K, 64M, 1G)");
}
}  // namespace

int64_t parse_bytes(const std::string& text, const std::string& field) {
  size_t pos = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
  if (pos == 0) {
    throw UserError("", field, "'" + text + "' is not a size (use e.g. 512, 1K, 64M, 1G)");
  }
  const std::string digits = text.substr(0, pos);
  if (digits.size() > 15) throw UserError("", field, "'" + text + "' is too large");
  const int64_t value = std::stoll(digits);
  const int64_t mult = suffix_multiplier(text.substr(pos), text, field);
  if (value > std::numeric_limits<int64_t>::max() / mult) {
    throw UserError("", field, "'" + text + "' is too large");
  }
  return value * mult;
}

std::vector<int64_t> parse_byte_list(const std::string& text, const std::string& field) {
  std::vector<std::string> parts;
  const char separator = text.find(':') != std::string::npos ? ':' : ',';
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  std::vector<int64_t> sizes;
  if (separator == ',') {
    for (const auto& part : parts) sizes.push_back(parse_bytes(part, field));
    return sizes;
  }
  if (parts.size() < 2 || parts.size() > 3) {
    throw UserError("", field, "'" + text + "' is not a range (use e.g. 1K:1G or 1K:1G:2)");
  }
  const int64_t first = parse_bytes(parts[0], field);
  const int64_t last = parse_bytes(parts[1], field);
  const int64_t factor = parts.size() == 3 ? parse_bytes(parts[2], field) : 4;
  if (first <= 0 || last < first || factor < 2) {
    throw UserError("", field,
                    "range '" + text + "' must go up from a positive size by a factor >= 2");
  }
  for (int64_t size = first; size <= last; size *= factor) {
    sizes.push_back(size);
    if (size > last / factor) break;
  }
  return sizes;
}

std::string format_bytes(int64_t bytes) {
  static const char* kSuffixes[] = {"", "K", "M", "G", "T"};
  int i = 0;
  while (i < 4 && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++i;
  }
  return std::to_string(bytes) + kSuffixes[i];
}

}  // namespace ccsynth
