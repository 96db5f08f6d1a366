#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Before and after against plain runs: `hetopt trace` a program, then alternately
# `hetopt run --untouched` and `hetopt run --policy opencl --force` (on PoCL pinning never pays, so
# it is forced), twice each. An untouched run must print what the program prints natively and leave
# a private record (kind untouched, exit status, no plan); `hetopt report` must show both kinds and
# measure the saving from the pairs (computed here from the run ledger, where hetopt timed both
# kinds: the control runs' median times 1 - 1 / the paired median). --untouched must end as the
# program does: its exit status (exit3_app), its death signal (signal_app, recorded as such), a
# signal sent to hetopt forwarded to it; and it must leave the shim out of what it starts and say
# once when nothing can be recorded.
#   untouched.sh HETOPT EXIT3_APP SIGNAL_APP -- PROGRAM [ARGS...]
set -u
hetopt=$1 exit3=$2 sigapp=$3
shift 3
[[ ${1:-} == -- ]] && shift
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-untouched.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
unset HETOPT_MODE HETOPT_PLAN_FILE
ulimit -c 0
plans=$work/cache/hetopt/plans
fail() { echo "FAIL: $*"; for f in "$work"/*.err; do echo "--- $f"; tail -n 20 "$f"; done; exit 1; }
records() { grep -l "^kind $1\$" "$plans"/*.run 2>/dev/null | wc -l; }

"$@" >"$work/native.out" 2>/dev/null || fail "the program failed natively"
"$hetopt" trace -o "$work/app.trace" -- "$@" >/dev/null 2>"$work/trace.err" || fail "hetopt trace exited $?"
for round in 1 2; do
  "$hetopt" run --untouched -- "$@" >"$work/untouched$round.out" 2>"$work/untouched$round.err" ||
    fail "hetopt run --untouched exited $?"
  cmp -s "$work/native.out" "$work/untouched$round.out" || fail "an untouched run printed something else"
  ! grep -q '^hetopt' "$work/untouched$round.err" || fail "an untouched run said something: $(cat "$work/untouched$round.err")"
  [[ $(records untouched) == "$round" ]] || fail "untouched run $round left no record: $(ls "$plans")"
  "$hetopt" run --policy opencl --force -- "$@" >/dev/null 2>"$work/run$round.err" || fail "hetopt run exited $?"
  [[ $(records optimized) == "$round" ]] || fail "optimized run $round left no record"
done
for f in "$plans"/*.run; do [[ $(stat -c %a "$f") == 600 ]] || fail "$f is not private"; done

# The saving from the run ledger (hetopt timed both kinds), to check the report's against; each
# record names its ledger line.
python3 - "$plans" >"$work/expected" <<'PY' || fail "the records and the ledger do not hold what they should"
import glob, statistics, sys
seqs = {}
for path in glob.glob(sys.argv[1] + "/*.run"):
    lines = open(path).read().splitlines()
    rec = dict(l.split(" ", 1) for l in lines if " " in l)
    assert lines[0].startswith("hetopt-run 3 ") and lines[-1] == "end", lines
    if rec["kind"] == "untouched":
        assert rec["exit"] == "0" and "plan" not in rec and "transfers" not in rec, rec
    seqs[int(rec["seq"])] = rec["kind"]
kinds, walls = {}, {"untouched": [], "optimized": []}
ledger = open(glob.glob(sys.argv[1] + "/*.ledger")[0]).read().splitlines()
for line in ledger[1:]:
    w = line.split()
    if w[0] == "run":
        kinds[int(w[1])] = w[2]
    elif w[0] == "end":
        assert w[4] == "exit" and w[5] == "0", line
        walls["untouched" if kinds[int(w[1])] == "control" else "optimized"].append(int(w[3]))
assert [kinds[s] for s in sorted(kinds)] == ["control", "optimized"] * 2, kinds
assert {s: ("untouched" if k == "control" else k) for s, k in kinds.items()} == seqs, (kinds, seqs)
# The two pairs (each control run and the optimized run after it): the verdict's paired median,
# applied to the control runs' median.
ratio = statistics.median(c / o for c, o in zip(walls["untouched"], walls["optimized"]))
print(statistics.median(walls["untouched"]) * (1 - 1 / ratio))
PY

"$hetopt" report --plots "$work/plots" -- "$@" >"$work/report.out" 2>"$work/report.err" || fail "hetopt report exited $?"
cat "$work/report.out"
[[ ! -s $work/report.err ]] || fail "report warned: $(cat "$work/report.err")"
grep -q '^traced .*; runs recorded: 2 untouched, 2 optimized; all shown$' "$work/report.out" || fail "not both kinds counted"
[[ $(grep -cE '^[0-9-]{10} [0-9:]{8} .* control run \(no shim\); pair [12]\*$' "$work/report.out") == 2 ]] || fail "not two paired untouched rows"
[[ $(grep -cE '^[0-9-]{10} [0-9:]{8} .* [0-9]+/0/0; plan [0-9a-f]{8}, predicted .*; pair [12]\*: ' "$work/report.out") == 2 ]] ||
  fail "not two paired optimized rows"
grep -q 'upper bound' "$work/report.out" && fail "an upper bound although the runs are paired"
# The report's saving, as printed (rounded), against the ledger's pairs.
python3 - "$work/report.out" "$(cat "$work/expected")" <<'PY' || fail "the measured saving is not the ledger's paired estimate"
import re, sys
text, expected = open(sys.argv[1]).read(), float(sys.argv[2])
m = re.search(r"^measured saving:  (-?[0-9.]+) (ns|us|ms|s)( LOST)? per run .*\n +verdict, [0-9.]+x over its 2 pairs", text, re.M)
assert m, "no measured saving line"
scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[m[2]]
decimals = len(m[1].split(".")[1]) if "." in m[1] else 0
shown = float(m[1]) * scale * (-1 if m[3] else 1)
assert abs(shown - expected) <= 0.5 * scale * 10 ** -decimals + 1, (shown, expected)
PY
gp=$(ls "$work"/plots/*-report-breakdown.gp) || fail "no plot script"
grep -q 'traced, untouched and optimized runs' "$gp" || fail "plot title does not name the untouched runs"
[[ $(grep -c '^"untouched ' "${gp%.gp}.dat") == 2 && $(grep -c '^"optimized ' "${gp%.gp}.dat") == 2 ]] ||
  fail "the plot lacks the runs: $(cat "${gp%.gp}.dat")"
if command -v gnuplot >/dev/null; then
  for ext in svg png; do [[ -s ${gp%.gp}.$ext ]] || fail "no $ext plot"; done
fi

# Exit status: the program's own, recorded.
"$exit3" >"$work/exit3.native" 2>/dev/null
native=$?
[[ $native == 3 ]] || fail "exit3_app exited $native natively"
"$hetopt" trace -o "$work/exit3.trace" -- "$exit3" >/dev/null 2>"$work/exit3-trace.err"
"$hetopt" run --untouched -- "$exit3" >"$work/exit3.out" 2>"$work/exit3.err"
rc=$?
[[ $rc == 3 ]] || fail "hetopt run --untouched of exit3_app exited $rc, natively 3"
cmp -s "$work/exit3.native" "$work/exit3.out" || fail "exit3_app printed something else untouched"
grep -lq '^exit 3$' "$plans"/*.run || fail "no record of exit status 3"

# A death signal: the same as natively, and the run recorded as ended by it.
"$hetopt" trace -o "$work/sig.trace" -- "$sigapp" survive >/dev/null 2>"$work/sig-trace.err" || fail "tracing signal_app exited $?"
for mode in term abort; do
  "$sigapp" $mode >/dev/null 2>&1
  native=$?
  before=$(ls "$plans"/*.run | wc -l)
  "$hetopt" run --untouched -- "$sigapp" $mode >/dev/null 2>"$work/sig-$mode.err"
  rc=$?
  [[ $native -gt 128 && $rc == "$native" ]] || fail "signal_app $mode: untouched $rc, natively $native"
  [[ $(ls "$plans"/*.run | wc -l) == $((before + 1)) ]] || fail "a run ended by a signal was not recorded"
  grep -lq "^signal $((native - 128))\$" "$plans"/*.run || fail "no record of signal_app $mode's signal"
done
# Signals sent to hetopt (not by the terminal) reach the program.
for sig in TERM INT; do
  # Its own output file: the background job opens it after this shell goes on.
  "$hetopt" run --untouched -- "$sigapp" wait >"$work/wait-$sig.out" 2>"$work/wait-$sig.err" &
  pid=$!
  for ((i = 0; i < 600; ++i)); do grep -q '^waiting$' "$work/wait-$sig.out" && break; sleep 0.1; done
  grep -q '^waiting$' "$work/wait-$sig.out" || { kill -KILL $pid; fail "signal_app wait did not start"; }
  kill -$sig $pid
  wait $pid
  rc=$?
  [[ $rc == $((128 + $(kill -l $sig))) ]] || fail "SIG$sig to hetopt: exit $rc, not the program's death by it"
done

# No shim in what it starts (a program without a profile: said once, nothing recorded).
before=$(ls "$plans"/*.run | wc -l)
LD_PRELOAD=/nonexistent/libhetopt_shim.so OPENCL_LAYERS=/nonexistent/libhetopt_shim.so:/other/layer.so \
  "$hetopt" run --untouched -- sh -c 'echo "[$LD_PRELOAD] [$OPENCL_LAYERS]"; exit 4' >"$work/env.out" 2>"$work/env.err"
rc=$?
[[ $rc == 4 ]] || fail "a program without a profile: exit $rc, not its own 4"
[[ $(cat "$work/env.out") == "[] [/other/layer.so]" ]] || fail "the shim stayed in the environment: $(cat "$work/env.out")"
[[ $(grep -c 'not recorded' "$work/env.err") == 1 ]] || fail "not said once that nothing is recorded: $(cat "$work/env.err")"
[[ $(ls "$plans"/*.run | wc -l) == "$before" ]] || fail "a run without a profile was recorded"
"$hetopt" run --untouched --force -- "$@" >/dev/null 2>"$work/conflict.err"
[[ $? == 2 ]] || fail "--untouched with another option was not refused"
# An optimized run counts from hetopt's start, which hetopt run passes as HETOPT_RUN_STARTED
# (pid:steady ns): a start 2 s back, in this very process, is in the record's wall time; the same
# for another pid is not taken.
shim=$(dirname "$hetopt")/../lib/libhetopt_shim.so
plan=$(ls "$plans"/*.plan | head -n 1)
for who in self other; do
  rm -f "$plans"/*.run
  ( back=$(( $(python3 -c 'import time; print(time.monotonic_ns())') - 2000000000 ))
    pid=$BASHPID; [[ $who == other ]] && pid=1
    exec env LD_PRELOAD="$shim" HETOPT_MODE=optimize HETOPT_PLAN_FILE="$plan" HETOPT_RUN_STARTED="$pid:$back" "$@" ) \
    >/dev/null 2>"$work/started-$who.err" || fail "the program under the shim exited $?"
  wall=$(sed -n 's/^wall //p' "$plans"/*.run)
  [[ -n $wall ]] || fail "no run record ($who)"
  if [[ $who == self ]]; then ((wall >= 2000000000)) || fail "the run does not count from hetopt's start: wall $wall ns"
  else ((wall < 2000000000)) || fail "another process's start was taken: wall $wall ns"; fi
done
echo "OK: untouched runs recorded, measured against, and ended as natively"
