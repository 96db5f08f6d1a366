#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what hetopt needs on Debian 12 (as root, or with sudo), then configures and builds it.
# Idempotent: packages already present are not touched, and a second build is incremental.
#
#   scripts/setup.sh [--tests]   --tests also installs what the test suite needs
#   BUILD_DIR (default ./build) and CMAKE_ARGS (extra configure arguments) are honoured.
set -euo pipefail
cd "$(dirname "$0")/.."

runtime=(build-essential cmake ninja-build pkg-config python3 ocl-icd-libopencl1
         ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo libzstd-dev zstd
         libsqlite3-dev sqlite3 llvm-14-dev gnuplot-nox libgtest-dev libbenchmark-dev)
# python3-pytest, -pip, -setuptools: PyOpenCL's own test suite and examples (tests/integration/
# pyopencl_suite.sh, pyopencl_example.sh); clpeak, hashcat, ffmpeg: third_party.sh; piglit: its
# OpenCL tests (piglit_cl.py); clang-format: scripts/check_format.sh.
testing=(binutils util-linux clang clang-format libclang-rt-14-dev clpeak python3-pyopencl
         python3-pytest python3-pip python3-setuptools hashcat ffmpeg piglit)
want=("${runtime[@]}")
[[ ${1:-} == --tests ]] && want+=("${testing[@]}")

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

build=${BUILD_DIR:-build}
if [[ ! -f $build/build.ninja ]]; then
  # shellcheck disable=SC2086
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-}
fi
cmake --build "$build" -j"$(nproc)"
