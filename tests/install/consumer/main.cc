// Uses the installed ccsynth through its front door, the planner: synthesizes an allgather for
// dgx1 with TACOS, verifies the algorithm and the compiled program, simulates it at 1 MB against
// the NCCL-like ring. Prints "allgather on dgx1: verified, <time> us (ring <time> us)"; exits 1
// when no verified program comes out.

#include <iostream>

#include "ccsynth/plan/planner.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/version.h"

int main() {
  using namespace ccsynth;
  plan::PlanRequest request;
  request.topology = topologies::resolve_topology("dgx1");
  request.method = "tacos";
  request.kind = CollectiveKind::kAllGather;
  request.sizes = {int64_t{1} << 20};
  const plan::PlanResult result = plan::plan(request);
  if (!result.ok()) {
    std::cerr << "no verified program: " << to_string(result.synthesis.status) << "\n";
    return 1;
  }
  std::cout << "ccsynth " << CCSYNTH_VERSION << ": allgather on dgx1: verified, "
            << result.best_time_us() << " us";
  if (result.nccl) std::cout << " (nccl " << result.nccl->results.back().time_us << " us)";
  std::cout << "\n";
  return result.xml().empty() ? 1 : 0;
}
