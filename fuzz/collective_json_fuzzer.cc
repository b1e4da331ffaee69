// libFuzzer target: the collective JSON reader (formats/collective_json.h) and a write/read
// round trip of what it accepts.

#include "ccsynth/formats/collective_json.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ccsynth;
  return fuzz::run_on_text(data, size, [](const std::string& text) {
    const Collective collective =
        formats::collective_from_json(formats::parse_json(text, fuzz::kFile), fuzz::kFile);
    const Collective again =
        formats::collective_from_json(formats::collective_to_json(collective), "written");
    CCSYNTH_CHECK(again.chunks == collective.chunks)
        << "collective changed in a write/read round trip";
  });
}
