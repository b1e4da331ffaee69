#include "ccsynth/formats/msccl_xml.h"

#include <fmt/compile.h>
#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <pugixml.hpp>
#include <set>
#include <sstream>

#include "ccsynth/core/error.h"

namespace ccsynth::formats {

namespace {

// Runtime limits (docs/formats.md "Runtime limits" and lexical rules).
constexpr int kMaxAttributes = 16;
constexpr size_t kMaxValueLength = 255;
constexpr size_t kMaxChildren = 1024;
constexpr int kMaxChannels = 32;
constexpr int kMaxCount = 71;
constexpr int kMaxFusedReduceSources = 16;
constexpr int kClassicMaxSteps = 256;
constexpr int kClassicMaxThreadblocks = 216;
constexpr int kExecutorMaxSteps = 64;
constexpr int kExecutorMaxThreadblocks = 1024;

// ---------------------------------------------------------------------------------------------
// Writer

// Attribute text: XML escapes; tabs and line breaks become spaces (runtimes reject tabs).
std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\t':
      case '\n':
      case '\r': out += ' '; break;
      default: out += c;
    }
  }
  return out;
}

// The `coll` attribute for `kind` in `dialect`; empty when the dialect has no name for it.
std::string coll_name(CollectiveKind kind, XmlDialect dialect) {
  const bool classic = dialect == XmlDialect::kClassic;
  if (kind == CollectiveKind::kCustom) return classic ? "custom" : "";
  if (!classic) return to_string(kind);
  // The classic runtime spells reduce-scatter with an underscore and knows no gather/scatter.
  if (kind == CollectiveKind::kReduceScatter) return "reduce_scatter";
  if (kind == CollectiveKind::kGather || kind == CollectiveKind::kScatter) return "custom";
  return to_string(kind);
}

// The body of a program (gpus, threadblocks, steps), formatted into a buffer that is written to
// the stream in large blocks: a 1024-rank program has millions of steps, and an ostream
// insertion per attribute wrote 235 MB at about 210 MB/s, the serial tail of `ccsynth synth`.
class BodyWriter {
 public:
  explicit BodyWriter(std::ostream& os) : os_(os) {}
  BodyWriter(const BodyWriter&) = delete;
  BodyWriter& operator=(const BodyWriter&) = delete;
  ~BodyWriter() { flush(); }

  void gpu(const GpuProgram& g) {
    fmt::format_to(fmt::appender(buffer_),
                   FMT_COMPILE("<gpu id=\"{}\" i_chunks=\"{}\" o_chunks=\"{}\" s_chunks=\"{}\">\n"),
                   g.rank, g.input_chunks, g.output_chunks, g.scratch_chunks);
    for (const Threadblock& tb : g.threadblocks) threadblock(tb);
    append("</gpu>\n");
  }

 private:
  static constexpr size_t kFlushBytes = size_t{1} << 16;

  void threadblock(const Threadblock& tb) {
    fmt::format_to(fmt::appender(buffer_),
                   FMT_COMPILE("<tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"{}\">\n"), tb.id,
                   tb.send_peer, tb.recv_peer, tb.channel);
    for (size_t k = 0; k < tb.steps.size(); ++k) step(static_cast<int>(k), tb.steps[k]);
    append("</tb>\n");
  }
  void step(int index, const Step& s) {
    fmt::format_to(
        fmt::appender(buffer_),
        FMT_COMPILE("<step s=\"{}\" type=\"{}\" srcbuf=\"{}\" srcoff=\"{}\" dstbuf=\"{}\" "
                    "dstoff=\"{}\" cnt=\"{}\" depid=\"{}\" deps=\"{}\" hasdep=\"{}\"/>\n"),
        index, step_type_name(s.type), to_char(s.src_buffer), s.src_offset, to_char(s.dst_buffer),
        s.dst_offset, s.count, s.dep_tb, s.dep_step, s.has_dep ? 1 : 0);
    if (buffer_.size() >= kFlushBytes) flush();
  }
  void append(std::string_view text) { buffer_.append(text.data(), text.data() + text.size()); }
  void flush() {
    os_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }

  std::ostream& os_;
  fmt::memory_buffer buffer_;
};

