// `ccsynth report`, `simulate --trace` and the page in a real browser: Debian's chromium loads
// the HTML from disk headless, and the DOM it built must hold the expected SVG elements with no
// console message. Skipped when chromium is not installed (scripts/setup.sh installs it).

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kCli = CCSYNTH_CLI;

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// The numbers in every `attribute="..."` of `html`, in order (`attribute` is a regular
// expression and may include the attributes before it).
std::vector<double> attribute_values(const std::string& html, const std::string& attribute) {
  const std::regex pattern(attribute + "=\"([^\"]+)\"");
  std::vector<double> out;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    out.push_back(std::stod((*it)[1]));
  }
  return out;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs a shell command; stdout is returned, stderr goes to `err_file`.
int run(const std::string& command, std::string* out, const fs::path& err_file) {
  FILE* pipe = ::popen((command + " 2>" + err_file.string()).c_str(), "r");
  if (pipe == nullptr) return -1;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out->append(buffer.data(), n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string chromium() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    std::string out;
    if (run(std::string("command -v ") + name, &out, "/dev/null") == 0 && !out.empty()) {
      return out.substr(0, out.find('\n'));
    }
  }
  return "";
}

class ReportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("ccsynth_report_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  int ccsynth(const std::string& args, std::string* out = nullptr) {
    std::string ignored;
    return run(kCli + " " + args, out ? out : &ignored, dir_ / "stderr.txt");
  }
  std::string err() const { return read(dir_ / "stderr.txt"); }

  fs::path dir_;
};

// The page of nccl and the ring on a 2-node cluster (links, an IB switch) as chromium sees it.
TEST_F(ReportCli, ChromiumLoadsThePageWithoutErrors) {
  const std::string browser = chromium();
  if (browser.empty()) GTEST_SKIP() << "chromium is not installed (scripts/setup.sh)";
  const fs::path page = dir_ / "report.html";
  ASSERT_EQ(ccsynth("report -t ndv2x2 -c allgather -m ring -s 4K,1M -o " + page.string()), 0)
      << err();
  std::string dom;
  const fs::path log = dir_ / "chromium.txt";
  const int code = run(browser + " --headless --no-sandbox --disable-gpu --user-data-dir=" +
                           (dir_ / "profile").string() +
                           " --enable-logging=stderr --v=0 --dump-dom file://" + page.string(),
                       &dom, log);
  ASSERT_EQ(code, 0) << read(log);
  // No console message at all (a failed load, a blocked resource, a script error).
  EXPECT_EQ(count(read(log), ":CONSOLE"), 0u) << read(log);
  // The DOM chromium built: two charts of 2 candidates + the bound, one edge per link and per
  // switch port of the topology (counted from its JSON).
  EXPECT_EQ(count(dom, "<svg id="), 4u);  // time, busbw, topology, timeline
  EXPECT_EQ(count(dom, "<polyline class=\"curve\""), 4u);
  EXPECT_EQ(count(dom, "<polyline class=\"bound\""), 2u);
  std::string exported;
  ASSERT_EQ(ccsynth("topo export ndv2x2", &exported), 0) << err();
  const json topology = json::parse(exported);
  size_t ports = 0;
  for (const json& sw : topology["switches"]) ports += sw["ranks"].size();
  EXPECT_EQ(count(dom, "<line class=\"link\""), topology["links"].size());
  EXPECT_EQ(count(dom, "<line class=\"port\""), ports);
  EXPECT_GT(count(dom, "<rect class=\"step\""), 0u);
  EXPECT_GT(count(dom, "<rect class=\"busy\""), 0u);
}

// Golden: the numbers on the page for a program given as XML are `simulate --json`'s.
TEST_F(ReportCli, NumbersMatchSimulateJson) {
  const std::string xml = (dir_ / "ring.xml").string();
  ASSERT_EQ(ccsynth("baseline --algo ring -c allgather -t dgx1 -o " + xml), 0) << err();
  const std::string page = (dir_ / "report.html").string();
  ASSERT_EQ(
      ccsynth("report -t dgx1 -c allgather --no-nccl --xml " + xml + " -s 1K,64K,4M -o " + page), 0)
      << err();
  std::string sim_text;
  ASSERT_EQ(ccsynth("simulate " + xml + " -t dgx1 -s 1K,64K,4M --json", &sim_text), 0) << err();
  const json sim = json::parse(sim_text);
  const std::string html = read(page);
  const std::vector<double> times = attribute_values(html, "data-time-us");
  const std::vector<double> busbws = attribute_values(html, "data-busbw-gbps");
  const std::vector<double> bounds = attribute_values(html, "data-bound-us");
  ASSERT_EQ(times.size(), sim["results"].size());
  ASSERT_EQ(busbws.size(), sim["results"].size());
  ASSERT_EQ(bounds.size(), sim["results"].size());
  for (size_t i = 0; i < times.size(); ++i) {
    const json& r = sim["results"][i];
    EXPECT_DOUBLE_EQ(times[i], r["time_us"].get<double>()) << i;
    EXPECT_DOUBLE_EQ(busbws[i], r["busbw_gbps"].get<double>()) << i;
    EXPECT_DOUBLE_EQ(bounds[i], r["lower_bound_us"].get<double>()) << i;
  }
}

