#pragma once
// The fixture of the end-to-end tests of the `ccsynth` executable (cli_test.cc,
// hostile_input_test.cc): runs the real binary in a scratch directory and captures its exit
// code, stdout and stderr.

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace cli_test {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kCli = CCSYNTH_CLI;
const std::string kSource = CCSYNTH_SOURCE_DIR;

// The whole content of a file ("" when it cannot be read).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct CliRun {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
  json doc() const { return json::parse(out); }
};

// A scratch directory per test, removed afterwards.
class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("ccsynth_cli_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
  }

  // Runs `ccsynth ARGS`, capturing stdout and stderr.
  CliRun run(const std::string& args) const {
    const std::string err_file = path("stderr.txt");
    const std::string command = kCli + " " + args + " 2>" + err_file;
    CliRun result;
    FILE* pipe = ::popen(command.c_str(), "r");
    EXPECT_NE(pipe, nullptr);
    if (!pipe) return result;
    std::array<char, 4096> buffer{};
    size_t n = 0;
    while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
      result.out.append(buffer.data(), n);
    const int status = ::pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream err(err_file);
    std::stringstream ss;
    ss << err.rdbuf();
    result.err = ss.str();
    return result;
  }

  // The golden 4-rank ring allgather with its first send deleted (its receiver waits forever),
  // written to DIR/broken.xml.
  std::string write_broken_ring() const {
    std::ifstream in(kSource + "/tests/golden/xml/ring_allgather_4.executor.xml");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    const size_t send = text.find("type=\"s\"");
    EXPECT_NE(send, std::string::npos);
    const size_t begin = text.rfind("<step", send);
    text.erase(begin, text.find("/>", send) + 2 - begin);
    write("broken.xml", text);
    return path("broken.xml");
  }

  // `ccsynth verify FILE --json` must say ok.
  void expect_verified(const std::string& xml) const {
    const CliRun v = run("verify " + xml + " --json");
    EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
    EXPECT_TRUE(v.doc()["ok"].get<bool>()) << v.out;
  }

  // Every method's output: ok, verified, never faster than the lower bound, nccl reference ok.
  static void expect_synthesized(const CliRun& r) {
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const json doc = r.doc();
    EXPECT_EQ(doc["format"], "ccsynth-synthesis");
    EXPECT_TRUE(doc["ok"].get<bool>());
    const json result = doc["program"]["results"][0];
    EXPECT_GE(result["ratio_to_bound"].get<double>(), 0.999) << result;
    EXPECT_TRUE(doc["nccl"]["ok"].get<bool>());
  }

  // `ccsynth synth ARGS --json -o XML`: synthesized (expect_synthesized), and the XML written
  // verifies again (expect_verified).
  CliRun synth_verified(const std::string& args, const std::string& xml) const {
    const CliRun r = run("synth " + args + " --json -o " + xml);
    expect_synthesized(r);
    expect_verified(xml);
    return r;
  }

  fs::path dir_;
};

}  // namespace cli_test
