#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fork() under `hetopt run` (fork_app.cpp): traced with a few forks, then run with FORKS forks, the
# opencl pool policy forced (on PoCL pinning never pays), within LIMIT seconds (default 90; natively
# 1000 forks take 5-10 s on 2 busy cores). A forked child that inherits a lock held by a parent
# thread never finishes, and its parent waits for it: that is a hang, reported as one. The run's
# stdout must equal the native run's, the parent's stats (as JSON: --stats=FILE.json) must show
# blocks served (except in before-opencl), and every child that exits through exit() (the program's
# result line says how many) must write its own (FILE.json.<pid>) as a forked child. RUN_OPTS goes
# to `hetopt run`. TRACE_FORKS (default 10) is how many forks the traced run makes: with 0 the
# profile says the program does not fork; the optimized run whose children make no OpenCL call
# leaves the plan as it is, and one whose children do (fork_app's opencl-children) must leave the
# mark beside its plan that makes the next plan `driver late` (--dry-run says why).
# MODE before-opencl is traced as `threads 0` (no fork): its children call OpenCL before the parent
# has. Where hetopt's thread had begun to start the driver before the first fork, fork() waited
# for it, and the run must say so exactly once, however many children do, and leave the mark;
# where it had not, the driver is the program's: no warning, no mark. Each child must get its
# answer.
# EXPECT_DRIVER: what the next plan's --dry-run says after "driver:  " (a regular expression), where
# the run left no mark; with a mark it is "late: forked in an optimized run".
#   fork.sh HETOPT FORK_APP MODE FORKS
set -u
source "$(dirname "${BASH_SOURCE[0]}")/stats_lib.sh"
hetopt=$1 app=$2 mode=$3 forks=$4
limit=${LIMIT:-90}
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-fork.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache

fail() { echo "FAIL: $*"; for f in "$work"/*.err; do echo "--- $f"; tail -n 20 "$f"; done; exit 1; }
"$app" "$mode" "$forks" >"$work/native.out" 2>"$work/native.err" || fail "native run exited $?"
traced=("$mode" "${TRACE_FORKS:-10}")
[[ $mode == before-opencl ]] && traced=(threads 0)
"$hetopt" trace -o "$work/app.trace" -- "$app" "${traced[@]}" >/dev/null 2>"$work/trace.err" ||
  fail "hetopt trace exited $?"
grep -q "profile stored" "$work/trace.err" || fail "hetopt trace stored no profile"
# timeout signals its whole process group: children spinning on an inherited lock go too.
# shellcheck disable=SC2086
timeout -k 5 "$limit" "$hetopt" run --stats="$work/stats.json" --force --policy opencl ${RUN_OPTS:-} -- \
  "$app" "$mode" "$forks" >"$work/run.out" 2>"$work/run.err"
rc=$?
[[ $rc == 124 || $rc == 137 ]] && fail "hetopt run $mode $forks hung (killed after $limit s)"
[[ $rc == 0 ]] || fail "hetopt run exited $rc"
cmp -s "$work/native.out" "$work/run.out" ||
  { diff "$work/native.out" "$work/run.out"; fail "stdout under hetopt run differs from native"; }
[[ -f $work/stats.json ]] || fail "the parent wrote no stats"
# The parent serves blocks while it forks. Not in before-opencl, whose forks all come before its
# first OpenCL call: where the driver is the program's, its pool is made from that call on, and
# the short run may end before it is ready.
[[ $mode == before-opencl ]] ||
  stats_expect "$work/stats.json" "s.pool_state in ('ready', 'preparing')" 's.redirected >= 1' ||
  fail "the parent served nothing: $(stats_get "$work/stats.json" pool)"
children=$(stats_children "$work/stats.json" "s.pool_state == 'failed' and s.pool_failure == 'forked child'") ||
  fail "a forked child's stats are not a forked child's"
expected=$(sed -n 's/^result: .* through-exit=\([0-9]*\)$/\1/p' "$work/run.out")
[[ $children == "$expected" ]] || fail "$children children printed their stats, expected ${expected:-?}"
dry() {
  "$hetopt" run --dry-run --force --policy opencl -- "$app" "$mode" "$forks" >"$work/dry.out" 2>&1 ||
    fail "hetopt run --dry-run exited $?"
}
warning="a forked copy of this program calls OpenCL, but hetopt started the driver early"
marked() { ls "$XDG_CACHE_HOME"/hetopt/plans/*.forked >/dev/null 2>&1; }
driver=${EXPECT_DRIVER:-early}
if [[ $mode == before-opencl ]]; then
  warned=$(grep -c "$warning" "$work/run.err")
  [[ $warned -le 1 ]] || fail "$forks children called OpenCL before the parent: $warned warnings, expected at most 1"
  if [[ $warned == 1 ]]; then
    marked || fail "warned, but no fork mark beside the plan"
    driver="late: forked in an optimized run"
  else
    ! marked || fail "a fork mark beside the plan, but no warning"
  fi
  # fork() waits until hetopt's thread is out of the driver's start-up: a child inheriting the
  # loader mid-start spun for ever in clGetPlatformIDs (ocl-icd), 1 run in 7 on 2 busy cores.
  found=$(grep -c "^fork_app: child .*: platforms found" "$work/run.err")
  [[ $found == "$forks" ]] || fail "$((forks - found)) of $forks children did not get the platforms"
  echo "before-opencl: $warned warning(s): $( ((warned)) && echo "the driver had been started" || echo "the driver was the program's")"
  dry
elif [[ ${TRACE_FORKS:-10} == 0 ]]; then
  # Not forked when traced: children that never call OpenCL keep the early driver for later runs;
  # a forked copy that calls OpenCL leaves the mark, and the next plan leaves the driver alone.
  dry
  ! marked && ! grep -q "^driver:  late: " "$work/dry.out" ||
    { cat "$work/dry.out"; fail "children without OpenCL calls made the next plan driver late"; }
  # --verify=off: under the closed loop this second run would be a control run (no shim).
  timeout -k 5 "$limit" "$hetopt" run --verify=off --force --policy opencl -- "$app" "$mode" "$forks" opencl-children \
    >"$work/run2.out" 2>"$work/run2.err" || fail "hetopt run with OpenCL in the children exited $?"
  cmp -s "$work/native.out" "$work/run2.out" || fail "stdout with OpenCL in the children differs from native"
  marked || fail "no fork mark beside the plan"
  # The parent made its own OpenCL calls first: its children's trouble is not hetopt's to warn of.
  ! grep -q "$warning" "$work/run2.err" || fail "warned of a driver the program started itself"
  driver="late: forked in an optimized run"
  dry
else
  # Children that make no OpenCL call leave the driver as it was.
  ! marked || fail "children without OpenCL calls left a fork mark"
  dry
fi
grep -Eq "^driver:  $driver" "$work/dry.out" || { cat "$work/dry.out"; fail "the next plan does not say 'driver:  $driver'"; }
echo "OK: $forks forks from $mode; $(stats_get "$work/stats.json" pool); $(grep '^driver:' "$work/dry.out" | cut -c1-100)"
