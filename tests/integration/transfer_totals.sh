#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Optimize mode counts the transfers the trace counts. One program is traced (`hetopt trace`; the
# trace summary read as JSON through `hetopt show --json`), then run optimized, forced, with a pool
# plan (`--policy opencl`) and with every site registered in place (`--policy register`), and with
# a hand-written register plan whose transfers may wait for pinning (plan_lib.sh, PLAN_WAIT), each
# with --stats=FILE.json. In every run the JSON's `run` (pinned + pageable + other, per direction,
# and their bytes) and the run record's `transfers` must equal the trace summary's, whatever was
# pinned; under the hand plan every transfer, host-pointer buffer and image creations included,
# must be counted pinned. Prints the numbers (docs/results.md quotes them).
#   transfer_totals.sh HETOPT SHIM SIZE -- PROGRAM [ARGS...]
# SIZE: the hand plan names every allocation site of at least SIZE bytes (count mode finds them).
set -u
shopt -s nullglob
source "$(dirname "${BASH_SOURCE[0]}")/plan_lib.sh"
hetopt=$1 shim=$2 size=$3
shift 3
[[ ${1:-} == -- ]] && shift
prog=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-totals.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
plans=$work/cache/hetopt/plans
fail() { echo "FAIL: $*"; for f in "$work"/*.err; do echo "--- $f"; tail -n 20 "$f"; done; exit 1; }

"$@" >"$work/native.out" 2>"$work/native.err" || fail "native run exited $?"
"$hetopt" trace -o "$work/app.trace" -- "$@" >/dev/null 2>"$work/trace.err" || fail "hetopt trace exited $?"
"$hetopt" show --json "$work/app.trace" >"$work/trace.json" 2>"$work/show.err" || fail "hetopt show exited $?"

# check NAME STATS_JSON RECORD ALL_PINNED: the run's counts against the trace summary's.
check() {
  python3 - "$work/trace.json" "$2" "$3" "$1" "$4" <<'PY'
import json, sys
trace, stats, record, name, all_pinned = sys.argv[1:]
s = json.load(open(trace))["summary"]
run = json.load(open(stats))["run"]
want = {"h2d": s["h2d_transfers"], "h2d_bytes": s["h2d_bytes"],
        "d2h": s["d2h_transfers"], "d2h_bytes": s["d2h_bytes"]}
total, total_bytes = want["h2d"] + want["d2h"], want["h2d_bytes"] + want["d2h_bytes"]
counted = run["pinned"] + run["pageable"] + run["other"]
counted_bytes = run["pinned_bytes"] + run["pageable_bytes"] + run["other_bytes"]
print("%s: trace %d h2d (%d B) + %d d2h (%d B); run %d pinned + %d pageable + %d other = %d (%d B)" % (
    name, want["h2d"], want["h2d_bytes"], want["d2h"], want["d2h_bytes"], run["pinned"],
    run["pageable"], run["other"], counted, counted_bytes))
bad = []
if (counted, counted_bytes) != (total, total_bytes):
    bad.append("run counts %d transfers (%d B), the trace %d (%d B)" % (counted, counted_bytes, total, total_bytes))
for key, value in want.items():
    if run.get(key) != value:
        bad.append("run %s is %s, the trace's %d" % (key, run.get(key), value))
fields = [l.split()[1:] for l in open(record) if l.startswith("transfers ")]
if len(fields) != 1 or len(fields[0]) != 6:
    bad.append("the run record has no transfers line")
else:
    n = [int(x) for x in fields[0]]
    if (n[0] + n[2] + n[4], n[1] + n[3] + n[5]) != (total, total_bytes):
        bad.append("the run record counts %d transfers (%d B)" % (n[0] + n[2] + n[4], n[1] + n[3] + n[5]))
if all_pinned == "1" and (run["pinned"], run["pinned_bytes"]) != (total, total_bytes):
    bad.append("not every transfer was counted pinned")
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
}

# checked NAME ALL_PINNED COMMAND...: runs COMMAND, an optimized run writing $work/NAME.json, and
# checks its stdout against the native run's, its JSON and its one run record against the trace.
failed=0
checked() {
  local name=$1 all_pinned=$2 records
  shift 2
  rm -f "$plans"/*.run "$work"/hand/*.run
  "$@" >"$work/$name.out" 2>"$work/$name.err" || fail "$name: the optimized run exited $?"
  cmp -s "$work/native.out" "$work/$name.out" || fail "$name: stdout differs from the native run's"
  records=("$plans"/*.run "$work"/hand/*.run)
  [[ ${#records[@]} == 1 ]] || fail "$name: not one run record: ${records[*]}"
  check "$name" "$work/$name.json" "${records[0]}" "$all_pinned" || failed=1
}

checked pool 0 "$hetopt" run --force --policy opencl --stats="$work/pool.json" -- "$@"
checked register 0 "$hetopt" run --force --policy register --stats="$work/register.json" -- "$@"
# Every site of SIZE bytes or more registered in place, transfers allowed to wait for it (and to
# register a block themselves): what is counted pinned is deterministic.
HETOPT_MODE=count HETOPT_REPORT_FILE="$work/count" LD_PRELOAD="$shim" "$@" >/dev/null 2>&1 ||
  fail "count-mode run exited $?"
keys=$(awk -v s="$size" '$1 == "site" && $6 >= s { print $2 }' "$work/count")
[[ -n $keys ]] || fail "no allocation site of $size bytes or more"
mkdir -m 700 "$work/hand"
# shellcheck disable=SC2086
PLAN_STRATEGY=register PLAN_WAIT=1000000000 write_plan "$work/hand/app.plan" "$prog" none 0 $keys ||
  fail "$prog has no build id"
checked hand 1 env HETOPT_MODE=optimize HETOPT_PLAN_FILE="$work/hand/app.plan" \
  HETOPT_STATS_JSON="$work/hand.json" LD_PRELOAD="$shim" "$@"
[[ $failed == 0 ]] || fail "transfer counts differ from the trace's"
echo "OK: every run counted the trace's transfers"
