#include "ccsynth/formats/msccl_xml.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "../verify/test_programs.h"
#include "ccsynth/core/error.h"

namespace ccsynth::formats {

// gtest prints a dialect by name (found by argument-dependent lookup, so outside the unnamed
// namespace).
void PrintTo(XmlDialect dialect, std::ostream* os) { *os << to_string(dialect); }

namespace {

using testing::make_step;
using testing::ring_allgather;
using testing::ring_allreduce;

std::string golden_path(const std::string& name) {
  return std::string(CCSYNTH_SOURCE_DIR) + "/tests/golden/xml/" + name;
}

std::string read_golden(const std::string& name) {
  std::ifstream in(golden_path(name), std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A program exercising every field: protocol, two channels, deps, nops, scratch, sizes.
Program rich_program() {
  Program p = ring_allreduce(4, false);
  p.name = "rich & <odd> \"name\"";
  p.protocol = Protocol::kLL128;
  p.num_channels = 2;
  p.min_bytes = 1024;
  p.max_bytes = 1 << 20;
  for (GpuProgram& g : p.gpus) {
    g.scratch_chunks = 2;
    Threadblock local;
    local.id = 1;
    local.channel = 0;
    Step nop = make_step(StepType::kNop, Buffer::kInput, -1, Buffer::kOutput, -1, 0);
    nop.dep_tb = 0;
    nop.dep_step = 2;
    local.steps.push_back(nop);
    Step re = make_step(StepType::kReduce, Buffer::kScratch, 1, Buffer::kOutput, 3, 1);
    re.dep_tb = 0;
    re.dep_step = 3;
    local.steps.push_back(re);
    g.threadblocks[0].steps[2].has_dep = true;
    g.threadblocks[0].steps[3].has_dep = true;
    g.threadblocks[0].channel = 1;
    g.threadblocks.push_back(local);
  }
  return p;
}

class RoundTrip : public ::testing::TestWithParam<std::tuple<XmlDialect, int>> {};

// Names of the programs case_program(0..4) builds, for test names.
constexpr const char* kCaseProgramNames[] = {"RingAllgather4", "RingAllgather4Inplace",
                                             "RingAllreduce4", "RingAllreduce4Inplace",
                                             "RichProgram"};

Program case_program(int which) {
  switch (which) {
    case 0: return ring_allgather(4, false);
    case 1: return ring_allgather(4, true);
    case 2: return ring_allreduce(4, false);
    case 3: return ring_allreduce(4, true);
    default: return rich_program();
  }
}

TEST_P(RoundTrip, ProgramXmlProgramIsIdentity) {
  const auto [dialect, which] = GetParam();
  Program p = case_program(which);
  if (dialect == XmlDialect::kClassic) p.num_threads = which == 4 ? 512 : 0;
  const std::string xml = write_msccl_xml(p, dialect);
  const MscclXmlDocument doc = parse_msccl_xml(xml, "roundtrip.xml");
  EXPECT_EQ(doc.program, p) << xml;
  EXPECT_EQ(doc.dialect, dialect) << xml;
  // Our own output never has lexical issues; the only executor-side issues of a classic file
  // are the attributes the classic dialect leaves out.
  for (const XmlIssue& issue : doc.issues) {
    EXPECT_TRUE(dialect == XmlDialect::kClassic && !issue.affects_classic) << issue.message;
  }
  // Writing the read program again gives the same text.
  EXPECT_EQ(write_msccl_xml(doc.program, dialect), xml);
}

std::string round_trip_name(const ::testing::TestParamInfo<std::tuple<XmlDialect, int>>& info) {
  return to_string(std::get<0>(info.param)) + "_" + kCaseProgramNames[std::get<1>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(BothDialects, RoundTrip,
                         ::testing::Combine(::testing::Values(XmlDialect::kClassic,
                                                              XmlDialect::kExecutor),
                                            ::testing::Range(0, 5)),
                         round_trip_name);

TEST(MscclXmlWriter, MatchesGoldenFiles) {
  EXPECT_EQ(write_msccl_xml(ring_allgather(4, false), XmlDialect::kExecutor),
            read_golden("ring_allgather_4.executor.xml"));
  Program classic = ring_allreduce(4, true);
  classic.max_bytes = 4095;  // classic writes the exclusive bound 4096
  EXPECT_EQ(write_msccl_xml(classic, XmlDialect::kClassic),
            read_golden("ring_allreduce_4_inplace.classic.xml"));
}

TEST(MscclXmlWriter, FollowsLexicalRules) {
  const std::string xml = write_msccl_xml(rich_program());
  EXPECT_EQ(xml.find("<?xml"), std::string::npos);
  EXPECT_EQ(xml.find('\t'), std::string::npos);
  EXPECT_NE(xml.find("name=\"rich &amp; &lt;odd&gt; &quot;name&quot;\""), std::string::npos);
  // Every step carries all ten attributes.
  std::istringstream lines(xml);
  std::string line;
  int steps = 0;
  while (std::getline(lines, line)) {
    if (line.find("<step ") == std::string::npos) continue;
    ++steps;
    EXPECT_EQ(std::count(line.begin(), line.end(), '='), 10) << line;
  }
  EXPECT_EQ(steps, rich_program().total_steps());
}

TEST(MscclXmlWriter, CollectiveNamesAndSizesPerDialect) {
  Program p = ring_allgather(2, false);
  p.collective = CollectiveKind::kReduceScatter;
  p.max_bytes = 0;
  const std::string classic = write_msccl_xml(p, XmlDialect::kClassic);
  const std::string executor = write_msccl_xml(p, XmlDialect::kExecutor);
  EXPECT_NE(classic.find("coll=\"reduce_scatter\""), std::string::npos);
  EXPECT_NE(executor.find("coll=\"reducescatter\""), std::string::npos);
  EXPECT_EQ(classic.find("outofplace"), std::string::npos);
  EXPECT_EQ(classic.find("maxBytes"), std::string::npos);  // unlimited: runtime default
  EXPECT_NE(executor.find("outofplace=\"1\" minBytes=\"0\" maxBytes=\"0\""), std::string::npos);
  p.collective = CollectiveKind::kCustom;
  EXPECT_NE(write_msccl_xml(p, XmlDialect::kClassic).find("coll=\"custom\""), std::string::npos);
  EXPECT_THROW(write_msccl_xml(p, XmlDialect::kExecutor), UserError);
  EXPECT_EQ(parse_xml_dialect("Classic"), XmlDialect::kClassic);
  EXPECT_EQ(parse_xml_dialect("executor"), XmlDialect::kExecutor);
  EXPECT_THROW(parse_xml_dialect("nccl"), UserError);
}

// A file in the style other tools (msccl-tools) write: attribute order differs, in-place,
// classic collective name, no size range.
constexpr const char* kForeign =
    R"(<algo name="allgather_ring" nchunksperloop="2" nchannels="1" inplace="1" ngpus="2" proto="Simple" coll="allgather">
  <gpu id="1" i_chunks="0" o_chunks="2" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="0" i_chunks="0" o_chunks="2" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
)";

TEST(MscclXmlReader, ReadsOtherToolsFiles) {
  const MscclXmlDocument doc = parse_msccl_xml(kForeign, "foreign.xml");
  const Program& p = doc.program;
  EXPECT_EQ(doc.dialect, XmlDialect::kClassic);  // no outofplace/minBytes/maxBytes
  EXPECT_EQ(p.collective, CollectiveKind::kAllGather);
  EXPECT_TRUE(p.inplace);
  EXPECT_FALSE(p.outofplace);
  ASSERT_EQ(p.gpus.size(), 2u);
  EXPECT_EQ(p.gpus[0].rank, 0);  // sorted by id
  EXPECT_EQ(p.gpus[1].threadblocks[0].steps[1].dst_offset, 0);
  EXPECT_EQ(p.max_bytes, 0);
  // The executor would reject it silently: three missing attributes reported for it only.
  int executor_issues = 0;
  for (const XmlIssue& i : doc.issues) {
    EXPECT_FALSE(i.affects_classic) << i.message;
    executor_issues += i.affects_executor;
  }
  EXPECT_EQ(executor_issues, 3);
}

TEST(MscclXmlReader, ClassicAndExecutorSizeRanges) {
  Program p = ring_allgather(2, false);
  p.min_bytes = 100;
  p.max_bytes = 1000;
  std::string classic = write_msccl_xml(p, XmlDialect::kClassic);
  EXPECT_NE(classic.find("minBytes=\"100\" maxBytes=\"1001\""), std::string::npos);
  EXPECT_EQ(read_msccl_xml(classic, "c.xml").max_bytes, 1000);
  std::string executor = write_msccl_xml(p, XmlDialect::kExecutor);
  EXPECT_NE(executor.find("minBytes=\"100\" maxBytes=\"1000\""), std::string::npos);
  EXPECT_EQ(read_msccl_xml(executor, "e.xml").max_bytes, 1000);
  // maxBytes="0" in a classic file: never selected by the classic runtime.
  const std::string never =
      std::regex_replace(classic, std::regex("maxBytes=\"1001\""), "maxBytes=\"0\"");
  const auto doc = parse_msccl_xml(never, "never.xml");
  ASSERT_FALSE(doc.issues.empty());
  bool found = false;
  for (const auto& i : doc.issues) found |= i.message.find("never selects") != std::string::npos;
  EXPECT_TRUE(found);
}

TEST(MscclXmlReader, ReportsLexicalAndStepIndexIssues) {
  std::string xml = write_msccl_xml(ring_allgather(2, false));
  std::string bad = "<?xml version=\"1.0\"?>\n" + xml;
  const size_t pos = bad.find("<gpu id=\"1\"");
  bad.insert(pos, "\t");
  const size_t s1 = bad.find("<step s=\"1\"");
  bad.replace(s1, 11, "<step s=\"7\"");
  const MscclXmlDocument doc = parse_msccl_xml(bad, "bad.xml");
  EXPECT_EQ(doc.program, ring_allgather(2, false));
  std::string all;
  for (const XmlIssue& i : doc.issues) all += i.element + ": " + i.message + "\n";
  EXPECT_NE(all.find("tab characters"), std::string::npos) << all;
  EXPECT_NE(all.find("<?xml"), std::string::npos) << all;
  EXPECT_NE(all.find("gpu[0]/tb[0]/step[1]: attribute s=\"7\""), std::string::npos) << all;
}

struct BadCase {
  const char* name;
  const char* from;
  const char* to;
  const char* expected_field;  // substring of UserError::field()
  const char* expected_reason;
};

// gtest prints a case by its name.
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class ReaderErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(ReaderErrors, NameFileElementAttributeAndReason) {
  const BadCase& c = GetParam();
  std::string xml = write_msccl_xml(ring_allgather(3, false));
  // Replace the last occurrence so the error lands deep in the document.
  const size_t pos = xml.rfind(c.from);
  ASSERT_NE(pos, std::string::npos) << c.from;
  xml.replace(pos, std::string(c.from).size(), c.to);
  try {
    read_msccl_xml(xml, "broken.xml");
    FAIL() << "no error for " << c.name;
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), "broken.xml");
    EXPECT_NE(e.field().find(c.expected_field), std::string::npos) << e.what();
    EXPECT_NE(e.reason().find(c.expected_reason), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ReaderErrors,
    ::testing::Values(
        BadCase{"missing_cnt", " cnt=\"1\"", "", "gpu[2]/tb[0]/step[3] attribute 'cnt'", "missing"},
        BadCase{"not_int", "dstoff=\"0\"", "dstoff=\"zero\"",
                "gpu[2]/tb[0]/step[3] attribute 'dstoff'", "not an integer"},
        BadCase{"bad_type", "type=\"r\"", "type=\"ra\"", "gpu[2]/tb[0]/step[3] attribute 'type'",
                "unknown step type"},
        BadCase{"bad_buffer", "srcbuf=\"o\"", "srcbuf=\"x\"", "step[3] attribute 'srcbuf'",
                "unknown buffer"},
        BadCase{"bad_hasdep", "hasdep=\"0\"", "hasdep=\"2\"", "step[3] attribute 'hasdep'",
                "0 or 1"},
        BadCase{"bad_peer", "recv=\"1\"", "recv=\"-5\"", "gpu[2]/tb[0] attribute 'recv'",
                "out of range"},
        BadCase{"bad_proto", "proto=\"Simple\"", "proto=\"simple\"", "algo attribute 'proto'",
                "unknown protocol"},
        BadCase{"bad_coll", "coll=\"allgather\"", "coll=\"allgathr\"", "algo attribute 'coll'",
                "unknown collective"},
        BadCase{"dup_gpu", "<gpu id=\"2\"", "<gpu id=\"1\"", "gpu[2] attribute 'id'", "twice"},
        BadCase{"ngpus", "ngpus=\"3\"", "ngpus=\"4\"", "algo attribute 'ngpus'", "<gpu> elements"},
        BadCase{"element", "<step s=\"3\"", "<stp s=\"3\"", "gpu[2]/tb[0]", "unexpected element"},
        BadCase{"malformed", "</tb>", "</tbx>", "line", "malformed XML"},
        BadCase{"truncated", "</algo>\n", "", "line", "malformed XML"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(MscclXmlReader, GarbageIsAUserErrorNotACrash) {
  for (const char* text : {"", "not xml at all", "<algo", "<foo/>", "<algo/><algo/>",
                           "<algo name=\"x\"/>", "\xff\xfe<\x00>"}) {
    EXPECT_THROW(read_msccl_xml(text, "garbage.xml"), UserError) << text;
  }
  EXPECT_THROW(read_msccl_xml_file("/nonexistent/file.xml"), UserError);
}

TEST(MscclXmlReader, ReadsGoldenFile) {
  const Program p = read_msccl_xml_file(golden_path("ring_allgather_4.executor.xml"));
  EXPECT_EQ(p, ring_allgather(4, false));
}

bool has_issue(const std::vector<XmlIssue>& issues, const std::string& text) {
  for (const XmlIssue& i : issues) {
    if ((i.element + ": " + i.message).find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(CheckDialect, LimitsAndRules) {
  Program p = ring_allgather(4, false);
  EXPECT_TRUE(check_dialect(p, XmlDialect::kExecutor).empty());
  EXPECT_TRUE(check_dialect(p, XmlDialect::kClassic).empty());

  Program long_tb = p;
  auto& steps = long_tb.gpus[1].threadblocks[0].steps;
  while (steps.size() < 65)
    steps.push_back(make_step(StepType::kNop, Buffer::kInput, -1, Buffer::kOutput, -1, 0));
  EXPECT_TRUE(has_issue(check_dialect(long_tb, XmlDialect::kExecutor), "gpu[1]/tb[0]: 65 steps"));
  EXPECT_TRUE(check_dialect(long_tb, XmlDialect::kClassic).empty());

  Program nop_rule = p;
  auto& s = nop_rule.gpus[2].threadblocks[0].steps;
  Step nop = make_step(StepType::kNop, Buffer::kInput, -1, Buffer::kOutput, -1, 0);
  nop.dep_tb = 0;
  nop.dep_step = 0;
  s.insert(s.begin() + 1, nop);
  EXPECT_TRUE(has_issue(check_dialect(nop_rule, XmlDialect::kExecutor), "gpu[2]/tb[0]/step[2]"));
  EXPECT_FALSE(has_issue(check_dialect(nop_rule, XmlDialect::kClassic), "step[2]"));

  Program counts = p;
  counts.gpus[0].threadblocks[0].steps[0].count = 72;
  EXPECT_TRUE(has_issue(check_dialect(counts, XmlDialect::kExecutor), "cnt=72"));

  Program chunks = p;
  chunks.chunks_per_loop = 3;
  EXPECT_TRUE(has_issue(check_dialect(chunks, XmlDialect::kClassic), "nchunksperloop"));

  Program custom = p;
  custom.collective = CollectiveKind::kCustom;
  EXPECT_TRUE(has_issue(check_dialect(custom, XmlDialect::kExecutor), "no collective 'custom'"));
  EXPECT_FALSE(has_issue(check_dialect(custom, XmlDialect::kClassic), "no collective"));

  Program chan = p;
  chan.gpus[3].threadblocks[0].channel = 1;
  EXPECT_TRUE(has_issue(check_dialect(chan, XmlDialect::kExecutor), "chan=1"));
}

TEST(MscclXmlReader, ReportsRuntimeParserLimits) {
  std::string xml = write_msccl_xml(ring_allgather(2, false));
  // 17 attributes on <algo> (10 + 7 unknown ones), a 300-character name.
  xml.replace(xml.find("<algo name=\"ring_allgather\""), 27,
              "<algo a1=\"1\" a2=\"2\" a3=\"3\" a4=\"4\" a5=\"5\" a6=\"6\" a7=\"7\" name=\"" +
                  std::string(300, 'x') + "\"");
  const MscclXmlDocument doc = parse_msccl_xml(xml, "limits.xml");
  EXPECT_TRUE(has_issue(doc.issues, "algo: has 17 attributes"));
  EXPECT_TRUE(has_issue(doc.issues, "'name' is longer than 255"));
  // 1025 steps in one threadblock.
  Program big = ring_allgather(2, false);
  auto& steps = big.gpus[0].threadblocks[0].steps;
  while (steps.size() < 1025) {
    steps.push_back(make_step(StepType::kNop, Buffer::kInput, -1, Buffer::kOutput, -1, 0));
  }
  const MscclXmlDocument many = parse_msccl_xml(write_msccl_xml(big), "many.xml");
  EXPECT_EQ(many.program, big);
  EXPECT_TRUE(has_issue(many.issues, "gpu[0]/tb[0]: has 1025 child elements"));
}

}  // namespace
}  // namespace ccsynth::formats
