// libFuzzer target: verify, simulate and run on programs parsed from MSCCL-IR XML, as the
// `verify`, `simulate` and `run` verbs do. Every program passes the shared structural check
// (core/program.h) or is rejected by it; a program the verifier accepts must simulate on a
// fully connected topology and run on the CPU runtime with correct outputs.

#include <algorithm>

#include "ccsynth/core/program.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/runtime/harness.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/verify_program.h"
#include "fuzz_input.h"

namespace {

using namespace ccsynth;

// Bigger programs only slow the fuzzer down; their parsing is covered by msccl_xml_fuzzer.
constexpr int kMaxRanks = 8;
constexpr int64_t kMaxSteps = 512;

// The verifier's verdict; a collective_of failure (a custom program) is not a verdict.
bool verifies(const Program& program) {
  try {
    return verify::verify_program(program).ok();
  } catch (const UserError&) {
    return false;
  }
}

// Per-rank bytes that every buffer of `program` divides into whole float32 elements.
int64_t bytes_for(const Program& program) {
  int chunks = 1;
  for (const GpuProgram& gpu : program.gpus) chunks = std::max(chunks, gpu.input_chunks);
  return int64_t{chunks} * 4 * 16;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::run_on_text(data, size, [](const std::string& text) {
    const Program program = formats::read_msccl_xml(text, fuzz::kFile);
    if (program.num_ranks < 2 || program.num_ranks > kMaxRanks ||
        program.total_steps() > kMaxSteps) {
      return;
    }
    validate_structure(program, fuzz::kFile);
    const bool ok = verifies(program);
    const Topology topology = topologies::make_builtin("fc:" + std::to_string(program.num_ranks));
    try {
      (void)sim::simulate(program, topology, bytes_for(program));
    } catch (const UserError&) {
      CCSYNTH_CHECK(!ok) << "a verified program failed to simulate";
    }
    if (!ok) return;  // the runtime would only wait for its timeout on a deadlock
    runtime::HarnessOptions options;
    options.check = true;
    options.exec.timeout_s = 10;
    const runtime::HarnessResult result =
        runtime::run_program(program, bytes_for(program), options);
    CCSYNTH_CHECK(result.ok) << "a verified program failed to run: " << result.message;
  });
}
