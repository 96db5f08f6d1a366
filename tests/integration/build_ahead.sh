#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The program's kernels built ahead on the early context (shim/core/programs_ahead.h), end to end:
# `hetopt trace` keeps the programs the run built from source, and a forced `hetopt run` builds
# them while the program fills its input, hands them over and answers the build (stdout identical
# to native); a run with other options gets the driver's build again, one with another source the
# driver's own; a source that fails to build fails the same way, with the same status and log; a
# program created from a binary (as PyOpenCL's cache does) is built ahead and handed over too.
#   build_ahead.sh HETOPT APP
set -u
source "$(dirname "${BASH_SOURCE[0]}")/stats_lib.sh"
hetopt=$1 app=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-ahead.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
fail() { echo "FAIL: $*"; for f in "$work"/*.err; do echo "--- $f"; tail -n 20 "$f"; done; exit 1; }

# run_case NAME TRACED_ARGS RUN_ARGS EXIT EXPR...: native run with RUN_ARGS (exit EXIT), then
# `hetopt run` with them after a trace with TRACED_ARGS; identical stdout and exit status, and each
# EXPR holds over the run's stats.
traced=none
run_case() {
  local name=$1 traced_args=$2 run_args=$3 want=$4 rc
  shift 4
  # shellcheck disable=SC2086
  "$app" $run_args >"$work/$name.native.out" 2>"$work/$name.native.err"
  rc=$?
  [[ $rc == "$want" ]] || fail "$name: native run exited $rc, expected $want"
  if [[ $traced != "$traced_args" ]]; then
    # shellcheck disable=SC2086
    "$hetopt" trace -o "$work/app.trace" -- "$app" $traced_args >"$work/trace.out" 2>"$work/trace.err"
    grep -q "profile stored" "$work/trace.err" || fail "$name: hetopt trace stored no profile"
    grep -q "programs kept for .hetopt run. to build ahead" "$work/trace.err" || fail "$name: no programs kept"
    ls "$XDG_CACHE_HOME"/hetopt/plans/*.programs >/dev/null 2>&1 || fail "$name: no recipe by the plans"
    traced=$traced_args
  fi
  # shellcheck disable=SC2086
  "$hetopt" run --stats="$work/$name.json" --policy opencl -- "$app" $run_args \
    >"$work/$name.run.out" 2>"$work/$name.run.err"
  rc=$?
  [[ $rc == "$want" ]] || fail "$name: hetopt run exited $rc, native $want"
  # PoCL names the file it compiles from at random in its build log.
  sed -i 's/tempfile_[A-Za-z0-9]*/tempfile_X/g' "$work/$name.native.out" "$work/$name.run.out"
  cmp -s "$work/$name.native.out" "$work/$name.run.out" ||
    { diff "$work/$name.native.out" "$work/$name.run.out"; fail "$name: stdout differs from native"; }
  [[ -f $work/$name.json ]] || fail "$name: no stats (the run was not optimized)"
  stats_expect "$work/$name.json" "s['startup']['context'] == 'early'" "$@" ||
    { python3 -m json.tool "$work/$name.json" | sed -n '/startup/,/}/p'; fail "$name: stats"; }
  echo "OK: $name: $(stats_eval "$work/$name.json" "s['startup']")"
}

# As traced: built ahead, handed over, its build answered.
run_case same "" "" 0 "s['startup']['programs_built_ahead'] == 1" \
  "s['startup']['programs_handed_over'] == 1" "s['startup']['builds_answered'] == 1"
# Other options: handed over (same source), built again by the driver with the program's options.
run_case options "" "--options -DSCALE=3" 0 "s['startup']['programs_handed_over'] == 1" \
  "s['startup']['builds_answered'] == 0" "s['startup']['programs_built_again'] == 1"
# Another source: the driver's own program; the one built ahead is released unused.
run_case source "" "--variant 1" 0 "s['startup']['programs_handed_over'] == 0" \
  "s['startup']['programs_built_ahead'] == 1"
# A source that fails to build, traced so: the same status, build status and log as natively. The
# traced run fails (exit 3): over the profile of the runs above it would not be stored, so this
# one is the program's first.
rm -rf "$HETOPT_DB" "$XDG_CACHE_HOME"
run_case broken "--broken" "--broken" 3 "s['startup']['programs_handed_over'] == 1" \
  "s['startup']['builds_answered'] == 1"
grep -q "build failed: status -11" "$work/broken.run.out" || fail "broken: not CL_BUILD_PROGRAM_FAILURE"
# Without build-ahead the plan has none.
"$hetopt" run --no-build-ahead --stats="$work/off.json" --policy opencl -- "$app" --broken \
  >/dev/null 2>"$work/off.err"
stats_expect "$work/off.json" "s['startup']['programs_in_recipe'] == 0" || fail "--no-build-ahead built ahead"
# Runs with and without it alternate: each uses its own plan, though the two share the plan's path
# (a cached decision of one must not run the plan the other wrote since).
for round in 1 2; do
  for opt in "" --no-build-ahead; do
    # shellcheck disable=SC2086
    "$hetopt" run $opt --stats="$work/alt.json" --policy opencl -- "$app" --broken >/dev/null 2>&1
    want=1; [[ -n $opt ]] && want=0
    stats_expect "$work/alt.json" "s['startup']['programs_in_recipe'] == $want" ||
      fail "round $round: 'hetopt run ${opt:-(default)}' ran the other option set's plan"
  done
done
# From a binary: a native run writes the one the driver built from source, and the runs after it
# (the traced one included) create their program from it.
rm -rf "$HETOPT_DB" "$XDG_CACHE_HOME"
traced=none
"$app" --binary "$work/scale.bin" >/dev/null 2>&1 && [[ -s $work/scale.bin ]] || fail "no binary written"
run_case binary "--binary $work/scale.bin" "--binary $work/scale.bin" 0 \
  "s['startup']['programs_built_ahead'] == 1" "s['startup']['programs_handed_over'] == 1" \
  "s['startup']['builds_answered'] == 1"
grep -q "1 from binaries or IL" "$work/trace.err" || fail "binary: the trace did not keep it as a binary"
echo "OK: built ahead and handed over only where the program asks for the same thing"
