#!/usr/bin/env bash
# Installs the Debian packages ccsynth needs to build and test, only those that are missing,
# so it is quick on a machine that already has them.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  nlohmann-json3-dev libpugixml-dev libcli11-dev libfmt-dev
  coinor-libcbc-dev coinor-libclp-dev libz3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin
  clang-format clang-tidy clang libclang-rt-dev
  help2man
  chromium
  pybind11-dev python3-dev python3-pytest python3-setuptools python3-wheel python3-pip python3-venv
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
