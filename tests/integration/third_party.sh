#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A program nobody here wrote (from Debian's packages) under every hetopt route, compared with its
# native run: same exit status and same stdout (lines matching VARY, e.g. bandwidth figures, have
# their numbers blanked first: they legitimately differ from run to run).
#   1. `hetopt trace`: trace complete and readable by `hetopt show`, profile stored;
#   2. `hetopt run`: optimized or untouched with one line saying why (on PoCL: untouched);
#   3. `hetopt run --policy opencl --force`: optimize mode wherever a site feeds transfers
#      (OPTIMIZED=1 requires allocations served from the pool);
#   4. optimize mode with a hand-written plan naming every tracked site, host-only ones included
#      (what `hetopt run` never does): the shim serves the program's own buffers from the pool.
#
# Every run reads stdin from /dev/null. --silent: the program verifies its own answer (its exit
# status) and prints nothing.
#
#   third_party.sh HETOPT SHIM [--vary ERE] [--optimized] [--silent] -- PROGRAM [ARGS...]
set -u
source "$(dirname "${BASH_SOURCE[0]}")/plan_lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/stats_lib.sh"
hetopt=$1 shim=$2
shift 2
vary='' optimized=0 silent=0
while [[ $# -gt 0 && $1 != -- ]]; do
  case $1 in
    --vary) vary=$2; shift 2 ;;
    --optimized) optimized=1; shift ;;
    --silent) silent=1; shift ;;
    *) echo "third_party.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ ${1:-} == -- ]] && shift
prog=$(command -v "$1") || { echo "FAIL: $1 is not installed (scripts/setup.sh --tests installs it)"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-3p.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
# The programs' own caches and state (PoCL's and hashcat's kernel caches, hashcat's sessions) too.
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache XDG_DATA_HOME=$work/data
unset HETOPT_MODE HETOPT_PLAN_FILE HETOPT_STATS

fail() {
  echo "FAIL: $*"
  for f in "$work"/*.err; do echo "--- $f"; tail -n 15 "$f"; done
  exit 1
}
# Stdout with the numbers on VARY lines blanked.
norm() { if [[ -n $vary ]]; then sed -E "/$vary/s/[0-9]+(\.[0-9]+)?/N/g" "$1"; else cat "$1"; fi; }
# run NAME CMD...: runs CMD, stdout/stderr to NAME.out/.err; requires the native exit status and
# the native stdout.
run() {
  local name=$1 rc
  shift
  "$@" </dev/null >"$work/$name.out" 2>"$work/$name.err"
  rc=$?
  [[ $rc -eq $native_rc ]] || fail "$name: exit status $rc, natively $native_rc"
  diff <(norm "$work/native.out") <(norm "$work/$name.out") >"$work/$name.diff" ||
    { cat "$work/$name.diff"; fail "$name: stdout differs from the native run"; }
}
# stat_field RUN KEY: KEY of RUN's stats as JSON ($work/RUN.json), empty without them.
stat_field() { stats_get "$work/$1.json" "$2" 2>/dev/null; }

"$@" </dev/null >"$work/native.out" 2>"$work/native.err"
native_rc=$?
if [[ $silent -eq 1 ]]; then
  [[ $native_rc -eq 0 ]] || fail "the native run failed (exit $native_rc): its own check"
else
  [[ -s $work/native.out ]] || fail "the native run printed nothing"
fi

run trace "$hetopt" trace -o "$work/app.trace" -- "$@"
grep -q "profile stored" "$work/trace.err" || fail "hetopt trace stored no profile"
"$hetopt" show "$work/app.trace" >"$work/show.out" 2>"$work/show.err" || fail "hetopt show exited $?"
grep -q '^complete' "$work/show.out" || fail "the trace is not complete"
grep -q '^thread 0' "$work/show.out" || fail "hetopt show printed no thread"

run run "$hetopt" run --stats="$work/run.json" -- "$@"
n=$(grep -c "running unoptimized" "$work/run.err")
[[ -f $work/run.json ]] && n=$((n + 1))
[[ $n -eq 1 ]] || fail "hetopt run: expected it to say why it ran unoptimized or write its stats, got $n of these"

# Served blocks wait for the pool: whether it is ready in time is the machine's load, not the test's.
run forced env HETOPT_POOL_WAIT_MS=5000 "$hetopt" run --stats="$work/forced.json" --policy opencl --force -- "$@"
if [[ $optimized -eq 1 ]]; then
  redirected=$(stat_field forced redirected)
  [[ ${redirected:-0} -ge 1 ]] || fail "forced run: nothing served from the pool"
fi

# Every tracked site in the plan; the pool holds them all up to 256 MiB, larger ones fall back.
HETOPT_MODE=count HETOPT_REPORT_FILE="$work/count" LD_PRELOAD="$shim" "$@" </dev/null >/dev/null 2>&1
keys=$(awk '$1 == "site" { print $2 }' "$work/count")
[[ -n $keys ]] || fail "count mode saw no allocation site"
bytes=$(awk '$1 == "site" { s += $6 } END { print (s > 268435456 ? 268435456 : s) + 1048576 }' "$work/count")
# shellcheck disable=SC2086
write_plan "$work/plan" "$prog" opencl "$bytes" $keys || fail "$prog has no build id"
# Programs may allocate before any context: the pool is made in the shim's own, and waited for.
run planned env HETOPT_MODE=optimize HETOPT_PLAN_FILE="$work/plan" HETOPT_STATS_JSON="$work/planned.json" \
  HETOPT_POOL_CONTEXT=own HETOPT_POOL_WAIT_MS=5000 \
  LD_PRELOAD="$shim" OPENCL_LAYERS="$shim" "$@"
redirected=$(stat_field planned redirected)
[[ ${redirected:-0} -ge 1 ]] || fail "hand-written plan: nothing served from the pool"

echo "OK: $(basename "$prog") exit $native_rc, identical stdout natively, traced, run, forced, planned"
grep -h "running unoptimized" "$work/run.err" "$work/forced.err" "$work/planned.err"
for r in run forced planned; do [[ -f $work/$r.json ]] && echo "$r: $(stat_field $r pool); redirected $(stat_field $r redirected)"; done