// ---------------------------------------------------------------------------------------------
// Reader

// Line number (1-based) of a byte offset, for error messages.
int line_of(const std::string& text, ptrdiff_t offset) {
  if (offset < 0) return 0;
  const auto end = text.begin() + std::min<ptrdiff_t>(offset, static_cast<ptrdiff_t>(text.size()));
  return 1 + static_cast<int>(std::count(text.begin(), end, '\n'));
}

// Reading context of one element: its path for messages, e.g. "gpu[3]/tb[2]/step[5]".
class ElementReader {
 public:
  ElementReader(pugi::xml_node node, std::string path, const std::string& text,
                const std::string& file)
      : node_(node), path_(std::move(path)), text_(text), file_(file) {}

  const std::string& path() const { return path_; }
  bool has(const char* name) const { return static_cast<bool>(node_.attribute(name)); }

  [[noreturn]] void fail(const std::string& attribute, const std::string& reason) const {
    std::string field = path_;
    if (!attribute.empty()) field += " attribute '" + attribute + "'";
    field += " (line " + std::to_string(line_of(text_, node_.offset_debug())) + ")";
    throw UserError(file_, field, reason);
  }

  std::string get_string(const char* name) const {
    const pugi::xml_attribute a = node_.attribute(name);
    if (!a) fail(name, "required attribute is missing");
    return a.value();
  }

  int64_t get_int64(const char* name) const {
    const std::string value = get_string(name);
    int64_t out = 0;
    const char* begin = value.data();
    const char* end = begin + value.size();
    const auto [ptr, ec] = std::from_chars(begin, end, out);
    if (value.empty() || ec != std::errc() || ptr != end) {
      fail(name, "'" + value + "' is not an integer");
    }
    return out;
  }

  int get_int(const char* name, int min_value) const {
    const int64_t v = get_int64(name);
    if (v < min_value || v > 1'000'000'000) {
      fail(name,
           std::to_string(v) + " is out of range (must be >= " + std::to_string(min_value) + ")");
    }
    return static_cast<int>(v);
  }

  bool get_flag(const char* name) const {
    const int64_t v = get_int64(name);
    if (v != 0 && v != 1) fail(name, std::to_string(v) + " must be 0 or 1");
    return v == 1;
  }

  Buffer get_buffer(const char* name) const {
    const std::string v = get_string(name);
    const auto b = parse_buffer(v);
    if (!b) fail(name, "unknown buffer '" + v + "' (expected i, o or s)");
    return *b;
  }

 private:
  pugi::xml_node node_;
  std::string path_;
  const std::string& text_;
  const std::string& file_;
};

// Offset of the first attribute value in single quotes (runtime parsers take only double
// quotes), or npos. Scans tags only, skipping double-quoted values, comments, declarations and
// processing instructions.
size_t find_single_quoted_value(const std::string& text) {
  size_t i = 0;
  while ((i = text.find('<', i)) != std::string::npos) {
    if (text.compare(i, 4, "<!--") == 0) {
      i = text.find("-->", i);
      if (i == std::string::npos) return std::string::npos;
      continue;
    }
    const bool markup = i + 1 < text.size() && (text[i + 1] == '!' || text[i + 1] == '?');
    for (++i; i < text.size() && text[i] != '>'; ++i) {
      if (text[i] == '"') {
        i = text.find('"', i + 1);
        if (i == std::string::npos) return std::string::npos;
      } else if (text[i] == '\'' && !markup) {
        return i;
      }
    }
  }
  return std::string::npos;
}

// Collects lexical issues of one element (attribute count/length, children count).
void check_lexical(pugi::xml_node node, const std::string& path, int rank, int tb, int step,
                   std::vector<XmlIssue>& issues) {
  int attributes = 0;
  std::set<std::string> names;
  for (pugi::xml_attribute a : node.attributes()) {
    ++attributes;
    if (!names.insert(a.name()).second) {
      issues.push_back({path, rank, tb, step,
                        std::string("attribute '") + a.name() +
                            "' is given twice (runtime parsers reject duplicates)",
                        true, true});
    }
    if (std::string(a.value()).size() > kMaxValueLength) {
      issues.push_back({path, rank, tb, step,
                        std::string("attribute '") + a.name() + "' is longer than 255 characters",
                        true, true});
    }
  }
  if (attributes > kMaxAttributes) {
    issues.push_back(
        {path, rank, tb, step,
         "has " + std::to_string(attributes) + " attributes (runtimes read at most 16)", true,
         true});
  }
  size_t children = 0;
  for (pugi::xml_node child = node.first_child(); child; child = child.next_sibling()) {
    if (child.type() == pugi::node_element) ++children;
  }
  if (children > kMaxChildren) {
    issues.push_back(
        {path, rank, tb, step,
         "has " + std::to_string(children) + " child elements (runtimes read at most 1024)", true,
         true});
  }
}

