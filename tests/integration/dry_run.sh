#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `hetopt run --dry-run`: prints the plan (every candidate site with its strategy, when it pins and
# why) and the decision, and runs nothing; the reasons it gives when it declines are the real ones
# (no characterization, the saving too small); a bad --policy is a usage error before anything
# runs. Then the register strategy for real: identical stdout, blocks registered in place.
#   dry_run.sh HETOPT -- PROGRAM [ARGS...]   (PROGRAM prints "result:" lines)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/stats_lib.sh"
hetopt=$1
shift
[[ ${1:-} == -- ]] && shift
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-dryrun.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
source "$(dirname "${BASH_SOURCE[0]}")/line_checks.sh"

# Traced before the machine is characterized: the profile has no prices.
"$hetopt" trace -o "$work/app.trace" -- "$@" >"$work/native.out" 2>"$work/trace.err" ||
  { echo "FAIL: hetopt trace exited $?"; cat "$work/trace.err"; exit 1; }
"$hetopt" run --dry-run -- "$@" >"$work/nochar.out" 2>&1 || fail "dry run without curves exited $?"
expect "$work/nochar.out" '^decline: no characterization for .*; run `hetopt characterize`' \
  "no characterization"
"$hetopt" run -- "$@" >/dev/null 2>"$work/nochar.err" || fail "run without curves exited $?"
expect "$work/nochar.err" 'no characterization for .*running unoptimized' "run without curves"

# Characterized afterwards: priced with the curves now, no re-trace needed.
"$hetopt" characterize --quick >"$work/char.out" 2>&1 || { fail "characterize exited $?"; cat "$work/char.out"; }
"$hetopt" run --dry-run -- "$@" >"$work/dry.out" 2>"$work/dry.err" || fail "dry run exited $?"
grep -q '^result:' "$work/dry.out" && fail "the dry run ran the program"
expect "$work/dry.out" '^program: ' "header"
expect "$work/dry.out" '^prices: .*this machine.s curves now' "prices from the current curves"
expect "$work/dry.out" '^1\. .*\(malloc|calloc|realloc|new|posix_memalign|aligned_alloc)' "first site"
expect "$work/dry.out" '^   strategy: ' "a strategy per site"
expect "$work/dry.out" '^   why: +.*(traced|pageable ~)' "the numbers per site"
expect "$work/dry.out" '^(plan|decline): ' "the decision"

# Forced: every site registered in place, then from a pool.
"$hetopt" run --dry-run --policy register -- "$@" >"$work/reg.out" 2>&1 || fail "dry run --policy register exited $?"
expect "$work/reg.out" '^   strategy: register in place' "register strategy"
expect "$work/reg.out" '^   when: +each block where malloc put it' "when it pins"
expect "$work/reg.out" '^plan: +optimize: [0-9]+ sites? \([1-9][0-9]* registered in place, 0 from a pool\)' "register plan"
"$hetopt" run --dry-run --policy hybrid -- "$@" >"$work/pool.out" 2>&1 || fail "dry run --policy hybrid exited $?"
expect "$work/pool.out" '^   strategy: hybrid pool' "pool strategy"
expect "$work/pool.out" '^pool: +hybrid, ' "the pool's size"

# Usage errors exit 2 before anything runs.
"$hetopt" run --policy bogus -- "$@" >"$work/bogus.out" 2>&1
rc=$?
[[ $rc -eq 2 ]] || fail "--policy bogus exited $rc, not 2"
grep -q '^result:' "$work/bogus.out" && fail "--policy bogus ran the program"
expect "$work/bogus.out" "^hetopt run: --policy 'bogus' is not opencl, hybrid, locked or register \\(see hetopt run --help\\)$" "--policy bogus"

# The register strategy for real: the program's own blocks pinned where they are.
"$hetopt" run --stats="$work/stats.json" --policy register -- "$@" >"$work/run.out" 2>"$work/run.err" ||
  fail "hetopt run --policy register exited $?"
cmp -s "$work/native.out" "$work/run.out" || { fail "stdout differs under the register strategy"; diff "$work/native.out" "$work/run.out"; }
stats_expect "$work/stats.json" 's.registered_blocks.registered >= 1 and s.registered_blocks.adopted >= 1' ||
  fail "no blocks registered"
stats_expect "$work/stats.json" "'h2d' in s.registered_blocks and 'd2h' in s.registered_blocks" || fail "transfers not counted"

[[ $failed -eq 0 ]] && echo "OK: dry run, its reasons and the register strategy" && grep -h '^\(plan\|decline\):' "$work"/*.out
exit $failed
