// libFuzzer target: the TACCL sketch reader (synth/sketch.h).

#include "ccsynth/synth/sketch.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ccsynth;
  return fuzz::run_on_text(data, size, [](const std::string& text) {
    (void)synth::parse_sketch_text(text, fuzz::kFile);
  });
}
