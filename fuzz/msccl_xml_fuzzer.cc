// libFuzzer target: the MSCCL-IR XML reader (formats/msccl_xml.h), the dialect checks and a
// write/read round trip of what it accepts.

#include "ccsynth/formats/msccl_xml.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ccsynth;
  return fuzz::run_on_text(data, size, [](const std::string& text) {
    const formats::MscclXmlDocument doc = formats::parse_msccl_xml(text, fuzz::kFile);
    for (const formats::XmlDialect dialect :
         {formats::XmlDialect::kClassic, formats::XmlDialect::kExecutor}) {
      (void)formats::check_dialect(doc.program, dialect);
    }
    const std::string written = formats::write_msccl_xml(doc.program);
    (void)formats::read_msccl_xml(written, "written");
  });
}
