#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The closed loop of `hetopt run` on PoCL, with the fault layer playing a discrete GPU's costs
# (tests/fault_icd/fault_layer.cpp): pageable copies slow, so pinning gains, or registrations
# slow on the program's thread, so a plan loses; and a program that dies where hetopt pins.
#   gain     a plan that makes the program faster: runs alternate optimized / control, the verdict
#            `kept` comes after its pairs, then one run in ten is a control; report --json says so
#   loss     a plan that makes it slower: reverted after its pairs, the smaller plan tried and
#            reverted too, then every run untouched with one line saying why; report --json
#   failure  an optimized run killed by a signal reverts its plan at once; the next run is
#            untouched and says why
#   ledger   runs at the same time share the ledger; a corrupt ledger gives one warning and an
#            untouched run with the program's own status, and the next run starts a new one;
#            --verify=off keeps nothing
# Every run must print exactly what the program prints natively.
#   closed_loop.sh HETOPT FAULT_LAYER LOOP_WKR
set -u
hetopt=$1 layer=$2 app=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-loop.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
unset HETOPT_MODE HETOPT_PLAN_FILE HETOPT_VERIFY FAULTCL FAULTCL_PAGEABLE_US_PER_MIB FAULTCL_REGISTER_US_PER_MIB
export OPENCL_LAYERS=$layer
ulimit -c 0
args=(--size 4M --iters 5)
fail() { echo "FAIL: $*"; for f in "$work"/*.err; do echo "--- $f"; tail -n 5 "$f"; done; exit 1; }

"$app" "${args[@]}" >"$work/native.out" 2>/dev/null || fail "the program failed natively"

# A scenario's own DB and plans; the characterization is shared (copied).
scenario() {
  export HETOPT_DB=$work/$1.db XDG_CACHE_HOME=$work/$1.cache
  cp "$work/base.db" "$HETOPT_DB"
  "$hetopt" trace -o "$work/$1.trace" -- "$app" "${args[@]}" >/dev/null 2>"$work/$1-trace.err" ||
    fail "$1: hetopt trace exited $?"
}
# One `hetopt run` with the scenario's options; its stderr in $work/last.err, its kind echoed.
run() {
  "$hetopt" run "$@" -- "$app" "${args[@]}" >"$work/run.out" 2>"$work/last.err"
  local rc=$?
  cat "$work/last.err" >>"$work/all.err"
  [[ $rc == 0 ]] || { echo "exit$rc"; return; }
  cmp -s "$work/native.out" "$work/run.out" || fail "a run printed something else: $(cat "$work/run.out")"
  if grep -q '^hetopt: control run' "$work/last.err"; then echo control
  elif grep -q '^hetopt: not optimizing' "$work/last.err"; then echo untouched
  elif grep -q '^hetopt: .*optimizing: ' "$work/last.err"; then echo optimized
  else echo unknown; fi
}
verdict() { "$hetopt" report --json -- "$app" "${args[@]}" 2>>"$work/all.err" |
  python3 -c "import json,sys; v=json.load(sys.stdin)$1; print(v)"; }

HETOPT_DB=$work/base.db "$hetopt" characterize --quick --no-plots >/dev/null 2>"$work/char.err" ||
  fail "characterize exited $?"

# ---- gain: pageable copies cost 20 ms per MiB, the register plan pins the one block ----
export FAULTCL_PAGEABLE_US_PER_MIB=20000
scenario gain
kinds=()
for i in $(seq 8); do kinds+=("$(run --policy register)"); done
echo "gain: ${kinds[*]}"
[[ ${kinds[*]:0:6} == "optimized control optimized control optimized control" ]] ||
  fail "runs did not alternate while exploring: ${kinds[*]}"
grep -q '^hetopt: verdict on the plan of .*: kept, ' "$work/all.err" || fail "no line said the plan was kept"
[[ ${kinds[*]:6:2} == "optimized optimized" ]] || fail "after the verdict the runs are not optimized: ${kinds[*]}"
[[ $(verdict "['verdict']['state']") == kept ]] || fail "report --json: not kept: $(verdict "['verdict']")"
python3 - <<PY || fail "report --json: the verdict's numbers"
import json, subprocess
r = json.loads(subprocess.run(["$hetopt", "report", "--json", "--", "$app"], capture_output=True, text=True).stdout)
v = r["verdict"]
assert v["pairs"] == 3 and v["ci_low"] > 1 and v["paired_median"] > 2, v
assert set(v) >= {"state", "pairs", "paired_median", "ci_low", "ci_high"}, v
assert len(r["pairs"]) == 3 and all(p["control_ns"] > p["optimized_ns"] for p in r["pairs"]), r["pairs"]
PY
# Runs at the same time (make -j) share the ledger: every one of them ends in it.
for i in 1 2 3 4; do "$hetopt" run --policy register -- "$app" "${args[@]}" >"$work/par$i.out" 2>/dev/null & done
wait
for i in 1 2 3 4; do cmp -s "$work/native.out" "$work/par$i.out" || fail "a concurrent run printed something else"; done
ledger=$(ls "$XDG_CACHE_HOME"/hetopt/plans/*.ledger) || fail "no ledger"
[[ $(grep -c '^run ' "$ledger") == 12 && $(grep -c '^end ' "$ledger") == 12 ]] ||
  fail "concurrent runs are missing from the ledger: $(cat "$ledger")"
# A corrupt ledger: one warning, the program untouched with its own output, a new ledger after.
echo "frob" >>"$ledger"
kind=$(run --policy register)
[[ $(grep -c '^hetopt: the run ledger cannot be used' "$work/last.err") == 1 ]] || fail "no warning for the corrupt ledger"
[[ -e $ledger.corrupt ]] || fail "the corrupt ledger was not set aside"
[[ $(run --policy register) == optimized ]] || fail "a new ledger did not start"
# --verify=off: optimized, nothing timed or kept (no ledger line, no run record for the report).
before=$(wc -l <"$ledger")
records() { find "$XDG_CACHE_HOME/hetopt/plans" -name '*.run' | wc -l; }
records_before=$(records)
[[ $(run --policy register --verify=off) == optimized ]] || fail "--verify=off did not optimize"
[[ $(wc -l <"$ledger") == "$before" ]] || fail "--verify=off wrote to the ledger"
[[ $(records) == "$records_before" ]] || fail "--verify=off left a run record"
HETOPT_VERIFY=off "$hetopt" run --policy register -- "$app" "${args[@]}" >/dev/null 2>"$work/last.err"
grep -q 'control run' "$work/last.err" && fail "HETOPT_VERIFY=off made a control run"
[[ $(wc -l <"$ledger") == "$before" ]] || fail "HETOPT_VERIFY=off wrote to the ledger"
[[ $(records) == "$records_before" ]] || fail "HETOPT_VERIFY=off left a run record"
unset FAULTCL_PAGEABLE_US_PER_MIB

# ---- loss: registering costs 100 ms per MiB, and the naive variant does it on the program's thread ----
export FAULTCL_REGISTER_US_PER_MIB=100000
scenario loss
kinds=()
# Each plan loses within its first pairs; a busy machine may take a few more (at most 10 each).
for i in $(seq 42); do
  kinds+=("$(run --policy hybrid --no-pool)")
  [[ ${kinds[-1]} == untouched ]] && break
done
echo "loss: ${kinds[*]}"
grep -q '^hetopt: verdict on the plan of .*: reverted, .*the next runs try the smaller plan 1' "$work/all.err" ||
  fail "the plan's loss was not said"
grep -q '^hetopt: verdict on the smaller plan 1 of .*: reverted, .*from now on .* runs untouched' "$work/all.err" ||
  fail "the smaller plan's loss was not said"
[[ ${kinds[-1]} == untouched ]] || fail "a lost chain still optimizes: ${kinds[*]}"
grep -q 'every plan tried was slower or no faster' "$work/last.err" || fail "an untouched run did not say why"
[[ $(verdict "['verdict']['state']") == reverted ]] || fail "report --json: not reverted: $(verdict "['verdict']")"
[[ $(verdict "[\"plans\"].__len__()") == 2 ]] || fail "report --json: not two plans"
[[ $(run --policy hybrid --no-pool --stats) == untouched ]] || fail "--stats brought a lost plan back"
unset FAULTCL_REGISTER_US_PER_MIB

# ---- failure: the program dies where hetopt pins ----
export FAULTCL=host_buffer_crash
scenario failure
kind=$(run --policy register)
[[ $kind == exit137 ]] || fail "the optimized run was not killed ($kind)"
# Its record too, marked: the shim had no exit handler to write one.
grep -l '^kind optimized$' "$XDG_CACHE_HOME"/hetopt/plans/*.run | xargs grep -l '^signal 9$' |
  xargs grep -q '^note no-shim-record$' || fail "the killed run left no record of its own"
# ... with its plan's prediction, as the shim's would have (the report shows it).
killed=$(grep -l '^note no-shim-record$' "$XDG_CACHE_HOME"/hetopt/plans/*.run | head -n 1)
plan=$(ls "$XDG_CACHE_HOME"/hetopt/plans/*.plan | grep -v '\.v[0-9]*\.plan$' | head -n 1)
predicted=$(sed -n 's/^predicted //p' "$plan")
[[ $(sed -n 's/^plan [0-9a-f]* //p' "$killed") == "${predicted:-0}" ]] ||
  fail "the killed run's record predicts $(sed -n 's/^plan //p' "$killed"), its plan ${predicted:-0}"
grep -q '^hetopt: an optimized run of .* ended unlike the program does untouched: signal 9' "$work/last.err" ||
  fail "the failed run was not said"
[[ $(run --policy register) == untouched ]] || fail "the run after a failure was not untouched"
grep -q 'its plan was reverted after an optimized run (pid [0-9]*) ended with signal 9' "$work/last.err" ||
  fail "the untouched run did not say why"
[[ $(verdict "['verdict']['failed']") == True ]] || fail "report --json: not failed"
echo ok
