#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A parent that makes no OpenCL call and forks workers that do (fork_workers_app.cpp): traced with
# TRACE_WORKERS workers (0: the parent does the work itself, not forking), then the FIRST optimized
# run after that trace with RUN_WORKERS, forced, the opencl pool policy (on PoCL pinning never
# pays), within LIMIT seconds (default 90). A worker that meets a driver its parent initialized
# hangs on PoCL (its calls fail on NVIDIA): a hang or a failed worker fails the test. stdout must
# equal the native run's and the exit status be 0; `--dry-run` afterwards must say why the driver
# is left to the program (DRIVER_WHY, a regular expression for the text after "driver:  late: ").
# RUN_OPTS goes to `hetopt run`.
#   fork_workers.sh HETOPT APP TRACE_WORKERS RUN_WORKERS DRIVER_WHY
set -u
hetopt=$1 app=$2 traceWorkers=$3 runWorkers=$4 why=$5
limit=${LIMIT:-90}
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-fork-workers.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache

fail() { echo "FAIL: $*"; for f in "$work"/*.err; do echo "--- $f"; tail -n 20 "$f"; done; exit 1; }
"$app" "$runWorkers" >"$work/native.out" 2>"$work/native.err" || fail "native run exited $?"
"$hetopt" trace -o "$work/app.trace" -- "$app" "$traceWorkers" >/dev/null 2>"$work/trace.err" ||
  fail "hetopt trace exited $?"
grep -q "profile stored" "$work/trace.err" || fail "hetopt trace stored no profile"
# timeout signals its whole process group: workers hanging in the driver go too.
# shellcheck disable=SC2086
timeout -k 5 "$limit" "$hetopt" run --stats="$work/stats.json" --force --policy opencl ${RUN_OPTS:-} -- "$app" "$runWorkers" \
  >"$work/run.out" 2>"$work/run.err"
rc=$?
[[ $rc == 124 || $rc == 137 ]] && fail "the first optimized run with $runWorkers workers hung (killed after $limit s)"
[[ $rc == 0 ]] || fail "the first optimized run exited $rc"
cmp -s "$work/native.out" "$work/run.out" ||
  { diff "$work/native.out" "$work/run.out"; fail "stdout under hetopt run differs from native"; }
[[ -f $work/stats.json ]] || fail "the run was not optimized (no stats)"
! grep -q "started the driver early" "$work/run.err" || fail "a worker met a driver hetopt had started"
# shellcheck disable=SC2086
"$hetopt" run --dry-run --force --policy opencl ${RUN_OPTS:-} -- "$app" "$runWorkers" >"$work/dry.out" 2>&1 ||
  fail "hetopt run --dry-run exited $?"
grep -Eq "^driver:  late: $why" "$work/dry.out" || { cat "$work/dry.out"; fail "the plan does not say 'late: $why'"; }
echo "OK: traced with $traceWorkers workers, first optimized run with $runWorkers: $(grep '^driver:' "$work/dry.out")"
