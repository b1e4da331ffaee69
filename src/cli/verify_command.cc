// `ccsynth verify FILE.xml`: reads an MSCCL-IR XML file (either dialect), checks that the
// target runtime would load it, and verifies the program symbolically (docs/verifier.md).
// Exit 0 correct, 1 defects found, 2 unreadable input.

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "ccsynth/core/error.h"
#include "ccsynth/formats/collective_json.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/plan/report.h"
#include "ccsynth/verify/verify_program.h"
#include "cli/command.h"

namespace ccsynth::cli {

namespace {

// Programs above this many steps get a progress line on stderr (they take about a second).
constexpr int64_t kProgressSteps = 1'000'000;

// Runtime-loadability issues listed before the rest are summarized in one entry.
constexpr size_t kMaxDialectIssues = 100;

struct VerifyOptions {
  std::string file;
  bool json = false;
  bool csv = false;
  std::string collective;
  std::optional<int> root;  // unset: the program's (0)
  std::string dialect = "executor";
  int fifo_slots = 8;
};

bool is_file(const std::string& name) {
  std::error_code ec;
  return std::filesystem::is_regular_file(name, ec) || name.ends_with(".json");
}

// The collective to check against: --collective (built-in name, alltonext or a JSON file), or
// the one the file's `coll` and buffer sizes imply.
Collective choose_collective(const Program& program, const std::string& name) {
  if (name.empty()) return verify::collective_of(program);
  if (is_file(name)) return formats::resolve_collective(name, program.num_ranks);
  CollectiveKind kind = CollectiveKind::kCustom;
  try {
    kind = parse_collective_kind(name, "--collective");
  } catch (const UserError&) {
    int chunks = 1;
    for (const GpuProgram& g : program.gpus) chunks = std::max(chunks, g.input_chunks);
    return formats::resolve_collective(name, program.num_ranks, chunks, program.root);
  }
  if (kind == CollectiveKind::kCustom) {
    throw UserError("", "--collective", "'custom' needs a collective JSON file");
  }
  Program as = program;
  as.collective = kind;
  return verify::collective_of(as);
}

// Runtime-loadability issues of the file for the target dialect, as structure violations.
void add_dialect_issues(const formats::MscclXmlDocument& doc, formats::XmlDialect target,
                        verify::VerifyReport& report) {
  std::vector<formats::XmlIssue> issues;
  for (const formats::XmlIssue& issue : doc.issues) {
    const bool applies =
        target == formats::XmlDialect::kClassic ? issue.affects_classic : issue.affects_executor;
    if (applies) issues.push_back(issue);
  }
  for (const formats::XmlIssue& issue : formats::check_dialect(doc.program, target)) {
    issues.push_back(issue);
  }
  // Listed at most kMaxDialectIssues times, like the verifier's own kinds.
  const size_t listed = std::min(issues.size(), kMaxDialectIssues);
  for (size_t i = 0; i < listed; ++i) {
    const formats::XmlIssue& issue = issues[i];
    report.violations.push_back({verify::ViolationKind::kStructure, issue.rank, issue.threadblock,
                                 issue.step,
                                 fmt::format("[{} runtime] {}: {}", formats::to_string(target),
                                             issue.element, issue.message)});
  }
  if (issues.size() > listed) {
    report.violations.push_back({verify::ViolationKind::kStructure, -1, -1, -1,
                                 fmt::format("{} more {} runtime issues not listed",
                                             issues.size() - listed, formats::to_string(target))});
  }
}

void print_json(const VerifyOptions& o, const verify::VerifyReport& report) {
  nlohmann::ordered_json doc = {{"format", "ccsynth-verification"},
                                {"version", 1},
                                {"file", o.file},
                                {"ok", report.ok()},
                                {"violations", plan::violations_json(report)}};
  std::cout << doc.dump(2) << "\n";
}

std::string place(int value) { return value < 0 ? "-" : std::to_string(value); }

void print_table(const VerifyOptions& o, const Program& p, const Collective& c,
                 formats::XmlDialect target, const verify::VerifyReport& report) {
  int tbs = 0;
  for (const GpuProgram& g : p.gpus) tbs += static_cast<int>(g.threadblocks.size());
  std::cout << fmt::format("{}: program '{}', coll {} on {} ranks, {} threadblocks, {} steps\n",
                           o.file, p.name, to_string(p.collective), p.num_ranks, tbs,
                           p.total_steps());
  std::cout << fmt::format("checked as {} ({}), {} runtime, {} FIFO slots\n", c.name,
                           p.inplace ? "in-place" : "out-of-place", formats::to_string(target),
                           o.fifo_slots);
  if (report.ok()) {
    std::cout << "OK: no violations\n";
    return;
  }
  std::cout << fmt::format("FAILED: {} violation(s)\n", report.violations.size());
  std::cout << fmt::format("{:<18} {:>5} {:>4} {:>5}  {}\n", "kind", "rank", "tb", "step",
                           "message");
  for (const verify::Violation& v : report.violations) {
    std::cout << fmt::format("{:<18} {:>5} {:>4} {:>5}  {}\n", verify::to_string(v.kind),
                             place(v.rank), place(v.threadblock), place(v.step), v.message);
  }
}

int run_verify(const VerifyOptions& o) {
  if (o.fifo_slots < 1) throw UserError("", "--fifo-slots", "must be >= 1");
  const formats::XmlDialect target = formats::parse_xml_dialect(o.dialect);
  formats::MscclXmlDocument doc = formats::parse_msccl_xml_file(o.file);
  if (o.root) {
    if (*o.root < 0 || *o.root >= doc.program.num_ranks) {
      throw UserError("", "--root",
                      fmt::format("rank {} is not in 0..{}", *o.root, doc.program.num_ranks - 1));
    }
    doc.program.root = *o.root;
  }
  Collective collective;
  try {
    collective = choose_collective(doc.program, o.collective);
  } catch (const UserError& e) {
    if (!e.file().empty()) throw;
    throw UserError(o.file, e.field(), e.reason());  // name the file the collective is for
  }
  if (doc.program.total_steps() > kProgressSteps) {
    std::cerr << "verifying " << doc.program.total_steps() << " steps...\n";
  }
  verify::VerifyReport report;
  add_dialect_issues(doc, target, report);
  const verify::VerifyReport run = verify::verify_program(doc.program, {&collective, o.fifo_slots});
  report.violations.insert(report.violations.end(), run.violations.begin(), run.violations.end());
  if (o.json) {
    print_json(o, report);
  } else if (o.csv) {
    plan::Table table{{"kind", "rank", "threadblock", "step", "message"}, {}};
    for (const verify::Violation& v : report.violations) {
      table.add(verify::to_string(v.kind), v.rank, v.threadblock, v.step, v.message);
    }
    print_csv(table);
  } else {
    print_table(o, doc.program, collective, target, report);
  }
  return report.ok() ? kExitOk : kExitCheckFailed;
}

}  // namespace

void add_verify_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<VerifyOptions>();
  CLI::App* cmd = app.add_subcommand(
      "verify",
      "Verify an MSCCL-IR XML file: runtime loadability, structure, bounds, deadlock, "
      "uninitialized reads, races and the collective's postcondition");
  cmd->add_option("file", options->file, "MSCCL-IR XML file (classic or executor dialect)")
      ->required();
  cmd->add_flag("--json", options->json,
                "Print one JSON document (ccsynth-verification, docs/formats.md)");
  add_csv_flag(cmd, options->csv, "violation (none: the header only)");
  cmd->add_option("--collective,-c", options->collective,
                  "Collective to check against: a built-in name (allgather, ..., alltonext) or "
                  "a collective JSON file (default: implied by the file's coll and buffer sizes; "
                  "required for coll=\"custom\")");
  cmd->add_option("--root", options->root, "Root rank of rooted collectives (default 0)");
  cmd->add_option("--xml-dialect", options->dialect,
                  "Runtime the file must load on: classic or executor")
      ->default_str("executor");
  cmd->add_option("--fifo-slots", options->fifo_slots,
                  "FIFO slots per connection (sends that complete before a receive)")
      ->default_str("8");
  cmd->footer(
      "Exit codes: 0 correct, 1 violations found (listed), 2 unreadable input.\n"
      "Violation kinds: postcondition, deadlock, uninitialized-read, race, bounds, structure.\n"
      "See docs/verifier.md.");
  cmd->callback([options, &result] { result.exit_code = run_verify(*options); });
}

}  // namespace ccsynth::cli
