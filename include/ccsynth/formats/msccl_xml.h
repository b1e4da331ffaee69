#pragma once
// MSCCL-IR XML (docs/formats.md sec. 5): a writer for both runtime dialects ("classic":
// microsoft/msccl, "executor": Azure/msccl-executor-nccl and RCCL) and a reader that accepts
// files of either dialect written by other tools.
//
// Dialect differences handled here: collective names (reduce_scatter/custom vs reducescatter/
// gather/scatter), `outofplace` (executor only), the size range (classic: [minBytes, maxBytes),
// maxBytes optional; executor: [minBytes, maxBytes], 0 = unlimited, both required) and
// `nthreads` (classic only). A Program always stores the executor's range convention.

#include <ostream>
#include <string>
#include <vector>

#include "ccsynth/core/program.h"

namespace ccsynth::formats {

/// Which runtime's XML dialect to write or check against.
enum class XmlDialect { kClassic, kExecutor };

/// "classic" or "executor" (case-insensitive); UserError naming the `--xml-dialect` flag else.
XmlDialect parse_xml_dialect(const std::string& text);
/// "classic" or "executor".
std::string to_string(XmlDialect dialect);

/// Writes `program` in `dialect`: no `<?xml?>` line, two-space indentation, no tabs, every
/// required attribute. Throws UserError when the program cannot be expressed in the dialect
/// (a collective name the dialect lacks, e.g. `custom` for the executor).
std::string write_msccl_xml(const Program& program, XmlDialect dialect = XmlDialect::kExecutor);
/// The same, streamed to `out` (a program of thousands of ranks is gigabytes of XML: no copy of
/// it is held in memory). The UserError checks come before anything is written.
void write_msccl_xml(std::ostream& out, const Program& program,
                     XmlDialect dialect = XmlDialect::kExecutor);

/// A problem that does not stop ccsynth from reading a file but makes a runtime reject or
/// misuse it (a lexical rule, a missing dialect-specific attribute, a limit, a bad `s`).
/// `element` is the path of the offending element, e.g. "gpu[3]/tb[2]/step[5]"; rank,
/// threadblock and step are the document positions (-1 where they do not apply).
struct XmlIssue {
  std::string element;
  int rank = -1;
  int threadblock = -1;
  int step = -1;
  std::string message;
  bool affects_classic = true;   // the classic runtime is affected
  bool affects_executor = true;  // the executor runtime is affected

  bool operator==(const XmlIssue&) const = default;
};

/// A parsed file: the program, the dialect the file looks written for (classic when it lacks an
/// executor-required attribute, uses a classic-only collective name or sets `nthreads`) and the
/// runtime-compatibility issues found while reading.
struct MscclXmlDocument {
  Program program;
  XmlDialect dialect = XmlDialect::kExecutor;
  std::vector<XmlIssue> issues;
};

/// Parses XML text. Malformed XML, a missing required attribute, a non-integer value, an
/// unknown step type/buffer/protocol/collective or inconsistent gpu ids throw
/// UserError(file, "gpu[3]/tb[2]/step[5] attribute 'cnt'", reason); never crashes.
MscclXmlDocument parse_msccl_xml(const std::string& text, const std::string& file);
/// parse_msccl_xml(...).program: the API for callers that only need the Program.
Program read_msccl_xml(const std::string& text, const std::string& file);
/// Reads and parses a file; a missing file is a UserError naming it.
Program read_msccl_xml_file(const std::string& path);
/// Reads a file and returns the whole document (program, dialect, issues).
MscclXmlDocument parse_msccl_xml_file(const std::string& path);

/// Runtime-level checks of a program against one dialect (docs/formats.md "Runtime limits", `<gpu>` and
/// `<algo>` rules): collective name, steps/threadblocks per rank, channels, counts, the
/// classic chunk-count rule, the executor's nop-dependency rule and the size range.
std::vector<XmlIssue> check_dialect(const Program& program, XmlDialect dialect);

}  // namespace ccsynth::formats
