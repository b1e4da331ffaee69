#!/usr/bin/env bash
# ccsynth's main job on a built-in default: builds ccsynth if needed (installing what it needs)
# and runs `ccsynth demo`, passing any extra flags on (e.g. `--topology ndv2`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs" --target ccsynth >&2
exec build/release/bin/ccsynth demo "$@"
