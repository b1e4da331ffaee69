#!/usr/bin/env bash
# ccsynth's main job on a built-in default: builds ccsynth if needed (installing what it needs)
# and runs `ccsynth demo`, passing any extra flags on (e.g. `--topology ndv2`). The run is also
# written as an HTML report (charts, link utilization, timeline) whose path is printed last.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs" --target ccsynth >&2
report="$PWD/build/release/ccsynth-demo-report.html"
rm -f "$report"
status=0
build/release/bin/ccsynth demo --report "$report" "$@" || status=$?
if [ -f "$report" ]; then echo "report: $report" >&2; fi
exit "$status"
