#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/demo.sh says what really happened: after the plain `hetopt run` it says "optimized" when
# that run printed what it pins, "untouched" when it declined, never the other; and it ends by
# naming its own DB (not the default one) and `hetopt characterize` as the next command. It keeps
# its plans, run records, traces and plots in its own directory: a temporary HOME and working
# directory are left as they were.
#   demo_words.sh SOURCE_DIR BUILD_DIR
set -u
src=$1 build=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-demo.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; sed 's/^/    /' "$work/demo.out"; exit 1; }
# A user's home and working directory of their own, watched: the demo leaves both as they were.
mkdir -p "$work/home/.cache/hetopt/plans" "$work/cwd"
echo mine >"$work/home/.cache/hetopt/plans/a.plan"
(cd "$work/home" && find . | sort) >"$work/home.before"
(cd "$work/cwd" && env -u HETOPT_DB -u XDG_CACHE_HOME -u XDG_DATA_HOME HOME="$work/home" DEMO_SKIP_SETUP=1 \
  BUILD_DIR="$build" DEMO_DIR="$work/demo" DEMO_SIZE=1M DEMO_ITERS=3 bash "$src/scripts/demo.sh") \
  >"$work/demo.out" 2>&1 || fail "the demo exited $?"
(cd "$work/home" && find . | sort) | diff "$work/home.before" - >"$work/home.diff" ||
  fail "the demo changed the user's home: $(cat "$work/home.diff")"
[[ $(cat "$work/home/.cache/hetopt/plans/a.plan") == mine ]] || fail "the demo changed a plan of the user's"
[[ -z $(ls -A "$work/cwd") ]] || fail "the demo left files in the user's working directory: $(ls -A "$work/cwd")"
ls "$work"/demo/cache/hetopt/plans/*.plan >/dev/null 2>&1 || fail "no plan in the demo's own directory"
# The plain run's section: from its heading to the next one.
run=$(awk '/^== hetopt run$/ { on = 1; next } /^== / { on = 0 } on' "$work/demo.out")
[[ -n $run ]] || fail "no 'hetopt run' section"
if grep -q '^hetopt: optimizing: ' <<<"$run"; then
  grep -q '^demo: hetopt run optimized the program: ' <<<"$run" || fail "the run optimized, the demo does not say so"
  grep -qi 'untouched' <<<"$run" && fail "the run optimized, the demo says untouched"
  grep -q '^== hetopt run --stats (the same run' "$work/demo.out" || fail "no --stats run of what was done"
  grep -q '^hetopt: stats: ' "$work/demo.out" || fail "the --stats run printed no stats"
else
  grep -q '^demo: hetopt run left the program untouched: .*running unoptimized' <<<"$run" ||
    fail "the run declined, the demo does not say so with its reason"
fi
tail -n 8 "$work/demo.out" | grep -q "own DB ($work/demo/hetopt.db), not in hetopt's default DB" ||
  fail "the end does not say the demo's DB is not the default one"
tail -n 8 "$work/demo.out" | grep -q "^  $build/bin/hetopt characterize$" ||
  fail "the end does not give 'hetopt characterize' as the next command"
[[ -e $work/demo/hetopt.db ]] || fail "the demo's DB is not where it says"
echo "OK: $(grep '^demo: ' "$work/demo.out")"
