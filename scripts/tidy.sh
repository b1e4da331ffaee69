#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy) over ccsynth's sources with the release build's compile
# commands: `bash scripts/tidy.sh [FILE...]` (default: every .cc under src/). Exit 1 on findings.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ ! -f build/release/compile_commands.json ]; then cmake --preset release >/dev/null; fi
files=("$@")
if [ ${#files[@]} -eq 0 ]; then mapfile -t files < <(git ls-files 'src/*.cc'); fi
jobs=$(nproc 2>/dev/null || echo 2)
printf '%s\n' "${files[@]}" |
  xargs -P "$jobs" -n 4 clang-tidy -p build/release --quiet \
    --extra-arg=-Wno-unknown-warning-option 2>/dev/null
