// libFuzzer target: the topology JSON reader (formats/topology_json.h) and what every verb does
// next with a topology: validate it, write it back and read the result again.

#include "ccsynth/formats/topology_json.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ccsynth;
  return fuzz::run_on_text(data, size, [](const std::string& text) {
    const Topology topology =
        formats::topology_from_json(formats::parse_json(text, fuzz::kFile), fuzz::kFile);
    const std::string written = formats::write_topology_json(topology);
    const Topology again =
        formats::topology_from_json(formats::parse_json(written, "written"), "written");
    CCSYNTH_CHECK(again == topology) << "topology changed in a write/read round trip";
  });
}
