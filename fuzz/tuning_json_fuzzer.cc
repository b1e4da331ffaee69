// libFuzzer target: the tuning-table reader (formats/tuning_json.h), which
// `Communicator` loading (`load_tuning_dir`) and `ccsynth report --from DIR/tuning.json` share,
// and the promises it makes about what it accepts.

#include "ccsynth/formats/tuning_json.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ccsynth;
  return fuzz::run_on_text(data, size, [](const std::string& text) {
    for (const formats::TuningTableEntry& e :
         formats::read_tuning_table(formats::parse_json(text, fuzz::kFile), fuzz::kFile)) {
      CCSYNTH_CHECK(!e.file.empty() && e.file.find('/') == std::string::npos)
          << "accepted a program file outside the table's directory: " << e.file;
      CCSYNTH_CHECK(e.min_bytes >= 0 && (e.max_bytes == 0 || e.max_bytes >= e.min_bytes))
          << "accepted an empty or negative range";
    }
  });
}