// The elements named `name` below `parent`; any other element is an error.
std::vector<pugi::xml_node> children_named(pugi::xml_node parent, const char* name,
                                           const ElementReader& reader) {
  std::vector<pugi::xml_node> out;
  for (pugi::xml_node child = parent.first_child(); child; child = child.next_sibling()) {
    if (child.type() != pugi::node_element) continue;
    if (std::string(child.name()) != name) {
      reader.fail(
          "", std::string("unexpected element <") + child.name() + "> (expected <" + name + ">)");
    }
    out.push_back(child);
  }
  return out;
}

struct CollName {
  const char* name;
  CollectiveKind kind;
  bool classic;   // the classic runtime knows the name
  bool executor;  // the executor knows the name
};

constexpr CollName kCollNames[] = {
    {"allreduce", CollectiveKind::kAllReduce, true, true},
    {"allgather", CollectiveKind::kAllGather, true, true},
    {"reduce", CollectiveKind::kReduce, true, true},
    {"broadcast", CollectiveKind::kBroadcast, true, true},
    {"alltoall", CollectiveKind::kAllToAll, true, true},
    {"reduce_scatter", CollectiveKind::kReduceScatter, true, false},
    {"custom", CollectiveKind::kCustom, true, false},
    {"reducescatter", CollectiveKind::kReduceScatter, false, true},
    {"gather", CollectiveKind::kGather, false, true},
    {"scatter", CollectiveKind::kScatter, false, true},
    // Point-to-point and variable all-to-all have no chunk relation of their own here.
    {"send", CollectiveKind::kCustom, false, true},
    {"recv", CollectiveKind::kCustom, false, true},
    {"alltoallv", CollectiveKind::kCustom, false, true},
};

// Reads one document; collects runtime-compatibility issues on the way.
class Parser {
 public:
  Parser(const std::string& text, const std::string& file) : text_(text), file_(file) {}

  MscclXmlDocument parse() {
    MscclXmlDocument doc;
    if (text_.find('\t') != std::string::npos) {
      add_issue(doc, "algo", -1, -1, -1,
                "the file contains tab characters, which the runtime parsers reject");
    }
    const size_t quote = find_single_quoted_value(text_);
    if (quote != std::string::npos) {
      add_issue(doc, "algo", -1, -1, -1,
                "line " + std::to_string(line_of(text_, static_cast<ptrdiff_t>(quote))) +
                    ": an attribute value in single quotes, which the runtime parsers reject");
    }
    pugi::xml_document xml;
    const pugi::xml_parse_result result =
        xml.load_buffer(text_.data(), text_.size(),
                        pugi::parse_default | pugi::parse_declaration | pugi::parse_doctype);
    if (!result) {
      throw UserError(file_, "line " + std::to_string(line_of(text_, result.offset)),
                      std::string("malformed XML: ") + result.description());
    }
    pugi::xml_node algo;
    for (pugi::xml_node child = xml.first_child(); child; child = child.next_sibling()) {
      if (child.type() == pugi::node_doctype) {
        add_issue(doc, "algo", -1, -1, -1,
                  "the file has a <!DOCTYPE ...> (entity declarations), which the runtime parsers "
                  "reject");
      } else if (child.type() == pugi::node_declaration) {
        add_issue(doc, "algo", -1, -1, -1,
                  "the file starts with an <?xml ...?> declaration, which the runtime parsers "
                  "reject");
      } else if (child.type() == pugi::node_element) {
        if (algo || std::string(child.name()) != "algo") {
          throw UserError(file_, std::string("<") + child.name() + ">",
                          "expected a single <algo> root element");
        }
        algo = child;
      }
    }
    if (!algo) throw UserError(file_, "algo", "no <algo> element");
    read_algo(algo, doc);
    return doc;
  }

