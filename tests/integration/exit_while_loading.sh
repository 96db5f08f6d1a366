#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Programs that end before they made a context (--help, a usage error, a platform listing) while
# hetopt's thread is still loading the driver or making a context for their plan (a pool, and the
# early context): every run must end as it does natively, with the same output and exit status.
# Without the shim's wait at exit, 14 of 100 such runs on PoCL died of SIGSEGV or SIGABRT: exit's
# handlers had run the destructors of libraries the driver was still starting on hetopt's thread.
#   exit_while_loading.sh SHIM APP EARLY_EXIT_APP RUNS
#   (APP: a test app, which parses --help before any OpenCL call)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/plan_lib.sh"
shim=$1 app=$2 early_app=$3 runs=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-exit.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
unset HETOPT_MODE HETOPT_PLAN_FILE HETOPT_STATS HETOPT_POOL_WAIT_MS
failed=0
# check PLAN PROGRAM ARGS...: RUNS runs under PLAN end as the native one does.
check() {
  local plan=$1 bad=0 last="" native native_rc out rc i
  shift
  native=$("$@" 2>&1)
  native_rc=$?
  for ((i = 0; i < runs; i++)); do
    out=$(HETOPT_MODE=optimize HETOPT_PLAN_FILE="$plan" LD_PRELOAD="$shim" "$@" 2>&1)
    rc=$?
    if [[ $rc -ne $native_rc || $out != "$native" ]]; then
      bad=$((bad + 1)) last="exit $rc: $out"
    fi
  done
  local what="${early:+early context, }$(basename "$1") ${*:2}"
  if ((bad)); then
    echo "FAIL: $what: $bad of $runs runs did not end as natively (exit $native_rc); last: $last"
    failed=1
  else
    echo "ok: $what: $runs of $runs runs exited $native_rc with the native output"
  fi
}
for early in "" 1; do
  # A site no allocation has: the pool thread starts all the same, and loads the driver.
  for prog in "$app" "$early_app"; do
    PLAN_EARLY=$early write_plan "$work/$(basename "$prog")$early" "$prog" opencl $((1 << 20)) 0123456789abcdef ||
      { echo "FAIL: $prog has no build id"; exit 1; }
  done
  check "$work/$(basename "$app")$early" "$app" --help
  check "$work/$(basename "$early_app")$early" "$early_app" usage
  check "$work/$(basename "$early_app")$early" "$early_app" platforms
done
exit $failed
