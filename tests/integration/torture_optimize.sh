#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# alloc_torture (every allocation function from several threads while one runs OpenCL, realloc
# chains, fork, fork+exec, posix_spawn, the C library's promises checked) in optimize mode with
# every one of its allocation sites in the plan: the pool serves and frees from many threads at
# once, realloc moves blocks in and out of it, and it runs out; then the same without a pool
# (pool-mode direct).
#   torture_optimize.sh SHIM ALLOC_TORTURE ITERATIONS
set -u
source "$(dirname "${BASH_SOURCE[0]}")/plan_lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/stats_lib.sh"
shim=$1 app=$2 iters=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-torture.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
unset HETOPT_MODE HETOPT_PLAN_FILE HETOPT_STATS HETOPT_STATS_JSON HETOPT_POOL_WAIT_MS

HETOPT_MODE=count HETOPT_REPORT_FILE="$work/count" LD_PRELOAD="$shim" "$app" "$iters" >/dev/null ||
  { echo "FAIL: count-mode run"; exit 1; }
keys=$(awk '$1 == "site" { print $2 }' "$work/count")
[[ -n $keys ]] || { echo "FAIL: count mode saw no allocation site"; exit 1; }
failed=0
# run NAME POOL_BYTES WAIT_MS EXPR: EXPR (a number from the stats as JSON, `s`: stats_check.py)
# must be >= 1.
run() {
  # shellcheck disable=SC2086
  write_plan "$work/$1.plan" "$app" opencl "$2" $keys || { echo "FAIL: no build id"; exit 1; }
  HETOPT_MODE=optimize HETOPT_PLAN_FILE="$work/$1.plan" HETOPT_STATS_JSON="$work/$1.json" HETOPT_POOL_WAIT_MS=$3 \
    LD_PRELOAD="$shim" "$app" "$iters" >"$work/$1.out" 2>"$work/$1.err"
  local rc=$? n
  # Every process writes its stats (the spawned and exec'd children run under the plan too; a
  # forked child's go to FILE.<pid>): the largest count of any of them.
  n=$(for f in $(stats_files "$work/$1.json"); do stats_eval "$f" "$4"; done | sort -n | tail -n 1)
  if [[ $rc -ne 0 || ${n:-0} -lt 1 ]]; then
    echo "FAIL: $1: exit $rc, '$4' = ${n:-none}"; failed=1
    # The program's own complaints (alloc_torture: ...), then hetopt's.
    tail -n 20 "$work/$1.err"
  else
    echo "ok: $1: $(stats_get "$work/$1.json" pool 2>/dev/null); $4 $n"
  fi
}
run large_pool $((64 << 20)) 5000 s.redirected
run small_pool $((256 << 10)) 5000 s.fallback_pool_full
run no_wait $((64 << 20)) 0 s.redirected
# The naive variant: every block made and released by the policy, on the program's threads.
PLAN_MODE=direct run direct $((64 << 20)) 5000 s.redirected
# A profile of no block alive at once at any site (the limit is then the check's slack of 16
# blocks): deactivated mid-run, with blocks handed out before and still in use, reallocated and
# freed afterwards (alloc_torture checks every one).
for mode in pool direct; do
  PLAN_MODE=$mode PLAN_PROFILE="100000 1 1073741824 1 1073741824 0" run diverged_$mode $((64 << 20)) \
    5000 "int(re.match(r'([0-9]+) redirected blocks alive at once', s.get('deactivated', '0 redirected blocks alive at once')).group(1))"
done
exit $failed
