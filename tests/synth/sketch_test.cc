#include "ccsynth/synth/sketch.h"

#include <gtest/gtest.h>

namespace ccsynth::synth {
namespace {
TEST(Sketch, Placeholder) { EXPECT_EQ(to_string(SwitchPolicy::kUcMin), "uc-min"); }
}  // namespace
}  // namespace ccsynth::synth
