// Verifier throughput on large ring programs: `verify_program_bench [ranks...]` (default 256
// 1024) prints, per program, ranks, total steps, seconds and steps per second. Build Release.

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "ccsynth/verify/verify_program.h"
#include "verify/test_programs.h"

namespace {

void run(const char* name, const ccsynth::Program& program) {
  const auto start = std::chrono::steady_clock::now();
  const ccsynth::verify::VerifyReport report = ccsynth::verify::verify_program(program);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << name << " ranks=" << program.num_ranks << " steps=" << program.total_steps()
            << " ok=" << report.ok() << " seconds=" << seconds
            << " steps_per_s=" << static_cast<double>(program.total_steps()) / seconds << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {256, 1024};
  for (int n : sizes) {
    run("ring_allgather", ccsynth::testing::ring_allgather(n, false));
    run("ring_allreduce_inplace", ccsynth::testing::ring_allreduce(n, true));
  }
  return 0;
}
