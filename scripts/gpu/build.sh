#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds hetopt on the GPU machine, which lacks GoogleTest, Google Benchmark, LLVM dev files (the
# analyzer then reports sites as module+offset) and
# sqlite3.h: the lead carries the headers in .carry/include. Usage: scripts/gpu/build.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-/tmp/hetopt-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHETOPT_BUILD_BENCH=ON -DHETOPT_EXTRA_INCLUDE_DIRS="$PWD/.carry/include" >/dev/null
cmake --build "$build" -j"$(nproc)" 2>&1 | grep -E "error|warning: unused|Error" || true
test -x "$build/bin/hetopt"
