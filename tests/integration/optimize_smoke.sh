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
# EXPECT (an extended regex, default "conformant") must match the stats (stats_records); EXIT is the
# exit status of a successful run (default 0). Blocks allocated once the program's context exists
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
HETOPT_MODE=optimize HETOPT_PLAN_FILE="$work/plan" HETOPT_STATS=1 HETOPT_POOL_WAIT_MS=5000 \
  LD_PRELOAD="$shim" "$@" >"$work/opt.out" 2>"$work/opt.err"
[[ $? == "${EXIT:-0}" ]] || { echo "FAIL: optimized run"; cat "$work/opt.err"; exit 1; }
cmp -s "$work/native.out" "$work/opt.out" ||
  { echo "FAIL: stdout differs"; diff "$work/native.out" "$work/opt.out"; exit 1; }
stats=$(stats_records "$work/opt.err" | tr '\n' ' ')
stats_lines_short "$work/opt.err" || { echo "FAIL: a stats line holds more than one fact"; cat "$work/opt.err"; exit 1; }
redirected=$(sed -n 's/.*redirected \([0-9]*\) allocations.*/\1/p' <<<"$stats")
pinned=$(sed -n 's/.*pinned \(pool\|direct\) memory: \([0-9]*\) h2d.*/\2/p' <<<"$stats")
# Blocks registered in place (register strategy, or before the pool was ready) count too.
inplace=$(sed -n 's/.*transfers from registered blocks: \([0-9]*\) h2d.*/\1/p' <<<"$stats")
pinned=$((${pinned:-0} + ${inplace:-0}))
# Transfers from pinned memory carry their bytes (rectangular ones too).
if grep -Eq 'pinned (pool|direct) memory: [1-9][0-9]* h2d \(0\.0 MiB\)' <<<"$stats"; then
  echo "FAIL: transfers from pinned memory counted without their bytes"; echo "$stats"; exit 1
fi
grep -Eq -- "${EXPECT:-; conformant;}" <<<"$stats" ||
  { echo "FAIL: stats do not match '${EXPECT:-; conformant;}'"; echo "$stats"; exit 1; }
# Deactivated: identical results are the point; what it redirected before is the test's business.
if [[ ${EXPECT:-} == *deactivated* ]]; then echo "OK: $stats"; exit 0; fi
if [[ ${redirected:-0} -lt 1 || ${pinned:-0} -lt 1 ]]; then
  echo "FAIL: nothing served from pinned memory"; cat "$work/plan" "$work/opt.err"; exit 1
fi
if [[ ${PLAN_MODE:-} == direct ]] && ! grep -q 'direct .* allocation (no pool)' <<<"$stats"; then
  echo "FAIL: not the direct mode"; exit 1
fi
echo "OK: $stats"

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
