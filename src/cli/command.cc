#include "cli/command.h"

#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "ccsynth/core/collective.h"
#include "ccsynth/core/error.h"
#include "ccsynth/formats/collective_json.h"

namespace ccsynth::cli {

void write_text_file(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text;
    flush_stdout();
    return;
  }
  write_text_file(path, [&text](std::ostream& out) { out << text; });
}

int64_t write_text_file(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (path == "-") {  // standard output cannot tell how much was written: count it as text
    std::ostringstream text;
    write(text);
    write_text_file(path, text.str());
    return static_cast<int64_t>(text.tellp());
  }
  std::ofstream out(path, std::ios::binary);
  if (!out) throw UserError(path, "", "cannot open for writing");
  write(out);
  const int64_t bytes = static_cast<int64_t>(out.tellp());
  out.close();  // flushes: a full disk shows up here, not in operator<<
  if (out.fail()) throw UserError(path, "", "write failed (disk full?)");
  return bytes;
}

int64_t write_xml_file(const std::string& path, const Program& program,
                       formats::XmlDialect dialect) {
  return write_text_file(
      path, [&](std::ostream& out) { formats::write_msccl_xml(out, program, dialect); });
}

void flush_stdout() {
  std::cout.flush();
  if (!std::cout) throw UserError("(standard output)", "", "write failed (disk full?)");
}

namespace {
// Whether two paths name one file (existing files by identity, others by canonical path).
bool same_file(const std::string& a, const std::string& b) {
  if (a == "-" || b == "-") return a == b;
  std::error_code ec;
  if (std::filesystem::equivalent(a, b, ec) && !ec) return true;
  const auto ca = std::filesystem::weakly_canonical(a, ec);
  if (ec) return false;
  const auto cb = std::filesystem::weakly_canonical(b, ec);
  return !ec && ca == cb;
}
}  // namespace

void refuse_overwrite(const std::string& output_flag, const std::string& output,
                      const std::vector<std::pair<std::string, std::string>>& others) {
  if (output.empty()) return;
  for (const auto& [flag, path] : others) {
    if (path.empty() || !same_file(output, path)) continue;
    throw UserError("", output_flag,
                    "'" + output + "' is also " + flag + ": refusing to overwrite it");
  }
}

ReportOnStderr::ReportOnStderr(bool active) {
  if (active) saved_ = std::cout.rdbuf(std::cerr.rdbuf());
}

ReportOnStderr::~ReportOnStderr() {
  if (saved_) std::cout.rdbuf(saved_);
}

UserError in_user_terms(const UserError& error, const std::string& program_name,
                        const std::string& file,
                        const std::vector<std::pair<std::string, std::string>>& flags) {
  for (const auto& [field, flag] : flags) {
    if (error.field() == field) return UserError(file, flag, error.reason());
  }
  const bool about_program = error.file() == program_name || error.file().empty();
  return UserError(about_program ? file : error.file(), error.field(), error.reason());
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

CollectiveKind builtin_collective_kind(const std::string& name_or_path, int num_ranks, int& root,
                                       const std::string& verb) {
  if (is_collective_kind(name_or_path)) return parse_collective_kind(name_or_path, "--collective");
  const Collective c = formats::resolve_collective(name_or_path, num_ranks);
  require_builtin_kind(c, name_or_path, verb);
  root = c.root;
  return c.kind;
}

void require_builtin_kind(const Collective& collective, const std::string& file,
                          const std::string& verb) {
  if (collective.kind != CollectiveKind::kCustom) return;
  throw UserError(file, "kind",
                  verb +
                      " searches built-in collectives (allgather, alltoall, ...) only; this "
                      "file's kind is custom");
}

const CLI::Validator kPositive = number_check([](double v) { return v > 0; }, "> 0");
const CLI::Validator kNonNegative = number_check([](double v) { return v >= 0; }, ">= 0");

}  // namespace ccsynth::cli
