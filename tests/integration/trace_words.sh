#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What `hetopt trace`, `show` and `analyze` say of runs and traces a user meets every day:
#  - a program that made no OpenCL call (a plain command, a shell that exits through _exit) gets one
#    line saying there is nothing to optimize, its own exit status, and no profile in the DB; a
#    shell that exits 0 is not said to have ended abnormally; `hetopt run` and `hetopt report` of
#    it then say it was traced and made none, instead of asking for a trace;
#  - a traced run that fails keeps the stored profile of one that succeeded, saying so;
#  - the processes a program starts that make no OpenCL call are one line, their traces not kept;
#  - a program that cannot be run gets its error alone;
#  - a torn trace is refused with a pointer to --salvage, and show and analyze salvage alike;
#  - show says what a trace without its end record holds and why it may lack it (a killed
#    program's), and calls the trace of a shell that exited 0 complete.
#   trace_words.sh HETOPT PROGRAM (an OpenCL program that takes --size and --iters)
set -u
hetopt=$1 app=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-words.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
failed=0
fail() {
  echo "FAIL: $1"
  [[ -n ${2:-} && -f $2 ]] && sed 's/^/    /' "$2"
  failed=1
}

# A good profile first (and a DB to look into).
"$hetopt" trace -o "$work/good.trace" -- "$app" --size 256K --iters 5 >/dev/null \
  2>"$work/good.err" || fail "tracing the program exited $?" "$work/good.err"
grep -q 'profile stored' "$work/good.err" || fail "no profile stored" "$work/good.err"
"$hetopt" analyze --profile "$app" >"$work/good.report" 2>&1 ||
  fail "no stored profile" "$work/good.report"
good=$(grep -m 1 -o 'h2d [0-9]* x' "$work/good.report")
[[ $good == "h2d 5 x" ]] ||
  fail "the stored profile shows '$good', not 5 writes" "$work/good.report"

# No OpenCL call: one line, the program's status, no profile.
n=0
for cmd in /bin/true "sh -c 'exit 0'" "sh -c 'exit 3'"; do
  n=$((n + 1))
  want=0
  [[ $cmd == *"exit 3"* ]] && want=3
  eval "\"\$hetopt\" trace -o \"\$work/none$n.trace\" -- $cmd" >/dev/null 2>"$work/none$n.err"
  rc=$?
  [[ $rc == "$want" ]] || fail "$cmd: exit $rc, want $want" "$work/none$n.err"
  said=$(grep -c 'made no OpenCL calls: nothing to optimize, no profile stored$' "$work/none$n.err")
  [[ $said == 1 ]] ||
    fail "$cmd: not said once that there is nothing to optimize" "$work/none$n.err"
  grep -q 'profile stored in\|hetopt analysis of' "$work/none$n.err" &&
    fail "$cmd: analysed or stored a profile" "$work/none$n.err"
  grep -q '^hetopt: trace .* complete)$' "$work/none$n.err" ||
    fail "$cmd: the trace of a program that exited is not complete" "$work/none$n.err"
  grep -qi 'incomplete\|not exit normally\|killed' "$work/none$n.err" &&
    fail "$cmd: a program that exited is said to have ended abnormally" "$work/none$n.err"
done
"$hetopt" run -- /bin/true >/dev/null 2>"$work/none-run.err" || fail "run /bin/true exited $?"
grep -q '^hetopt: /.*/true was traced (.*): it made no OpenCL calls' "$work/none-run.err" ||
  fail "run of a program traced without OpenCL calls does not say so" "$work/none-run.err"
"$hetopt" report --no-plots -- /bin/true >/dev/null 2>"$work/none-report.err"
rc=$?
[[ $rc == 1 ]] && grep -q '^hetopt: report: /.*/true was traced (.*): it made no OpenCL calls' \
  "$work/none-report.err" ||
  fail "report of a program traced without OpenCL calls (exit $rc)" "$work/none-report.err"
for program in /bin/true /bin/sh; do
  "$hetopt" analyze --profile "$program" >"$work/none.report" 2>&1
  rc=$?
  [[ $rc == 1 ]] && grep -q 'no profile for' "$work/none.report" ||
    fail "$program: a profile was stored (analyze --profile exit $rc)" "$work/none.report"
done

# A failed run keeps the good profile, in one line; the program's status comes back.
"$hetopt" trace -o "$work/failed.trace" -- sh -c '"$0" --size 256K --iters 2 && exit 2' "$app" \
  >/dev/null 2>"$work/failed.err"
rc=$?
[[ $rc == 2 ]] || fail "the failed run: exit $rc, want 2" "$work/failed.err"
kept='^hetopt: profile not stored: the traced run exited with status 2; kept the stored one, '
said=$(grep -c "$kept"'analysed .* from a complete trace' "$work/failed.err")
[[ $said == 1 ]] ||
  fail "the failed run: not said once that the stored profile was kept" "$work/failed.err"