 private:
  void add_issue(MscclXmlDocument& doc, const std::string& element, int rank, int tb, int step,
                 const std::string& message, bool classic = true, bool executor = true) {
    doc.issues.push_back({element, rank, tb, step, message, classic, executor});
  }

  ElementReader reader(pugi::xml_node node, const std::string& path) const {
    return ElementReader(node, path, text_, file_);
  }

  void read_algo(pugi::xml_node node, MscclXmlDocument& doc) {
    const ElementReader r = reader(node, "algo");
    Program& p = doc.program;
    check_lexical(node, "algo", -1, -1, -1, doc.issues);
    p.name = r.get_string("name");
    const std::string proto = r.get_string("proto");
    const auto protocol = parse_protocol(proto);
    if (!protocol)
      r.fail("proto", "unknown protocol '" + proto + "' (expected Simple, LL or LL128)");
    p.protocol = *protocol;
    p.num_channels = r.get_int("nchannels", 1);
    p.chunks_per_loop = r.get_int("nchunksperloop", 1);
    p.num_ranks = r.get_int("ngpus", 1);
    const CollName& coll = read_coll(r);
    p.collective = coll.kind;
    p.inplace = r.get_flag("inplace");
    p.num_threads = r.has("nthreads") ? r.get_int("nthreads", 0) : 0;

    // Classic when the file could not load on the executor anyway (docs/formats.md `<algo>`).
    const bool executor_attrs = r.has("outofplace") && r.has("minBytes") && r.has("maxBytes");
    const bool classic = !executor_attrs || !coll.executor || r.has("nthreads");
    doc.dialect = classic ? XmlDialect::kClassic : XmlDialect::kExecutor;
    for (const char* name : {"outofplace", "minBytes", "maxBytes"}) {
      if (!r.has(name)) {
        add_issue(doc, "algo", -1, -1, -1,
                  std::string("attribute '") + name +
                      "' is missing: the executor silently rejects the file",
                  false, true);
      }
    }
    if (!coll.classic) {
      add_issue(doc, "algo", -1, -1, -1,
                "coll=\"" + std::string(coll.name) + "\" is unknown to the classic runtime", true,
                false);
    }
    if (!coll.executor) {
      add_issue(doc, "algo", -1, -1, -1,
                "coll=\"" + std::string(coll.name) + "\" is unknown to the executor", false, true);
    }
    p.outofplace = r.has("outofplace") ? r.get_flag("outofplace") : !p.inplace;
    read_size_range(r, doc);

    const auto gpus = children_named(node, "gpu", r);
    if (static_cast<int>(gpus.size()) != p.num_ranks) {
      r.fail("ngpus", "is " + std::to_string(p.num_ranks) + " but the file has " +
                          std::to_string(gpus.size()) + " <gpu> elements");
    }
    p.gpus.assign(p.num_ranks, GpuProgram{});
    std::vector<bool> seen(p.num_ranks, false);
    for (size_t g = 0; g < gpus.size(); ++g) {
      GpuProgram gpu = read_gpu(gpus[g], "gpu[" + std::to_string(g) + "]", doc);
      if (gpu.rank >= p.num_ranks || seen[gpu.rank]) {
        reader(gpus[g], "gpu[" + std::to_string(g) + "]")
            .fail("id",
                  std::to_string(gpu.rank) +
                      (gpu.rank >= p.num_ranks ? " is not a rank below ngpus" : " appears twice"));
      }
      seen[gpu.rank] = true;
      p.gpus[gpu.rank] = std::move(gpu);
    }
  }

  const CollName& read_coll(const ElementReader& r) const {
    const std::string name = r.get_string("coll");
    for (const CollName& c : kCollNames) {
      if (name == c.name) return c;
    }
    r.fail("coll", "unknown collective '" + name + "'");
  }

