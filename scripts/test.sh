#!/usr/bin/env bash
# Builds ccsynth (release preset, warnings as errors), checks the C++ formatting
# (.clang-format), runs every test and a short deterministic run of every fuzz target
# (scripts/fuzz.sh --quick; skipped without clang). Installs what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  bash scripts/format.sh --check
fi
jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"
bash scripts/fuzz.sh --quick
