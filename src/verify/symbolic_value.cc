#include "ccsynth/verify/symbolic_value.h"

namespace ccsynth::verify {

namespace {
// splitmix64 finalizer: a well-mixed 64-bit tag from a 64-bit key.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

SymbolicValue SymbolicValue::contribution(int chunk, Slot slot) {
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(chunk)) << 40) ^
                       (static_cast<uint64_t>(static_cast<uint32_t>(slot.rank)) << 20) ^
                       static_cast<uint64_t>(static_cast<uint32_t>(slot.index));
  return {mix(mix(key) ^ 0x5851f42d4c957f2dULL), 1};
}

SymbolicValue expected_value(const Collective& collective, int chunk) {
  SymbolicValue value;
  for (const Slot& slot : collective.chunks.at(chunk).pre) {
    value = value + SymbolicValue::contribution(chunk, slot);
  }
  return value;
}

}  // namespace ccsynth::verify
