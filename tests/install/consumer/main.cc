// Uses the installed ccsynth: TACOS allgather on dgx1, verified, compiled, simulated at 1 MB.
// Prints "allgather on dgx1: verified, <time> us"; exits 1 if a verification fails.

#include <iostream>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/collective.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/synth/tacos.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"
#include "ccsynth/version.h"

int main() {
  using namespace ccsynth;
  const Topology topology = topologies::resolve_topology("dgx1");
  const Collective collective = make_collective(CollectiveKind::kAllGather, topology.num_ranks);
  const synth::TacosResult tacos = synth::synthesize_tacos(topology, collective);
  const verify::VerifyReport algorithm_report = verify::verify_algorithm(tacos.algorithm, &topology);
  if (!algorithm_report.ok()) {
    std::cerr << "algorithm: " << algorithm_report.summary() << "\n";
    return 1;
  }
  const Program program = compiler::compile(tacos.algorithm);
  const verify::VerifyReport program_report = verify::verify_program(program);
  if (!program_report.ok()) {
    std::cerr << "program: " << program_report.summary() << "\n";
    return 1;
  }
  const sim::SimResult result = sim::simulate(program, topology, int64_t{1} << 20);
  std::cout << "ccsynth " << CCSYNTH_VERSION << ": allgather on dgx1: verified, " << result.time_us
            << " us\n";
  return 0;
}
