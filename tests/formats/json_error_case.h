#pragma once
// Parameterized error tests of the JSON readers: a valid document is edited into a bad one, and
// the reader's UserError must name the file, the field and the reason.

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "ccsynth/core/error.h"
#include "ccsynth/formats/json_io.h"

namespace ccsynth::formats::testing {

/// One bad document: how to spoil a valid one, and what the error must say.
struct JsonErrorCase {
  std::string label;
  std::function<void(Json&)> edit;
  std::string field;
  std::string reason_part;
};

/// gtest prints a case by its label.
inline void PrintTo(const JsonErrorCase& c, std::ostream* os) { *os << c.label; }

/// Applies `c.edit` to `valid`, runs `read(doc, "bad.json")` and checks the UserError it throws.
template <typename Reader>
void expect_json_error(const JsonErrorCase& c, Json valid, Reader read) {
  c.edit(valid);
  try {
    read(valid, "bad.json");
    FAIL() << "no error for " << c.label;
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), "bad.json");
    EXPECT_EQ(e.field(), c.field);
    EXPECT_NE(e.reason().find(c.reason_part), std::string::npos) << e.what();
  }
}

}  // namespace ccsynth::formats::testing