"$hetopt" analyze --profile "$app" >"$work/kept.report" 2>&1
kept=$(grep -m 1 -o 'h2d [0-9]* x' "$work/kept.report")
[[ $kept == "h2d 5 x" ]] || fail "the failed run replaced the profile ('$kept')" "$work/kept.report"

# Helpers that make no OpenCL call: one line, no trace kept; the process with calls keeps its own.
"$hetopt" trace -o "$work/quiet.trace" -- sh -c '/bin/true; /bin/true; "$0" --size 256K --iters 2; :' \
  "$app" >/dev/null 2>"$work/quiet.err" || fail "tracing a shell with helpers exited $?" "$work/quiet.err"
grep -q '^hetopt: 2 processes it started made no OpenCL calls (their traces are not kept)$' \
  "$work/quiet.err" || fail "the helpers are not one line" "$work/quiet.err"
grep -q 'child trace .* 0 OpenCL calls' "$work/quiet.err" && fail "a line per helper" "$work/quiet.err"
kept=$(find "$work" -name 'quiet.trace.*' ! -name '*.programs' | wc -l)
[[ $kept == 1 ]] || fail "$kept child traces kept, not the program's alone" "$work/quiet.err"

# A program that cannot be run: its error alone, exit 127.
"$hetopt" trace -o "$work/missing.trace" -- "$work/nonexistent" >/dev/null 2>"$work/missing.err"
rc=$?
[[ $rc == 127 ]] || fail "a missing program: exit $rc, want 127" "$work/missing.err"
want="hetopt: cannot run $work/nonexistent: No such file or directory"
[[ $(cat "$work/missing.err") == "$want" ]] ||
  fail "a missing program: not its error alone" "$work/missing.err"

# A trace torn in its last chunk: refused, pointing at --salvage; salvaging, show and analyze agree
# (nothing precedes the damage there). With damage after its records, both salvage them.
size=$(stat -c %s "$work/good.trace")
head -c $((size - 40)) "$work/good.trace" >"$work/torn.trace"
{ cat "$work/good.trace"; printf 'not a chunk, not a chunk, not a chunk\n'; } >"$work/tail.trace"
for cmd in show analyze; do
  opts=()
  [[ $cmd == analyze ]] && opts=(--no-store)
  "$hetopt" $cmd "${opts[@]}" "$work/torn.trace" >/dev/null 2>"$work/$cmd.torn.err"
  rc=$?
  [[ $rc == 2 ]] &&
    grep -q 'truncated trace: .*--salvage reads what precedes it' "$work/$cmd.torn.err" ||
    fail "$cmd of a torn trace: exit $rc, no pointer to --salvage" "$work/$cmd.torn.err"
  "$hetopt" $cmd "${opts[@]}" --salvage "$work/torn.trace" >/dev/null 2>"$work/$cmd.salvage.err"
  rc=$?
  said=$(grep -o 'nothing to salvage\|salvaged what precedes the damage' "$work/$cmd.salvage.err")
  echo "$rc $said" >"$work/$cmd.salvage.said"
  "$hetopt" $cmd "${opts[@]}" --salvage "$work/tail.trace" >/dev/null 2>"$work/$cmd.tail.err"
  rc=$?
  [[ $rc == 0 ]] && grep -q 'salvaged what precedes the damage: corrupt trace: no chunk marker' \
    "$work/$cmd.tail.err" || fail "$cmd --salvage of a damaged tail: exit $rc" "$work/$cmd.tail.err"
done
cmp -s "$work/show.salvage.said" "$work/analyze.salvage.said" ||
  fail "show --salvage and analyze --salvage disagree: $(cat "$work"/*.salvage.said | xargs)"

# show: a shell that exited 0 left a complete trace; a killed program's trace has no end record.
"$hetopt" show "$work/none2.trace" >"$work/none2.show" 2>&1
grep -q '^complete, ' "$work/none2.show" ||
  fail "show of sh -c 'exit 0': not complete" "$work/none2.show"
"$hetopt" trace -o "$work/killed.trace" -- "$app" --size 4K --iters 100000000 >/dev/null \
  2>"$work/killed.err" &
tracer=$!
sleep 2.5  # past the first checkpoint (about a second)
program=$(cat /proc/$tracer/task/*/children)
[[ -n $program ]] && kill -KILL $program
wait $tracer
"$hetopt" show "$work/killed.trace" >"$work/killed.show" 2>&1
said='^INCOMPLETE: no end record (the program was killed or crashed, is still running, or its '
said+='trace could not be written to the end); [1-9][0-9]* calls recorded up to the last checkpoint, '
grep -q "$said" "$work/killed.show" ||
  fail "show of a killed program's trace: not what it holds and why" "$work/killed.show"
grep -qi 'not exit normally' "$work/killed.show" "$work/none2.show" &&
  fail "show says a program did not exit normally, which a trace cannot know"

[[ $failed == 0 ]] && echo "OK: trace, show and analyze say what happened"
exit $failed
