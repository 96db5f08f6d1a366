#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `hetopt report` does not contradict itself, on a program whose plan has several sites (on PoCL
# pinning never pays, so it is forced): `hetopt trace`, then `hetopt run --policy opencl --force`
# with --stats (optimized), three times without (a control run, pairing with it, then an optimized
# and a control run), and with --stats again (optimized, unpaired): two pairs, too few for a
# verdict, so that no smaller plan comes in whatever the timings.
#   - one plan identity: each run record names the plan its ledger line names, and the report's
#     rows, verdict lines and JSON name the same plan (the shim once hashed the plan with its sites
#     in another order than `hetopt run`);
#   - the measured saving is the verdict's: the same line for --last 1, 3 and 20, of the sign of
#     the verdict's paired median, over the pairs the JSON marks as the verdict's, and the header
#     counts the runs recorded and says which are shown;
#   - no predicted number under a "measured" heading, no "inf";
#   - the --stats runs say why they add no pair.
#   report_truth.sh HETOPT -- PROGRAM [ARGS...]
set -u
hetopt=$1
shift
[[ ${1:-} == -- ]] && shift
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-truth.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache XDG_DATA_HOME=$work/data
unset HETOPT_MODE HETOPT_PLAN_FILE HETOPT_VERIFY
plans=$work/cache/hetopt/plans
fail() { echo "FAIL: $*"; for f in "$work"/*.err "$work"/*.out; do [[ -f $f ]] && { echo "--- $f"; tail -n 40 "$f"; }; done; exit 1; }

"$hetopt" trace -o "$work/app.trace" -- "$@" >/dev/null 2>"$work/trace.err" || fail "hetopt trace exited $?"
stats() { local n=$1; shift; "$hetopt" run --policy opencl --force --stats -- "$@" >/dev/null 2>"$work/stats$n.err" || fail "hetopt run --stats exited $?"; }
stats 1 "$@"
for i in 1 2 3; do
  "$hetopt" run --policy opencl --force -- "$@" >/dev/null 2>"$work/run$i.err" || fail "hetopt run $i exited $?"
done
stats 2 "$@"
grep -qE '^hetopt: optimizing: [2-9] sites ' "$work/stats1.err" || fail "not a plan of several sites: $(head -n 1 "$work/stats1.err")"
grep -q '^hetopt: control run' "$work/run1.err" && grep -q '^hetopt: control run' "$work/run3.err" &&
  grep -q '^hetopt: optimizing: ' "$work/run2.err" || fail "the runs did not alternate"
grep -q -- '--stats runs are always optimized: the control runs that pairs need come from plain `hetopt run`s)$' "$work/stats1.err" ||
  fail "a --stats run does not say why its pairs do not move"

# Before the report moves them into the DB: each record names the plan its ledger line names.
python3 - "$plans" <<'PY' || fail "run records and the ledger name different plans"
import glob, sys
ledger = {}
for line in open(glob.glob(sys.argv[1] + "/*.ledger")[0]).read().splitlines()[1:]:
    w = line.split()
    if w[0] == "run":
        ledger[int(w[1])] = (w[2], w[3])
n = 0
for path in glob.glob(sys.argv[1] + "/*.run"):
    rec = dict(l.split(" ", 1) for l in open(path).read().splitlines() if " " in l)
    if rec["kind"] != "optimized":
        continue
    kind, plan = ledger[int(rec["seq"])]
    assert kind == "optimized" and rec["plan"].split()[0] == plan, (path, rec["plan"], ledger)
    n += 1
assert n == 3, n
PY

for last in 1 3 20; do
  "$hetopt" report --no-plots --last $last -- "$@" >"$work/last$last.out" 2>"$work/last$last.err" ||
    fail "hetopt report --last $last exited $?"
  [[ ! -s $work/last$last.err ]] || fail "report --last $last warned"
done
"$hetopt" report --json -- "$@" >"$work/report.json" 2>"$work/json.err" || fail "hetopt report --json exited $?"
# The measured saving's lines: its own and those under it.
measured() { awk '/^measured saving:/ { on = 1; print; next } on && /^ / { print; next } { on = 0 }' "$1"; }
[[ -n $(measured "$work/last1.out") ]] || fail "no measured saving"
for last in 3 20; do
  [[ $(measured "$work/last$last.out") == "$(measured "$work/last1.out")" ]] ||
    fail "the measured saving changes with --last: $(measured "$work/last1.out") / $(measured "$work/last$last.out")"
done
grep -q '^traced .*; runs recorded: 2 untouched, 3 optimized; shown: the newest 1 untouched and 1 optimized (--last 1)$' "$work/last1.out" ||
  fail "the header of --last 1 does not count what is recorded and what is shown"
grep -q '^traced .*; runs recorded: 2 untouched, 3 optimized; all shown$' "$work/last20.out" ||
  fail "the header of --last 20"

python3 - "$work/last20.out" "$work/report.json" <<'PY' || fail "the report contradicts itself"
import json, re, statistics, sys
text, j = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
v, m = j["verdict"], j["measured"]
plan = v["plan"]
# One plan: the rows', the verdict lines', the JSON's.
assert [p["plan"] for p in j["plans"]] == [plan], j["plans"]
assert m["plan"] == plan, (m, plan)
rows = set(re.findall(r"; plan ([0-9a-f]{8})", text))
assert rows == {plan[:8]}, (rows, plan)
assert re.search(r"^  plan %s  " % plan[:8], text, re.M), text
# The measured saving is the verdict's paired median over the pairs marked as its.
mine = [p for p in j["pairs"] if p["in_verdict"] and p["plan"] == plan]
assert len(mine) == m["pairs"] == v["window_pairs"] == 2 == len(j["pairs"]), (mine, m, v)
assert v["state"] == "exploring", v
ratio = statistics.median(p["control_ns"] / p["optimized_ns"] for p in mine)
assert abs(ratio - v["paired_median"]) < 1e-9 and abs(ratio - m["paired_median"]) < 1e-9, (ratio, v, m)
control = statistics.median(p["control_ns"] for p in mine)
assert abs(m["saving_ns"] - control * (1 - 1 / ratio)) < 1e3, (m, control, ratio)
assert (m["saving_ns"] < 0) == (v["paired_median"] < 1), (m, v)
line = re.search(r"^measured saving:  ([0-9.]+ [a-z]+)( LOST)? per run .* by plan %s:" % plan[:8], text, re.M)
assert line and bool(line[2]) == (m["saving_ns"] < 0), (line and line[0], m)
assert j["runs"] == {"untouched": 2, "optimized": 3, "untouched_shown": 2, "optimized_shown": 3}, j["runs"]
# The fields `hetopt report --help` documents.
assert j["format"] == 2, j["format"]
assert set(m) == {"plan", "pairs", "paired_median", "control_median_ns", "saving_ns", "from_utc", "to_utc",
                  "traced_less_optimized_ns"}, sorted(m)
assert all(set(p) == {"plan", "control_seq", "optimized_seq", "control_ns", "optimized_ns", "in_verdict"}
           for p in j["pairs"]), j["pairs"]
# The column headings: "measured" over the wall time only, the communication's source said.
lines = text.splitlines()
head = next(i for i, l in enumerate(lines) if l.startswith("run "))
above, names = lines[head - 1], lines[head]
wall, comm, cpu = names.index("wall"), names.index("communication"), names.index("cpu+sync")
assert above.count("measured") == 1 and above.index("measured") < wall + 4 <= above.index("measured") + 8 + 4, (above, names)
assert "predicted" in above[comm - 2:cpu], (above, names)
assert "measured" not in above[comm - 2:], above
assert not re.search(r"\binf\b", text), text
PY
cat "$work/last20.out"
echo "OK: one plan, one measured saving, whatever is shown"