  // Converts the file's range into the Program's [min, max] with 0 = unlimited.
  void read_size_range(const ElementReader& r, MscclXmlDocument& doc) {
    Program& p = doc.program;
    p.min_bytes = r.has("minBytes") ? r.get_int64("minBytes") : 0;
    if (p.min_bytes < 0) r.fail("minBytes", "must be >= 0");
    const bool has_max = r.has("maxBytes");
    const int64_t max = has_max ? r.get_int64("maxBytes") : 0;
    if (max < 0) r.fail("maxBytes", "must be >= 0");
    if (doc.dialect == XmlDialect::kExecutor) {
      p.max_bytes = max;
    } else if (!has_max) {
      p.max_bytes = 0;  // the classic runtime then applies its default (128 MiB)
    } else if (max == 0) {
      p.max_bytes = 0;
      add_issue(doc, "algo", -1, -1, -1,
                "maxBytes=\"0\": the classic runtime never selects this file", true, false);
    } else {
      p.max_bytes = max - 1;  // classic [min, max) -> [min, max - 1]
    }
    if (p.max_bytes > 0 && p.max_bytes < p.min_bytes) {
      add_issue(doc, "algo", -1, -1, -1, "the size range [minBytes, maxBytes] is empty");
    }
  }

  GpuProgram read_gpu(pugi::xml_node node, const std::string& path, MscclXmlDocument& doc) {
    const ElementReader r = reader(node, path);
    GpuProgram gpu;
    gpu.rank = r.get_int("id", 0);
    gpu.input_chunks = r.get_int("i_chunks", 0);
    gpu.output_chunks = r.get_int("o_chunks", 0);
    gpu.scratch_chunks = r.get_int("s_chunks", 0);
    check_lexical(node, path, gpu.rank, -1, -1, doc.issues);
    const auto tbs = children_named(node, "tb", r);
    gpu.threadblocks.reserve(tbs.size());
    for (size_t t = 0; t < tbs.size(); ++t) {
      gpu.threadblocks.push_back(read_threadblock(tbs[t], path + "/tb[" + std::to_string(t) + "]",
                                                  gpu.rank, static_cast<int>(t), doc));
    }
    return gpu;
  }

  Threadblock read_threadblock(pugi::xml_node node, const std::string& path, int rank, int position,
                               MscclXmlDocument& doc) {
    const ElementReader r = reader(node, path);
    Threadblock tb;
    tb.id = r.get_int("id", -1);
    tb.send_peer = r.get_int("send", -1);
    tb.recv_peer = r.get_int("recv", -1);
    tb.channel = r.get_int("chan", 0);
    check_lexical(node, path, rank, position, -1, doc.issues);
    const auto steps = children_named(node, "step", r);
    tb.steps.reserve(steps.size());
    for (size_t k = 0; k < steps.size(); ++k) {
      tb.steps.push_back(read_step(reader(steps[k], path + "/step[" + std::to_string(k) + "]"),
                                   static_cast<int>(k), rank, position, doc));
    }
    return tb;
  }

  Step read_step(const ElementReader& r, int position, int rank, int tb, MscclXmlDocument& doc) {
    Step s;
    const int index = r.get_int("s", -1);
    if (index != position) {
      add_issue(doc, r.path(), rank, tb, position,
                "attribute s=\"" + std::to_string(index) + "\" differs from the step's position " +
                    std::to_string(position));
    }
    const std::string type = r.get_string("type");
    const auto t = parse_step_type(type);
    if (!t) {
      r.fail("type", "unknown step type '" + type +
                         "' (expected s, r, rcs, rrs, rrc, rrcs, cpy, re or nop)");
    }
    s.type = *t;
    s.src_buffer = r.get_buffer("srcbuf");
    s.src_offset = r.get_int("srcoff", -1);
    s.dst_buffer = r.get_buffer("dstbuf");
    s.dst_offset = r.get_int("dstoff", -1);
    s.count = r.get_int("cnt", 0);
    s.dep_tb = r.get_int("depid", -1);
    s.dep_step = r.get_int("deps", -1);
    s.has_dep = r.get_flag("hasdep");
    return s;
  }

  const std::string& text_;
  const std::string& file_;
};

