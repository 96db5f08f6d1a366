#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Before and after for one program: `hetopt trace`, then `hetopt run --policy opencl --force` three
# times (on PoCL pinning never pays, so it is forced), the first with --stats and --stats=FILE.json;
# under the closed loop the second is a control run. Each run must leave a private run record
# beside its plan; the JSON must parse, hold the text stats' lines and agree with the record; `hetopt report`
# must move the records into the DB, show the traced run, the control run and both optimized runs
# with their transfers, plot them (SVG and PNG, titled with device and date), and warn once about a
# corrupt record without failing.
#   report.sh HETOPT -- PROGRAM [ARGS...]
set -u
hetopt=$1
shift
[[ ${1:-} == -- ]] && shift
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-report.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
plans=$work/cache/hetopt/plans
fail() { echo "FAIL: $*"; for f in "$work"/*.err; do echo "--- $f"; tail -n 20 "$f"; done; exit 1; }

"$hetopt" trace -o "$work/app.trace" -- "$@" >/dev/null 2>"$work/trace.err" || fail "hetopt trace exited $?"
# Before any run the plot has the traced run alone, and its title says so.
"$hetopt" report --plots "$work/plots0" -- "$@" >/dev/null 2>"$work/report0.err" || fail "hetopt report exited $?"
# title GP: the plot's title as one line (a long one is broken into lines for the canvas).
title() { sed -n 's/^set title "\(.*\)" noenhanced$/\1/p' "$1" | sed 's/\\n/ /g'; }
grep -qE ".* on .*, $(date -u +%Y-%m-%d): the traced run$" <<<"$(title "$work"/plots0/*-report-breakdown.gp)" ||
  fail "the title of a plot of the traced run alone: $(title "$work"/plots0/*-report-breakdown.gp)"
"$hetopt" run --policy opencl --force --stats --stats="$work/stats.json" -- "$@" >/dev/null 2>"$work/run1.err" ||
  fail "hetopt run exited $?"
records=("$plans"/*.run)
[[ ${#records[@]} == 1 && -f ${records[0]} ]] || fail "no run record beside the plan: $(ls "$plans")"
[[ $(stat -c %a "${records[0]}") == 600 ]] || fail "the run record is not private"
[[ $(stat -c %a "$work/stats.json") == 600 ]] || fail "the JSON stats are not private"
grep -q '^end$' "${records[0]}" || fail "the run record is not whole"

# The JSON: parses, and holds the --stats lines as printed (what each says is a unit test's:
# OptimizeStats); its counts agree with the run record.
sed -n 's/^hetopt: stats: //p' "$work/run1.err" >"$work/stats.txt"
python3 - "$work/stats.json" "$work/stats.txt" "${records[0]}" <<'PY' || fail "JSON stats differ from the text or the record"
import json, sys
j = json.load(open(sys.argv[1]))
lines = open(sys.argv[2]).read().splitlines()
assert j["lines"] == lines, (j["lines"], lines)
pinned = j["transfers_pinned_pool"]["h2d"] + j["transfers_pinned_pool"]["d2h"]
assert pinned > 0 and j["run"]["pinned"] == pinned, j["run"]
assert sum(s["pinned"] for s in j["sites"]) == pinned, j["sites"]
rec = dict(l.split(" ", 1) for l in open(sys.argv[3]).read().splitlines() if " " in l)
assert rec["transfers"].split()[0] == str(pinned), rec
assert rec["plan"].split()[0] == j["plan"], (rec, j["plan"])
PY
"$hetopt" run --policy opencl --force -- "$@" >/dev/null 2>"$work/run2.err" || fail "second hetopt run exited $?"
grep -q '^hetopt: control run' "$work/run2.err" || fail "the second run was not a control run"
"$hetopt" run --policy opencl --force -- "$@" >/dev/null 2>"$work/run3.err" || fail "third hetopt run exited $?"
good=("$plans"/*.run)
[[ ${#good[@]} == 3 ]] || fail "the runs left $(ls "$plans"/*.run | wc -l) records, not 3"
# A corrupt record (cut before its end) beside them: one warning, no failure.
base=$(basename "${good[0]}")
corrupt=$plans/${base%%.*}.1-1.run
head -n 3 "${good[0]}" >"$corrupt"
chmod 600 "$corrupt"

"$hetopt" report --plots "$work/plots" -- "$@" >"$work/report.out" 2>"$work/report.err" ||
  fail "hetopt report exited $?"
cat "$work/report.out"
[[ $(grep -c "ignoring a run record" "$work/report.err") == 1 ]] || fail "no single warning for the corrupt record"
[[ $(grep -c . "$work/report.err") == 1 ]] || fail "unexpected messages: $(cat "$work/report.err")"
grep -q '^traced ' "$work/report.out" || fail "no traced row"
[[ $(grep -cE '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} .* [0-9]+/0/0; plan [0-9a-f]{8}, predicted' "$work/report.out") == 2 ]] ||
  fail "not the two optimized runs with their transfers"
[[ $(grep -cE '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} .* control run \(no shim\); pair 1\*$' "$work/report.out") == 1 ]] ||
  fail "not the control run, in the pair measured"
# The --stats run and the control run after it are the one pair; the third run waits for its own.
grep -qE '; pair 1\*: [0-9.]+ (ns|us|ms|s)( LOST| saved)$' "$work/report.out" || fail "the optimized run of the pair"
grep -qE '; unpaired$' "$work/report.out" || fail "the unpaired optimized run"
grep -qE '^  plan [0-9a-f]{8}  exploring +1 pair so far, 2 optimized runs' "$work/report.out" ||
  fail "no verdict line for the plan"
# The rows name the plan the verdict names.
plan=$(sed -nE 's/^  plan ([0-9a-f]{8})  .*/\1/p' "$work/report.out")
[[ $(grep -oE '; plan [0-9a-f]{8}' "$work/report.out" | sort -u) == "; plan $plan" ]] ||
  fail "rows and verdict name different plans: $(grep -oE 'plan [0-9a-f]{8}' "$work/report.out" | sort | uniq -c)"
grep -q '^predicted saving: ' "$work/report.out" || fail "no predicted saving"
grep -qE "^measured saving:  [0-9.]+ (ns|us|ms|s)( LOST)? per run \([0-9.]+%\) by plan $plan: the paired median of its$" "$work/report.out" ||
  fail "no measured saving of the plan"
grep -qE '^ +verdict, [0-9.]+x over its 1 pair \(\* above: runs of ' "$work/report.out" || fail "not measured over the one pair"
grep -q '; too few pairs for a verdict yet$' "$work/report.out" || fail "one pair not said to be too few"
compgen -G "$plans/*.run" >/dev/null && fail "records left beside the plan: $(ls "$plans")"
gp=$(ls "$work"/plots/*-report-breakdown.gp) || fail "no plot script"
grep -qE ".* on .*, $(date -u +%Y-%m-%d): traced, untouched and optimized runs$" <<<"$(title "$gp")" ||
  fail "plot title lacks device, date or the runs drawn: $(title "$gp")"
if command -v gnuplot >/dev/null; then
  for ext in svg png; do [[ -s ${gp%.gp}.$ext ]] || fail "no $ext plot"; done
fi
# The runs are in the DB now: a second report shows them again, quietly.
"$hetopt" report --no-plot -- "$@" >"$work/again.out" 2>"$work/again.err" || fail "second report exited $?"
[[ ! -s $work/again.err ]] || fail "second report warned: $(cat "$work/again.err")"
[[ $(grep -cE '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} ' "$work/again.out") == 3 ]] || fail "runs not kept in the DB"
echo "OK: run records, JSON stats and report"
