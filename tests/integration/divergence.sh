#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Trace conformance end to end: trace PROGRAM with --size TRACED, then `hetopt run` it (pool policy
# forced, as on PoCL pinning never pays; --force, as on a loaded machine PoCL's kernel times can
# make the traced run look ineligible) with --size RUN. Its stdout must equal the native run's
# with --size RUN, and CHECK (a Python expression over the run's stats as JSON, `s`:
# stats_check.py) must hold: deactivated when RUN is far from TRACED, conformant when they match.
# RUN_OPTS goes to `hetopt run`. The run's blocks wait for the pool (HETOPT_POOL_WAIT_MS): a loaded
# machine must not decide what is served.
#   divergence.sh HETOPT PROGRAM TRACED RUN CHECK [ARGS...]
set -u
source "$(dirname "${BASH_SOURCE[0]}")/stats_lib.sh"
hetopt=$1 prog=$2 traced=$3 size=$4 check=$5
shift 5
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-diverge.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache

fail() { echo "FAIL: $*"; for f in "$work"/*.err; do echo "--- $f"; tail -n 20 "$f"; done; exit 1; }
"$hetopt" trace -o "$work/app.trace" -- "$prog" --size "$traced" "$@" >/dev/null 2>"$work/trace.err" ||
  fail "hetopt trace exited $?"
grep -q "profile stored" "$work/trace.err" || fail "hetopt trace stored no profile"
"$prog" --size "$size" "$@" >"$work/native.out" 2>"$work/native.err" || fail "native run exited $?"
# shellcheck disable=SC2086
HETOPT_POOL_WAIT_MS=5000 "$hetopt" run --stats="$work/stats.json" --force --policy opencl ${RUN_OPTS:-} -- "$prog" --size "$size" "$@" >"$work/run.out" \
  2>"$work/run.err" || fail "hetopt run exited $?"
cmp -s "$work/native.out" "$work/run.out" ||
  { diff "$work/native.out" "$work/run.out"; fail "stdout under hetopt run differs from native"; }
stats_expect "$work/stats.json" "$check" || fail "stats do not hold '$check'"
echo "OK: $(stats_get "$work/stats.json" pool); conformant: $(stats_get "$work/stats.json" conformant)"