std::string read_file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path, "", "cannot open for reading (no such file?)");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Dialect checks of one threadblock (limits, counts, fused reductions, nop rule).
void check_threadblock(const Program& p, const GpuProgram& g, size_t t, XmlDialect dialect,
                       std::vector<XmlIssue>& issues) {
  const Threadblock& tb = g.threadblocks[t];
  const bool classic = dialect == XmlDialect::kClassic;
  const std::string path = "gpu[" + std::to_string(g.rank) + "]/tb[" + std::to_string(t) + "]";
  const int tbi = static_cast<int>(t);
  const int max_steps = classic ? kClassicMaxSteps : kExecutorMaxSteps;
  auto issue = [&](int step, const std::string& message) {
    const std::string element = step < 0 ? path : path + "/step[" + std::to_string(step) + "]";
    issues.push_back({element, g.rank, tbi, step, message, classic, !classic});
  };
  if (static_cast<int>(tb.steps.size()) > max_steps) {
    issue(-1, std::to_string(tb.steps.size()) + " steps exceed the " + to_string(dialect) +
                  " limit of " + std::to_string(max_steps) + " per threadblock");
  }
  if (tb.channel < 0 || tb.channel >= kMaxChannels || tb.channel >= p.num_channels) {
    issue(-1, "chan=" + std::to_string(tb.channel) + " is outside 0.." +
                  std::to_string(std::min(kMaxChannels, p.num_channels) - 1));
  }
  int fused = 0;  // length of the current run of fusable `re` steps
  for (size_t k = 0; k < tb.steps.size(); ++k) {
    const Step& s = tb.steps[k];
    const int ki = static_cast<int>(k);
    if (s.type != StepType::kNop && (s.count < 1 || s.count > kMaxCount)) {
      issue(ki, "cnt=" + std::to_string(s.count) + " is outside 1..71");
    }
    // Consecutive `re` to the same destination without a dependency are fused by the runtime.
    const bool continues = s.type == StepType::kReduce && k > 0 && s.dep_tb < 0 &&
                           tb.steps[k - 1].type == StepType::kReduce &&
                           tb.steps[k - 1].dst_buffer == s.dst_buffer &&
                           tb.steps[k - 1].dst_offset == s.dst_offset;
    fused = s.type == StepType::kReduce ? (continues ? fused + 1 : 1) : 0;
    if (fused == kMaxFusedReduceSources + 1) {
      issue(ki, "more than 16 consecutive `re` steps into one chunk are fused by the runtime");
    }
    // The executor folds the dependencies of preceding nops into the next real step, and
    // rejects the file unless that step has a dependency of its own.
    if (!classic && s.type != StepType::kNop && k > 0 && s.dep_tb < 0 &&
        tb.steps[k - 1].type == StepType::kNop && tb.steps[k - 1].dep_tb >= 0) {
      issue(ki, "follows a nop with a dependency but has depid=-1: the executor rejects this");
    }
  }
}

}  // namespace

XmlDialect parse_xml_dialect(const std::string& text) {
  std::string key;
  for (char c : text) key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (key == "classic") return XmlDialect::kClassic;
  if (key == "executor") return XmlDialect::kExecutor;
  throw UserError("", "xml dialect",
                  "unknown dialect '" + text + "' (expected classic or executor)");
}

std::string to_string(XmlDialect dialect) {
  return dialect == XmlDialect::kClassic ? "classic" : "executor";
}

void write_msccl_xml(std::ostream& os, const Program& p, XmlDialect dialect) {
  const std::string coll = coll_name(p.collective, dialect);
  if (coll.empty()) {
    throw UserError("", "xml dialect",
                    "the " + to_string(dialect) + " dialect has no name for collective '" +
                        to_string(p.collective) + "'; use the classic dialect (coll=\"custom\")");
  }
  if (p.name.size() > kMaxValueLength) {
    throw UserError("", "name",
                    "program name of " + std::to_string(p.name.size()) +
                        " characters: runtimes read attribute values of at most 255");
  }
  const bool classic = dialect == XmlDialect::kClassic;
  os << "<algo name=\"" << escape(p.name) << "\" proto=\"" << to_string(p.protocol)
     << "\" nchannels=\"" << p.num_channels << "\" nchunksperloop=\"" << p.chunks_per_loop
     << "\" ngpus=\"" << p.num_ranks << "\" coll=\"" << coll << "\" inplace=\""
     << (p.inplace ? 1 : 0) << "\"";
  if (classic) {
    if (p.num_threads > 0) os << " nthreads=\"" << p.num_threads << "\"";
    os << " minBytes=\"" << p.min_bytes << "\"";
    // Classic ranges are [min, max); no maxBytes = the runtime's default.
    if (p.max_bytes > 0) os << " maxBytes=\"" << p.max_bytes + 1 << "\"";
  } else {
    os << " outofplace=\"" << (p.outofplace ? 1 : 0) << "\" minBytes=\"" << p.min_bytes
       << "\" maxBytes=\"" << p.max_bytes << "\"";
  }
  os << ">\n";
  {
    BodyWriter body(os);
    for (const GpuProgram& g : p.gpus) body.gpu(g);
  }
  os << "</algo>\n";
}

