#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sourced by the app benchmarks (apps_speedup.sh, pool_context.sh): one timed run of a test app and
# a median.

# One run: prints "<elapsed_ms> <wall_ms> <before_setup_ms> <setup_ms> <exit_ms>": the app's timed
# region, the whole process, and three parts of the rest: from exec to the app's OpenCL set-up
# (loader, hetopt's driver and shim), the set-up itself (device, context, queues), and from the
# start of exit to the process's end (exit handlers, driver and kernel teardown). Exits non-zero
# when the program failed.
measure() {
  local t0 t1 out
  t0=$(date +%s%N)
  out=$(APP_PHASES=1 "$@" 2>&1 >/dev/null) || return 1  # the apps print their phases
  t1=$(date +%s%N)
  field() { sed -n "s/^$1=//p" <<<"$out" | tail -n1; }
  awk -v e="$(field elapsed_ms)" -v t0="$t0" -v t1="$t1" -v su="$(field setup_unix_ms)" \
    -v s="$(field setup_ms)" -v x="$(field exit_unix_ms)" 'BEGIN {
      w = (t1 - t0) / 1e6
      printf "%s %d %.1f %.1f %.1f\n", e, w, (su ? su - t0 / 1e6 : -1), (s ? s : -1), (x ? t1 / 1e6 - x : -1) }'
}
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR ? a[int((NR + 1) / 2)] : "nan") }'; }
