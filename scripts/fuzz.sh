#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, the `fuzz` preset: clang with ASan + UBSan) and runs each
# on its seed corpus (examples/, tests/golden/xml/). docs/fuzzing.md.
#
#   scripts/fuzz.sh --quick            deterministic smoke run of scripts/test.sh: fixed seed,
#                                      a fixed number of inputs per target (a few seconds);
#                                      skipped with a note when clang++ is missing
#   scripts/fuzz.sh --time SECONDS     the nightly run: SECONDS per target, new inputs kept in
#                                      build/fuzz/corpus/<target>/ for the next run
#   ... [TARGET...]                    only these targets (topology_json, collective_json,
#                                      sketch, algorithm_json, msccl_xml, program,
#                                      tuning_json)
#
# A finding stops the script with libFuzzer's report and a crash-*/timeout-*/oom-* file in
# build/fuzz/findings/; rerun it with build/fuzz/bin/<target>_fuzzer FILE.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=""
seconds=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) mode=quick ;;
    --time) mode=time; seconds="$2"; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
if [ -z "$mode" ]; then
  echo "usage: scripts/fuzz.sh --quick | --time SECONDS [TARGET...]" >&2
  exit 2
fi
if [ ${#targets[@]} -eq 0 ]; then
  targets=(topology_json collective_json sketch algorithm_json msccl_xml program tuning_json)
fi

if ! command -v clang++ >/dev/null 2>&1; then
  if [ "$mode" = quick ]; then
    echo "fuzz: clang++ not found, skipping the fuzz smoke run (scripts/setup.sh installs it)" >&2
    exit 0
  fi
  echo "fuzz: clang++ not found (scripts/setup.sh installs it)" >&2
  exit 2
fi

# The seed directories of a target.
seeds_of() {
  case "$1" in
    topology_json) echo examples/topologies fuzz/corpus/topology_json ;;
    collective_json) echo examples/collectives fuzz/corpus/collective_json ;;
    sketch) echo examples/sketches examples/sketches/taccl fuzz/corpus/sketch ;;
    algorithm_json) echo examples/algorithms fuzz/corpus/algorithm_json ;;
    msccl_xml | program) echo tests/golden/xml fuzz/corpus/msccl_xml ;;
    tuning_json) echo fuzz/corpus/tuning_json ;;
    *) echo "fuzz: unknown target '$1'" >&2; exit 2 ;;
  esac
}

launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake --preset fuzz "${launcher[@]}" >/dev/null
jobs=$(nproc 2>/dev/null || echo 2)
cmake --build --preset fuzz -j "$jobs" --target "${targets[@]/%/_fuzzer}"

findings=build/fuzz/findings
mkdir -p "$findings"
# ASan: report leaks too; UBSan: stop at the first report (the build makes it fatal as well).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
for target in "${targets[@]}"; do
  read -r -a seeds <<<"$(seeds_of "$target")"
  existing=()
  for d in "${seeds[@]}"; do [ -d "$d" ] && existing+=("$d"); done
  common=(-artifact_prefix="$findings/$target-" -timeout=20 -rss_limit_mb=2048
          -max_len=65536 -print_final_stats=0)
  if [ "$mode" = quick ]; then
    # A scratch corpus: the run depends only on the seeds, the seed value and the binary.
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    echo "fuzz: $target (quick: -seed=1 -runs=2000)" >&2
    "build/fuzz/bin/${target}_fuzzer" "${common[@]}" -seed=1 -runs=2000 "$work" "${existing[@]}" \
      2>"$work/log" || { cat "$work/log" >&2; exit 1; }
    rm -rf "$work"
    trap - EXIT
  else
    corpus=build/fuzz/corpus/$target
    mkdir -p "$corpus"
    echo "fuzz: $target for ${seconds}s (corpus $corpus)" >&2
    "build/fuzz/bin/${target}_fuzzer" "${common[@]}" -max_total_time="$seconds" "$corpus" \
      "${existing[@]}"
  fi
done
echo "fuzz: no findings (${targets[*]})" >&2