std::string write_msccl_xml(const Program& p, XmlDialect dialect) {
  std::ostringstream os;
  write_msccl_xml(os, p, dialect);
  return os.str();
}

MscclXmlDocument parse_msccl_xml(const std::string& text, const std::string& file) {
  return Parser(text, file).parse();
}

Program read_msccl_xml(const std::string& text, const std::string& file) {
  return parse_msccl_xml(text, file).program;
}

MscclXmlDocument parse_msccl_xml_file(const std::string& path) {
  return parse_msccl_xml(read_file_text(path), path);
}

Program read_msccl_xml_file(const std::string& path) { return parse_msccl_xml_file(path).program; }

std::vector<XmlIssue> check_dialect(const Program& p, XmlDialect dialect) {
  std::vector<XmlIssue> issues;
  const bool classic = dialect == XmlDialect::kClassic;
  auto issue = [&](const std::string& element, int rank, const std::string& message) {
    issues.push_back({element, rank, -1, -1, message, classic, !classic});
  };
  if (coll_name(p.collective, dialect).empty()) {
    issue("algo", -1,
          "the " + to_string(dialect) + " runtime has no collective '" + to_string(p.collective) +
              "'");
  }
  if (p.num_channels < 1 || p.num_channels > kMaxChannels) {
    issue("algo", -1, "nchannels=" + std::to_string(p.num_channels) + " is outside 1..32");
  }
  if (classic && p.num_threads % 32 != 0) {
    issue("algo", -1, "nthreads=" + std::to_string(p.num_threads) + " is not a multiple of 32");
  }
  const int max_tbs = classic ? kClassicMaxThreadblocks : kExecutorMaxThreadblocks;
  for (const GpuProgram& g : p.gpus) {
    const std::string path = "gpu[" + std::to_string(g.rank) + "]";
    if (static_cast<int>(g.threadblocks.size()) > max_tbs) {
      issue(path, g.rank,
            std::to_string(g.threadblocks.size()) + " threadblocks exceed the " +
                to_string(dialect) + " limit of " + std::to_string(max_tbs));
    }
    if (classic) {
      // Classic parser: i_chunks * (ngpus if allgather else 1) == nchunksperloop, and likewise
      // o_chunks with reduce-scatter (docs/formats.md `<gpu>`).
      const int in_mult = p.collective == CollectiveKind::kAllGather ? p.num_ranks : 1;
      const int out_mult = p.collective == CollectiveKind::kReduceScatter ? p.num_ranks : 1;
      if (g.input_chunks > 0 && g.input_chunks * in_mult != p.chunks_per_loop) {
        issue(path, g.rank,
              "i_chunks * " + std::to_string(in_mult) + " != nchunksperloop " +
                  std::to_string(p.chunks_per_loop) + " (classic rejects this)");
      }
      if (g.output_chunks > 0 && g.output_chunks * out_mult != p.chunks_per_loop) {
        issue(path, g.rank,
              "o_chunks * " + std::to_string(out_mult) + " != nchunksperloop " +
                  std::to_string(p.chunks_per_loop) + " (classic rejects this)");
      }
    }
    for (size_t t = 0; t < g.threadblocks.size(); ++t) check_threadblock(p, g, t, dialect, issues);
  }
  return issues;
}

}  // namespace ccsynth::formats