// `report --from` takes the topology, collective, program and statistics of a synth run.
TEST_F(ReportCli, FromASynthRun) {
  const std::string xml = (dir_ / "ring.xml").string();
  std::string doc;
  ASSERT_EQ(ccsynth("synth --method ring -t ring:4 -c allreduce --json -o " + xml, &doc), 0)
      << err();
  const fs::path run = dir_ / "synth.json";
  std::ofstream(run) << doc;
  const std::string page = (dir_ / "report.html").string();
  ASSERT_EQ(ccsynth("report --from " + run.string() + " -s 1K,1M -o " + page), 0) << err();
  const std::string html = read(page);
  EXPECT_NE(html.find("<title>allreduce on ring:4</title>"), std::string::npos);
  EXPECT_NE(html.find("<tr data-candidate=\"ring\">"), std::string::npos);
  EXPECT_NE(html.find("<tr data-candidate=\"nccl\">"), std::string::npos);
  EXPECT_EQ(count(html, "<polyline class=\"curve\""), 4u);
  // The program's numbers are simulate's.
  std::string sim_text;
  ASSERT_EQ(ccsynth("simulate " + xml + " -t ring:4 -s 1K,1M --json", &sim_text), 0) << err();
  const json sim = json::parse(sim_text);
  const std::vector<double> times = attribute_values(html, "data-candidate=\"ring\" data-time-us");
  ASSERT_EQ(times.size(), 2u);
  EXPECT_DOUBLE_EQ(times[1], sim["results"][1]["time_us"].get<double>());
  // Not a synth document, or one without a program: exit 2 naming the file.
  const fs::path bad = dir_ / "bad.json";
  std::ofstream(bad) << R"({"format": "ccsynth-demo"})";
  EXPECT_EQ(ccsynth("report --from " + bad.string() + " -o " + page), 2);
  EXPECT_NE(err().find("bad.json"), std::string::npos) << err();
}

// `report --from DIR/tuning.json` compares every program of a tuner's table.
TEST_F(ReportCli, FromATuningTable) {
  const fs::path tuned = dir_ / "tuned";
  ASSERT_EQ(ccsynth("tune -t ring:4 -c allgather --sizes 1K:1M --skip tacos --skip sccl -o " +
                    tuned.string()),
            0)
      << err();
  const json table = json::parse(read((tuned / "tuning.json").string()));
  const size_t entries = table["entries"].size();
  ASSERT_GE(entries, 1u);
  const std::string page = (dir_ / "tuned.html").string();
  ASSERT_EQ(ccsynth("report --from " + (tuned / "tuning.json").string() + " -s 1K,1M -o " + page),
            0)
      << err();
  const std::string html = read(page);
  EXPECT_NE(html.find("<title>allgather on ring:4</title>"), std::string::npos);
  // One curve per entry and the nccl reference in each of the two charts.
  EXPECT_EQ(count(html, "<polyline class=\"curve\""), 2 * (entries + 1));
  for (const json& e : table["entries"]) {
    EXPECT_NE(html.find(e["method"].get<std::string>() + " ["), std::string::npos) << e;
  }
}

TEST_F(ReportCli, SimulateWritesATraceOfTheLargestSize) {
  const std::string xml = (dir_ / "ring.xml").string();
  ASSERT_EQ(ccsynth("baseline --algo ring -c allreduce -t ring:4 -o " + xml), 0) << err();
  const fs::path trace = dir_ / "trace.json";
  ASSERT_EQ(ccsynth("simulate " + xml + " -t ring:4 -s 1K,1M --trace " + trace.string()), 0)
      << err();
  const json doc = json::parse(read(trace));
  EXPECT_EQ(doc["otherData"]["bytes"], 1 << 20);
  size_t slices = 0;
  for (const json& e : doc["traceEvents"]) slices += e["ph"] == "X" ? 1 : 0;
  EXPECT_GT(slices, 0u);
}

