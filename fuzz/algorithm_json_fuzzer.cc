// libFuzzer target: the algorithm JSON reader (formats/algorithm_json.h), then the algorithm
// verifier and the compiler on what it accepts (what `ccsynth compile` does); every program the
// compiler emits from a verified algorithm must verify too.

#include "ccsynth/compiler/compile.h"
#include "ccsynth/formats/algorithm_json.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"
#include "fuzz_input.h"

namespace {
// Larger algorithms only make the fuzzer slow; their parsing is still exercised.
constexpr size_t kMaxOpsToCompile = 256;
constexpr int kMaxRanksToCompile = 16;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ccsynth;
  return fuzz::run_on_text(data, size, [](const std::string& text) {
    const Algorithm algorithm =
        formats::algorithm_from_json(formats::parse_json(text, fuzz::kFile), fuzz::kFile);
    if (algorithm.ops.size() > kMaxOpsToCompile ||
        algorithm.collective.num_ranks > kMaxRanksToCompile) {
      return;
    }
    if (!verify::verify_algorithm(algorithm).ok()) return;
    const Program program = compiler::compile(algorithm);
    CCSYNTH_CHECK(verify::verify_program(program).ok())
        << "a verified algorithm compiled to a program that does not verify";
  });
}
