#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs a program under the shim in count mode and checks exact per-function call counts: every
# OpenCL call must be seen exactly once, whichever route reached the shim (LD_PRELOAD export or
# OpenCL layer), and the program must still succeed.
#
#   check_counts.sh SHIM ROUTE EXPECT... -- PROGRAM [ARGS...]
# ROUTE: both (LD_PRELOAD + OPENCL_LAYERS, what `hetopt` does), preload, or layer.
# EXPECT: clFunction=N (exact count) or site-in=PATTERN (some allocation site's innermost frame
# is in a module whose path matches PATTERN).
set -u
shim=$1 route=$2
shift 2
expects=()
while [[ $# -gt 0 && $1 != -- ]]; do expects+=("$1"); shift; done
[[ $# -ge 2 ]] || { echo "usage: check_counts.sh SHIM ROUTE EXPECT... -- PROGRAM [ARGS...]" >&2; exit 2; }
shift

report=$(mktemp "${TMPDIR:-/tmp}/hetopt-count.XXXXXX") || exit 2
trap 'rm -f "$report" "$report.err"' EXIT
env=(HETOPT_MODE=count HETOPT_REPORT_FILE="$report")
case $route in
  both) env+=(LD_PRELOAD="$shim" OPENCL_LAYERS="$shim") ;;
  preload) env+=(LD_PRELOAD="$shim") ;;
  layer) env+=(OPENCL_LAYERS="$shim") ;;
  *) echo "unknown route $route" >&2; exit 2 ;;
esac
env "${env[@]}" "$@" >/dev/null 2>"$report.err" || { echo "FAIL: program exited $? under the shim"; exit 1; }

failed=0
for e in "${expects[@]}"; do
  case $e in
    site-in=*)
      pattern=${e#site-in=}
      if ! awk '$1 == "site" { print $8 }' "$report" | grep -q -- "$pattern"; then
        echo "FAIL: no allocation site whose first frame is in '$pattern'"; failed=1
      fi ;;
    *=*)
      fn=${e%%=*} want=${e#*=}
      got=$(awk -v f="$fn" '$1 == "call" && $2 == f { print $3 }' "$report")
      got=${got:-0}
      if [[ $got != "$want" ]]; then echo "FAIL: $fn called $got times, expected $want"; failed=1; fi ;;
  esac
done
if [[ $failed -ne 0 ]]; then
  echo "--- report:"; cat "$report"; cat "$report.err"
  # The layer route needs a loader that loads OPENCL_LAYERS (ocl-icd, recent Khronos loaders); the
  # CUDA toolkit's libOpenCL.so.1 does not, and the shim says so at exit (see README).
  grep -q "does not support layers" "$report.err" && echo "note: this process's OpenCL loader ignores OPENCL_LAYERS"
  exit 1
fi
echo "OK: ${expects[*]} (route $route)"
