// Verifier throughput: `verify_program_bench [--repeat N] [ranks | FILE.xml ...]` (default 256
// 1024) prints, per program, ranks, total steps, the fastest of N runs (default 1) in seconds and
// steps per second. A number makes ring programs of that many ranks; a file is an MSCCL-IR XML
// program (e.g. one `ccsynth synth` wrote), parsed once. Build Release.

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/verify/verify_program.h"
#include "verify/test_programs.h"

namespace {

void run(const std::string& name, const ccsynth::Program& program, int repeat) {
  double seconds = std::numeric_limits<double>::infinity();
  bool ok = false;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    ok = ccsynth::verify::verify_program(program).ok();
    seconds = std::min(
        seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::cout << name << " ranks=" << program.num_ranks << " steps=" << program.total_steps()
            << " ok=" << ok << " seconds=" << seconds
            << " steps_per_s=" << static_cast<double>(program.total_steps()) / seconds << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 1;
  std::vector<std::string> cases;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else {
      cases.push_back(arg);
    }
  }
  if (cases.empty()) cases = {"256", "1024"};
  for (const std::string& c : cases) {
    if (c.ends_with(".xml")) {
      run(c, ccsynth::formats::parse_msccl_xml_file(c).program, repeat);
      continue;
    }
    const int n = std::atoi(c.c_str());
    run("ring_allgather", ccsynth::testing::ring_allgather(n, false), repeat);
    run("ring_allreduce_inplace", ccsynth::testing::ring_allreduce(n, true), repeat);
  }
  return 0;
}
