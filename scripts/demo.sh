#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's first command: installs what is missing, builds, and runs hetopt's main job on the
# bundled example (tests/apps/loop_wkr, the write -> kernel -> read loop) on the default OpenCL
# device (the first GPU, else PoCL on the CPU): characterize this machine, trace the app, run it
# optimized, and compare with the untouched run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build=${BUILD_DIR:-build}
hetopt=$build/bin/hetopt
app=$build/bin/loop_wkr
args=(--size "${DEMO_SIZE:-16M}" --iters "${DEMO_ITERS:-10}")
work=${DEMO_DIR:-$build/demo}
mkdir -p "$work"
export HETOPT_DB=${HETOPT_DB:-$PWD/$work/hetopt.db}

has() { "$hetopt" "$1" --help >/dev/null 2>&1; }
step() { printf '\n== %s\n' "$*"; }

step "OpenCL devices (hetopt devices)"
"$hetopt" devices

if has characterize; then
  step "characterize this machine (quick mode; hetopt characterize)"
  "$hetopt" characterize --quick --plots "$work/plots"
fi
if has trace; then
  step "trace the application (hetopt trace)"
  "$hetopt" trace -o "$work/loop_wkr.trace" -- "$app" "${args[@]}"
  step "the compressed trace (hetopt show)"
  "$hetopt" show "$work/loop_wkr.trace"
fi
step "native run"
"$app" "${args[@]}"
step "hetopt run"
"$hetopt" run -- "$app" "${args[@]}"
if has trace; then
  # On a CPU device the curves say pinning never pays, so the plain run above is untouched; this
  # shows the optimize-mode mechanics there anyway (on a GPU the plain run is already optimized).
  step "hetopt run --stats --policy opencl (pool forced: what the shim does)"
  "$hetopt" run --stats --policy opencl -- "$app" "${args[@]}"
fi
