#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole pipeline on one program: native run, `hetopt trace` (which analyzes and stores the
# profile), `hetopt run` (optimized where the profile says so; on PoCL pinning never pays, so the
# pool policy is forced with POLICY). The program's stdout must be identical in all three and every
# run must succeed. Prints what hetopt's stats (as JSON) say of the pool. RUN_OPTS adds options to
# `hetopt run` (--no-pool: the pool-less variant, which the stats must then show).
#   pipeline.sh HETOPT POLICY -- PROGRAM [ARGS...]
set -u
source "$(dirname "${BASH_SOURCE[0]}")/stats_lib.sh"
hetopt=$1 policy=$2
shift 2
[[ ${1:-} == -- ]] && shift
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-pipeline.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache

fail() { echo "FAIL: $*"; for f in "$work"/*.err; do echo "--- $f"; tail -n 20 "$f"; done; exit 1; }
"$@" >"$work/native.out" 2>"$work/native.err" || fail "native run exited $?"
"$hetopt" trace -o "$work/app.trace" -- "$@" >"$work/trace.out" 2>"$work/trace.err" ||
  fail "hetopt trace exited $?"
grep -q "profile stored" "$work/trace.err" || fail "hetopt trace stored no profile"
# shellcheck disable=SC2086
"$hetopt" run --stats="$work/stats.json" --policy "$policy" ${RUN_OPTS:-} -- "$@" >"$work/run.out" 2>"$work/run.err" ||
  fail "hetopt run exited $?"
if [[ ${RUN_OPTS:-} == *--no-pool* && -f $work/stats.json ]]; then
  stats_expect "$work/stats.json" "s.direct and s.pool_policy == '$policy'" || fail "not the direct mode"
fi
for mode in trace run; do
  cmp -s "$work/native.out" "$work/$mode.out" ||
    { diff "$work/native.out" "$work/$mode.out"; fail "stdout under $mode differs from native"; }
done
echo "OK: identical stdout natively, traced and run"
grep -h "running unoptimized" "$work/run.err"
if [[ -f $work/stats.json ]]; then echo "stats: $(stats_get "$work/stats.json" pool)"; fi
