#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A program that writes a lot to stdout (a pipe or a file, never /dev/null) and allocates much
# before its first OpenCL call (which loads the ICD), traced RUNS times in a row: every run must
# exit 0 with native stdout and leave a complete trace with the program's OpenCL calls in it.
# The shape once crashed inside the dynamic loader during that first call, 2 of 4 runs.
#   output_flood.sh HETOPT APP RUNS MIB
# OUTPUT_FLOOD_RUNS / OUTPUT_FLOOD_MIB override RUNS and MIB (e.g. 60 runs of 200 MiB by hand).
set -u
hetopt=$1 app=$2
runs=${OUTPUT_FLOOD_RUNS:-$3} mib=${OUTPUT_FLOOD_MIB:-$4}
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-flood.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
unset HETOPT_MODE HETOPT_TRACE_FILE

"$app" --mib "$mib" >"$work/native.out" 2>"$work/native.err" || { echo "FAIL: native run exited $?"; exit 1; }
want=$(tail -n 1 "$work/native.out")
[[ $want == result:* ]] || { echo "FAIL: native run printed no result"; exit 1; }
size=$(stat -c %s "$work/native.out")

failed=0
for ((i = 1; i <= runs; ++i)); do
  # Odd runs write into a pipe, even ones into a file.
  if ((i % 2)); then
    "$hetopt" trace --no-analyze -o "$work/t.trace" -- "$app" --mib "$mib" 2>"$work/run.err" |
      cat >"$work/run.out"
    rc=${PIPESTATUS[0]} how=pipe
  else
    "$hetopt" trace --no-analyze -o "$work/t.trace" -- "$app" --mib "$mib" >"$work/run.out" 2>"$work/run.err"
    rc=$? how=file
  fi
  why=''
  [[ $rc -eq 0 ]] || why+=" exit status $rc;"
  [[ $(stat -c %s "$work/run.out") == "$size" && $(tail -n 1 "$work/run.out") == "$want" ]] ||
    why+=" stdout differs from native;"
  grep -q "^hetopt: trace .*, complete)" "$work/run.err" || why+=" the trace is not complete;"
  calls=$(sed -n 's/^hetopt:   calls \([0-9]*\).*/\1/p' "$work/run.err")
  [[ ${calls:-0} -ge 5 ]] || why+=" the trace holds ${calls:-no} calls;"
  if [[ -n $why ]]; then
    echo "FAIL: run $i ($how):$why"
    sed 's/^/    /' "$work/run.err" | head -n 30
    failed=$((failed + 1))
  fi
done
if [[ $failed -ne 0 ]]; then
  echo "FAIL: $failed of $runs traced runs ($mib MiB of output each)"
  exit 1
fi
echo "OK: $runs traced runs, $mib MiB of output each, all complete with their calls"