TEST_F(ReportCli, RunWritesATraceOfTheLastRun) {
  const std::string xml = (dir_ / "ring.xml").string();
  ASSERT_EQ(ccsynth("baseline --algo ring -c allgather -t ring:4 -o " + xml), 0) << err();
  const fs::path trace = dir_ / "trace.json";
  ASSERT_EQ(ccsynth("run " + xml + " -s 64K --iters 1 --warmup 0 --trace " + trace.string()), 0)
      << err();
  const json doc = json::parse(read(trace));
  EXPECT_EQ(doc["otherData"]["runtime"], "cpu");
  size_t steps = 0, messages = 0;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "X") (e["cat"] == "step" ? steps : messages) += 1;
  }
  EXPECT_EQ(steps, doc["otherData"]["steps"].get<size_t>());
  EXPECT_GT(messages, 0u);
}

TEST_F(ReportCli, CsvOnEveryTableVerb) {
  const std::string xml = (dir_ / "ring.xml").string();
  ASSERT_EQ(ccsynth("baseline --algo ring -c allgather -t ring:4 -o " + xml), 0) << err();
  struct Case {
    std::string args;
    std::string header;
    size_t rows;
  };
  const std::vector<Case> cases = {
      {"simulate " + xml + " -t ring:4 -s 1K,1M --csv",
       "bytes,time_us,algbw_gbps,busbw_gbps,lower_bound_us,ratio_to_bound", 2},
      {"run " + xml + " -s 64K --iters 1 --csv", "bytes,iters,time_us,", 1},
      {"verify " + xml + " --csv", "kind,rank,threadblock,step,message", 0},
      {"bounds -t ring:4 -c allgather -s 1M --csv", "bytes,latency_us,", 1},
      {"synth --method ring -t ring:4 -c allgather --csv",
       "size_bytes,program,time_us,busbw_gbps,lower_bound_us,best", 2},
      {"pareto -t ring:4 -c allgather --csv", "chunks,steps,rounds,", 1},
      {"topo show dgx1 --csv", "type,kind,lanes_or_ports,", 2},
  };
  for (const Case& c : cases) {
    std::string out;
    ASSERT_EQ(ccsynth(c.args, &out), 0) << c.args << "\n" << err();
    EXPECT_EQ(out.rfind(c.header, 0), 0u) << c.args << "\n" << out;
    EXPECT_EQ(count(out, "\n"), c.rows + 1) << c.args << "\n" << out;
    const size_t commas = count(out.substr(0, out.find('\n')), ",");
    // Every line has as many cells as the header (no cell here needs quoting).
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_EQ(count(line, ","), commas) << c.args << ": " << line;
    }
  }
  std::string list;
  ASSERT_EQ(ccsynth("topo list --csv", &list), 0);
  EXPECT_EQ(list.rfind("name,description\n", 0), 0u);
  EXPECT_NE(list.find("dgx1,\"NVIDIA DGX-1: 8 V100, two"), std::string::npos) << list;
  EXPECT_EQ(ccsynth("simulate " + xml + " -t ring:4 --csv --json"), 2);
}

TEST_F(ReportCli, BadInputIsExitTwo) {
  const std::string page = (dir_ / "r.html").string();
  EXPECT_EQ(ccsynth("report -t ring:4 -m no-such-method -o " + page), 2);
  EXPECT_NE(err().find("no-such-method"), std::string::npos) << err();
  EXPECT_EQ(ccsynth("report -t ring:4 -m ring -s 1K --detail-size 2K -o " + page), 2);
  EXPECT_NE(err().find("not one of the simulated sizes"), std::string::npos) << err();
  EXPECT_EQ(ccsynth("report -t ring:4 --no-nccl -o " + page), 2);
  const std::string xml = (dir_ / "ring.xml").string();
  ASSERT_EQ(ccsynth("baseline --algo ring -c allreduce -t ring:4 -o " + xml), 0) << err();
  EXPECT_EQ(ccsynth("report -t ring:4 -c allgather --xml " + xml + " -o " + page), 2);
  EXPECT_NE(err().find("ring.xml"), std::string::npos) << err();
  EXPECT_FALSE(fs::exists(page));
}

}  // namespace
