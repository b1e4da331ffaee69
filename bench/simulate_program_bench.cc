// Simulator throughput: `simulate_program_bench [--repeat N] [--size BYTES] TOPOLOGY FILE.xml ...`
// simulates each MSCCL-IR program (parsed once, e.g. one `ccsynth synth` wrote) on the built-in
// topology at BYTES per rank (default 1M) as the planner does (times only, no critical path),
// and prints per program its step instances, the fastest of N runs (default 1) in seconds and
// step instances per second. Build Release.

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "ccsynth/core/units.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/topologies/library.h"

namespace {

void run(const std::string& name, const ccsynth::Program& program,
         const ccsynth::Topology& topology, int64_t bytes, int repeat) {
  ccsynth::sim::SimOptions options;  // as plan::evaluate simulates: times only
  options.critical_path = false;
  double seconds = std::numeric_limits<double>::infinity();
  ccsynth::sim::SimResult result;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    result = ccsynth::sim::simulate(program, topology, bytes, options);
    seconds = std::min(
        seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::cout << name << " ranks=" << program.num_ranks << " bytes=" << bytes
            << " time_us=" << result.time_us << " instances=" << result.events
            << " seconds=" << seconds
            << " instances_per_s=" << static_cast<double>(result.events) / seconds << "\n";
}

int run_bench(int argc, char** argv) {
  int repeat = 1;
  int64_t bytes = int64_t{1} << 20;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--size" && i + 1 < argc) {
      bytes = ccsynth::parse_bytes(argv[++i]);
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() < 2) {
    std::cerr
        << "usage: simulate_program_bench [--repeat N] [--size BYTES] TOPOLOGY FILE.xml ...\n";
    return 2;
  }
  const ccsynth::Topology topology = ccsynth::topologies::make_builtin(positional[0]);
  for (size_t i = 1; i < positional.size(); ++i) {
    run(positional[i], ccsynth::formats::parse_msccl_xml_file(positional[i]).program, topology,
        bytes, repeat);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {  // bad flags, topology names and files alike: a message and exit code 2
    return run_bench(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "simulate_program_bench: " << e.what() << "\n";
    return 2;
  }
}
