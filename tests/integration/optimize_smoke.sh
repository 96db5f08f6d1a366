#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Optimize mode end to end without the analyzer: finds the application's allocation sites that
# allocated at least SIZE bytes in all with count mode, writes a plan naming them (pool policy POLICY), runs the program in
# optimize mode and requires identical stdout to the native run, the sites redirected to the pool
# and the transfers from them counted as pinned.
#   optimize_smoke.sh SHIM POLICY SIZE -- PROGRAM [ARGS...]
# With TIMES=N it also prints the median elapsed_ms of N native and N optimized runs. PLAN_MODE and
# PLAN_PROFILE, PLAN_STRATEGY and PLAN_WAIT go to write_plan (plan_lib.sh): PLAN_MODE=direct tests
# the pool-less variant, PLAN_STRATEGY=register in-place registration of heap blocks.
# CHECK (a Python expression over the stats as JSON, `s`: stats_check.py; default s.conformant)
# must hold; EXIT is the exit status of a successful run (default 0). Blocks allocated once the program's context exists
# wait for the pool (HETOPT_POOL_WAIT_MS=5000): a loaded machine must not decide what is served.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/plan_lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/stats_lib.sh"
shim=$1 policy=$2 size=$3
shift 3
[[ ${1:-} == -- ]] && shift
prog=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-opt.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT

# EXIT: the program's exit status when it succeeds (default 0).
HETOPT_MODE=count HETOPT_REPORT_FILE="$work/count" LD_PRELOAD="$shim" "$@" >/dev/null 2>&1
[[ $? == "${EXIT:-0}" ]] || { echo "FAIL: count-mode run failed"; exit 1; }
keys=$(awk -v s="$size" '$1 == "site" && $6 >= s { print $2 }' "$work/count")
[[ -n $keys ]] || { echo "FAIL: no allocation site of $size bytes or more"; cat "$work/count"; exit 1; }
# shellcheck disable=SC2086
write_plan "$work/plan" "$prog" "$policy" $((size * 4 + (1 << 20))) $keys ||
  { echo "FAIL: $prog has no build id"; exit 1; }

"$@" >"$work/native.out" 2>"$work/native.err"
[[ $? == "${EXIT:-0}" ]] || { echo "FAIL: native run"; cat "$work/native.err"; exit 1; }
HETOPT_MODE=optimize HETOPT_PLAN_FILE="$work/plan" HETOPT_STATS_JSON="$work/stats.json" HETOPT_POOL_WAIT_MS=5000 \
  LD_PRELOAD="$shim" "$@" >"$work/opt.out" 2>"$work/opt.err"
[[ $? == "${EXIT:-0}" ]] || { echo "FAIL: optimized run"; cat "$work/opt.err"; exit 1; }
cmp -s "$work/native.out" "$work/opt.out" ||
  { echo "FAIL: stdout differs"; diff "$work/native.out" "$work/opt.out"; exit 1; }
[[ -f $work/stats.json ]] || { echo "FAIL: no stats written"; cat "$work/opt.err"; exit 1; }
stats_expect "$work/stats.json" "${CHECK:-s.conformant}" || { echo "FAIL: stats do not hold '${CHECK:-s.conformant}'"; exit 1; }
summary=$(stats_get "$work/stats.json" pool)
# Deactivated: identical results are the point; what it redirected before is the test's business.
if stats_expect "$work/stats.json" 'not s.conformant' 2>/dev/null; then echo "OK: $summary; deactivated"; exit 0; fi
pinned=transfers_pinned_pool
[[ ${PLAN_MODE:-} == direct ]] && pinned=transfers_pinned_direct
# Served from pinned memory; blocks registered in place (register strategy, or before the pool was
# ready) count too. Transfers from pinned memory carry their bytes (rectangular ones too).
stats_expect "$work/stats.json" 's.redirected >= 1' \
  "s.$pinned.h2d + s.get('registered_blocks', {}).get('h2d', 0) >= 1" \
  "s.$pinned.h2d == 0 or s.$pinned.h2d_bytes > 0" ||
  { echo "FAIL: nothing served from pinned memory, or transfers without their bytes"; cat "$work/plan"; exit 1; }
if [[ ${PLAN_MODE:-} == direct ]]; then
  stats_expect "$work/stats.json" 's.direct' || { echo "FAIL: not the direct mode"; exit 1; }
fi
echo "OK: $summary; redirected $(stats_get "$work/stats.json" redirected)"

if [[ -n ${TIMES:-} ]]; then
  med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
  for ((i = 0; i < TIMES; ++i)); do
    "$@" 2>&1 >/dev/null | sed -n 's/elapsed_ms=//p' >>"$work/t.native"
    HETOPT_MODE=optimize HETOPT_PLAN_FILE="$work/plan" LD_PRELOAD="$shim" "$@" 2>&1 >/dev/null |
      sed -n 's/elapsed_ms=//p' >>"$work/t.opt"
  done
  n=$(med <"$work/t.native") o=$(med <"$work/t.opt")
  echo "elapsed_ms median of $TIMES: native $n optimized $o speedup $(awk -v n="$n" -v o="$o" 'BEGIN { printf "%.2f", n / o }')"
fi
