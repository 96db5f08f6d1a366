#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A plan whose only gain is the start-up, end to end: a program that computes on the host before
# its one context and moves only 256 bytes has no site worth pinning. On PoCL its context's
# start-up is too short to pay, and `hetopt run` says so with the overlap's numbers; forced, the
# plan is start-up only (the context made early, its kernel built ahead), the run hands both over
# and prints what the program prints natively, and the closed loop times it against a control run.
#   startup_only.sh HETOPT APP
set -u
source "$(dirname "${BASH_SOURCE[0]}")/stats_lib.sh"
hetopt=$1 app=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-startup.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
unset HETOPT_MODE HETOPT_PLAN_FILE HETOPT_VERIFY
fail() { echo "FAIL: $*"; for f in "$work"/*.err "$work"/*.dry; do [[ -f $f ]] && { echo "--- $f"; tail -n 20 "$f"; }; done; exit 1; }
# The plan comes from the traced run: traced with a long host phase, PoCL's short context start-up
# is far below a plan's 4% of it; the runs below are shorter (the same program, the same plan).
traced=(--rounds "${TRACED_ROUNDS:-4000}")
args=(--rounds 200)

"$app" "${args[@]}" >"$work/native.out" 2>"$work/native.err" || fail "native run exited $?"
"$hetopt" trace -o "$work/app.trace" -- "$app" "${traced[@]}" >"$work/trace.out" 2>"$work/trace.err" ||
  fail "hetopt trace exited $?"
grep -q "profile stored" "$work/trace.err" || fail "hetopt trace stored no profile"
grep -q "programs kept for .hetopt run. to build ahead: 1 built from source" "$work/trace.err" || fail "no program kept to build ahead"

# Not forced. PoCL builds a kernel with LLVM (~100 ms when traced), so with its build ahead the
# start-up may pay even here: either way the words name the start-up, not only pinning.
"$hetopt" run --dry-run -- "$app" "${args[@]}" >"$work/plain.dry" 2>&1 || fail "dry run exited $?"
grep -Eq '^(plan: +optimize: start-up only \(no site feeds transfers\): the context made early, 1 program built ahead; predicted saving ~|decline: no allocation site feeds host<->device transfers; the start-up overlap alone \(the context made early, 1 program built ahead\) would save ~)' \
  "$work/plain.dry" || fail "the decision does not name the start-up"
# The context alone: declined, with the overlap's numbers, and the run is untouched.
"$hetopt" run --dry-run --no-build-ahead -- "$app" "${args[@]}" >"$work/context.dry" 2>&1 ||
  fail "dry run --no-build-ahead exited $?"
grep -Eq '^decline: no allocation site feeds host<->device transfers; the start-up overlap alone \(the context made early\) would save ~.* \(.*% of the traced .* run\), where a plan must save .* \(`--force` optimizes anyway\)$' \
  "$work/context.dry" || fail "the decline does not give the start-up overlap's numbers"
"$hetopt" run --no-build-ahead -- "$app" "${args[@]}" >"$work/context.out" 2>"$work/context.err" ||
  fail "declined run exited $?"
grep -q 'the start-up overlap alone .*running unoptimized' "$work/context.err" || fail "the declined run does not say why"
cmp -s "$work/native.out" "$work/context.out" || fail "the declined run printed something else"

# Forced: a start-up-only plan.
"$hetopt" run --dry-run --force -- "$app" "${args[@]}" >"$work/forced.dry" 2>&1 || fail "forced dry run exited $?"
grep -Eq '^plan: +optimize: start-up only \(no site feeds transfers\): the context made early, 1 program built ahead; predicted saving ~' \
  "$work/forced.dry" || fail "no start-up-only plan"
grep -q '^context: made by hetopt at start-up' "$work/forced.dry" || fail "the dry run does not say the context is made early"
grep -q '^pool:' "$work/forced.dry" && fail "a start-up-only plan has a pool"
"$hetopt" run --force --stats="$work/run.json" -- "$app" "${args[@]}" >"$work/run.out" 2>"$work/run.err" ||
  fail "hetopt run --force exited $?"
cmp -s "$work/native.out" "$work/run.out" || { diff "$work/native.out" "$work/run.out"; fail "the optimized run printed something else"; }
grep -q '^hetopt: .*optimizing: start-up only (nothing pinned), the context made early and 1 program built ahead' "$work/run.err" ||
  fail "the optimized run does not say what it does"
plan=$(ls "$XDG_CACHE_HOME"/hetopt/plans/*.plan)
[[ $(wc -l <<<"$plan") == 1 ]] || fail "more than the one plan: $plan"
[[ $(tail -n 1 "$plan") == startup-only ]] || fail "the plan's last line is not startup-only: $(cat "$plan")"
stats_expect "$work/run.json" "s['startup']['context'] == 'early'" "s['pool_state'] == 'none'" \
  "s['candidate_sites'] == 0" "s['redirected'] == 0" "s['conformant']" \
  "s['startup']['programs_handed_over'] == 1" "s['startup']['builds_answered'] == 1" ||
  { python3 -m json.tool "$work/run.json"; fail "stats"; }

# The closed loop judges it like any other plan: a control run follows the optimized one.
kinds=
for i in 1 2; do
  "$hetopt" run --force -- "$app" "${args[@]}" >"$work/loop.out" 2>"$work/loop.err" || fail "loop run $i exited $?"
  cmp -s "$work/native.out" "$work/loop.out" || fail "loop run $i printed something else"
  if grep -q '^hetopt: control run' "$work/loop.err"; then kinds+=" control"
  elif grep -q '^hetopt: .*optimizing: start-up only' "$work/loop.err"; then kinds+=" optimized"
  else kinds+=" unknown"; fi
done
[[ $kinds == " optimized control" || $kinds == " control optimized" ]] ||
  fail "the closed loop ran:$kinds (expected one optimized and one control run)"
echo "OK: the context alone declined on PoCL with its numbers; forced, start-up only:$kinds"
grep -h '^\(plan\|decline\):' "$work/plain.dry" "$work/context.dry" "$work/forced.dry"
stats_eval "$work/run.json" "s['startup']"
