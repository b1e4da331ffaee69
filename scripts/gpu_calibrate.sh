#!/usr/bin/env bash
# Measures the GPU facts behind Topology::launch_us, memory_gbps and the per-threadblock
# bandwidth on the local NVIDIA GPU (bench/gpu/gpu_calibrate.cu; docs/simulator.md
# "Calibration on a GPU"). Needs nvcc and a GPU; ccsynth itself needs neither.
# Usage: scripts/gpu_calibrate.sh [BYTES] [OUT.csv]   (BYTES: buffer size, default 1 GiB)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
if ! command -v nvcc >/dev/null; then
  echo "gpu_calibrate: nvcc not found (install the CUDA toolkit, or put its bin/ on PATH)" >&2
  exit 2
fi
bin="${TMPDIR:-/tmp}/ccsynth_gpu_calibrate"
nvcc -O3 -std=c++17 -arch=native -o "$bin" "$here/bench/gpu/gpu_calibrate.cu"
if [[ $# -ge 2 ]]; then
  "$bin" "${1}" | tee "$2"
else
  "$bin" "${1:-1073741824}"
fi
