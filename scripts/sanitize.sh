#!/usr/bin/env bash
# The sanitizer job (docs/fuzzing.md): every test under AddressSanitizer and
# UndefinedBehaviorSanitizer (the `asan` preset, GCC, undefined behaviour fatal), then the
# libFuzzer targets under the same sanitizers (the `fuzz` preset, clang) for SECONDS each
# (default: the deterministic smoke run of scripts/test.sh). Slow (a debug build of
# everything): not part of scripts/test.sh.
#
#   scripts/sanitize.sh              asan tests + fuzz smoke run
#   scripts/sanitize.sh SECONDS      asan tests + SECONDS of fuzzing per target
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake --preset asan "${launcher[@]}" >/dev/null
cmake --build --preset asan -j "$jobs"
# detect_leaks: a leak fails the test; halt_on_error: the first UBSan report fails it.
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
  UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
  ctest --preset asan -j "$jobs" -LE python
# The sanitized Python module loads into an unsanitized interpreter only when the sanitizer
# runtimes come first; the interpreter's own allocations are not ours to leak-check.
if ctest --preset asan -N -L python | grep -q "Total Tests: [1-9]"; then
  LD_PRELOAD="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libubsan.so)" \
    ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --preset asan -L python
fi
if [ $# -gt 0 ]; then
  bash scripts/fuzz.sh --time "$1"
else
  bash scripts/fuzz.sh --quick
fi
