#pragma once
// Shared by the libFuzzer targets (docs/fuzzing.md): the fuzzer's bytes as text, and the rule
// every target checks: bad input may only end in a UserError (the CLI's exit 2); any other
// exception, a crash, a hang or a sanitizer report is a finding.

#include <cstddef>
#include <cstdint>
#include <string>

#include "ccsynth/core/error.h"

namespace ccsynth::fuzz {

/// The file name the targets give the readers, so that errors name a file as the CLI's would.
inline const std::string kFile = "fuzz-input";

/// Runs `body(text)` on the fuzzer's input; a UserError is the expected answer to bad input and
/// is swallowed, everything else (InternalError included) propagates and libFuzzer reports it.
template <typename Body>
int run_on_text(const uint8_t* data, size_t size, Body&& body) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    body(text);
  } catch (const UserError&) {
  }
  return 0;
}

}  // namespace ccsynth::fuzz
