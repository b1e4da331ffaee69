#include "cli/command.h"

#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>

#include "ccsynth/core/collective.h"
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

namespace {
// A validator accepting numbers `accept`s; `what` completes "must be ...".
CLI::Validator number_check(bool (*accept)(double), const std::string& what) {
  return CLI::Validator(
      [accept, what](std::string& text) -> std::string {
        try {
          size_t used = 0;
          const double value = std::stod(text, &used);
          if (used == text.size() && accept(value)) return "";
        } catch (const std::exception&) {
        }
        return "must be " + what + ", got '" + text + "'";
      },
      what);
}
}  // namespace

void add_csv_flag(CLI::App* command, bool& csv, const std::string& rows) {
  CLI::Option* flag = command->add_flag("--csv", csv, "Print CSV, one line per " + rows);
  for (CLI::Option* other : command->get_options()) {
    if (other->check_lname("json")) flag->excludes(other);
  }
}

void print_csv(const plan::Table& table) { std::cout << plan::to_csv(table); }

Protocol parse_protocol_flag(const std::string& text) {
  const std::optional<Protocol> protocol = parse_protocol(text);
  if (!protocol) throw UserError("", "--proto", "expected Simple, LL or LL128, got '" + text + "'");
  return *protocol;
}

bool is_collective_kind(const std::string& name) {
  try {
    return parse_collective_kind(name) != CollectiveKind::kCustom;
  } catch (const UserError&) {
    return false;
  }
}

const CLI::Validator kPositive = number_check([](double v) { return v > 0; }, "> 0");
const CLI::Validator kNonNegative = number_check([](double v) { return v >= 0; }, ">= 0");

}  // namespace ccsynth::cli
