#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A program that ends before its first OpenCL call (--help, a usage error) while hetopt's thread
# is still loading the driver for the program's plan (a pool, and the early context): every run
# must end as it does natively, with the same output and exit status. Without the shim's wait at
# exit, 14 of 100 such runs on PoCL died of SIGSEGV or SIGABRT: exit's handlers had run the
# destructors of libraries the driver was still constructing on hetopt's thread.
#   exit_while_loading.sh SHIM APP RUNS   (APP: a test app, whose --help and --size parse first)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/plan_lib.sh"
shim=$1 app=$2 runs=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-exit.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
unset HETOPT_MODE HETOPT_PLAN_FILE HETOPT_STATS HETOPT_POOL_WAIT_MS
failed=0
for early in "" 1; do
  plan=$work/plan$early
  # A site no allocation has: the pool thread starts all the same, and loads the driver.
  PLAN_EARLY=$early write_plan "$plan" "$app" opencl $((1 << 20)) 0123456789abcdef || { echo "FAIL: no build id"; exit 1; }
  for args in "--help" "--size nonsense"; do
    # shellcheck disable=SC2086
    native=$("$app" $args 2>&1)
    native_rc=$?
    bad=0 last=""
    for ((i = 0; i < runs; i++)); do
      # shellcheck disable=SC2086
      out=$(HETOPT_MODE=optimize HETOPT_PLAN_FILE="$plan" LD_PRELOAD="$shim" "$app" $args 2>&1)
      rc=$?
      if [[ $rc -ne $native_rc || $out != "$native" ]]; then
        bad=$((bad + 1)) last="exit $rc: $out"
      fi
    done
    what="${early:+early context, }$args"
    if ((bad)); then
      echo "FAIL: $what: $bad of $runs runs did not end as natively (exit $native_rc); last: $last"
      failed=1
    else
      echo "ok: $what: $runs of $runs runs exited $native_rc with the native output"
    fi
  done
done
exit $failed
