#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A launcher: a #!/bin/sh wrapper that execs the real OpenCL program. `hetopt trace` profiles the
# exec'd program (not the shell) and links the wrapper to it; `hetopt run --dry-run` shows the
# program's plan, saying it is for the exec'd program; `hetopt run` optimizes it while the shell
# stays untouched; `--profile NAME` stores and finds the same under a name. On PoCL the curves
# never pick pinning, so the pool policy is forced as the pipeline tests do.
#   launcher.sh HETOPT -- PROGRAM [ARGS...]
set -u
hetopt=$1
shift
[[ ${1:-} == -- ]] && shift
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-launcher.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
# shellcheck source=stats_lib.sh
source "$(dirname "$0")/stats_lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/line_checks.sh"
prog=$(readlink -f "$1")
shift
wrap=$work/wrap.sh
printf '#!/bin/sh\necho "wrapper: starting"\nexec "%s" "$@"\n' "$prog" >"$wrap"
chmod +x "$wrap"

"$wrap" "$@" >"$work/native.out" 2>/dev/null || { echo "FAIL: native run exited $?"; exit 1; }
"$hetopt" trace -o "$work/w.trace" -- "$wrap" "$@" >"$work/trace.out" 2>"$work/trace.err" ||
  fail "hetopt trace exited $?"
expect "$work/trace.err" "^hetopt: process [0-9]+ \\($prog\\) made [1-9][0-9]* OpenCL calls" "the exec'd process analysed"
expect "$work/trace.err" "^hetopt analysis of $prog\$" "its report"
grep -q "NOT ELIGIBLE" "$work/trace.err" && fail "a profile without OpenCL calls (the shell's) was analysed"
expect "$work/trace.err" "will optimize $prog \\(pid [0-9]+ when traced\\)" "the launcher linked"

"$hetopt" run --dry-run --policy opencl --force -- "$wrap" "$@" >"$work/dry.out" 2>&1 ||
  fail "dry run exited $?"
grep -q '^wrapper: starting' "$work/dry.out" && fail "the dry run ran the wrapper"
expect "$work/dry.out" "^launched: this plan is for $prog, which $wrap starts" "the plan names the exec'd program"
expect "$work/dry.out" "^program: $prog \\(build-id:" "the program's own identity"
expect "$work/dry.out" '^plan: +optimize: ' "a plan"

"$hetopt" run --stats="$work/stats.json" --policy opencl --force -- "$wrap" "$@" >"$work/run.out" 2>"$work/run.err" ||
  fail "hetopt run exited $?"
cmp -s "$work/native.out" "$work/run.out" || { fail "stdout differs under run"; diff "$work/native.out" "$work/run.out"; }
expect "$work/run.err" "^hetopt: for $prog, which $wrap starts" "run says whom it optimizes"
# The exec'd program's stats, and no other process's: the shell stayed untouched.
[[ $(stats_files "$work/stats.json" | wc -l) -eq 1 && -f $work/stats.json ]] ||
  fail "stats of $(stats_files "$work/stats.json" | wc -l) processes: only the exec'd program optimizes"
stats_expect "$work/stats.json" 's.redirected >= 1' "s.program == '$prog'" || fail "the exec'd program was not optimized"

# Named: stored under the name, found by it.
"$hetopt" trace --profile wrapped -o "$work/n.trace" -- "$wrap" "$@" >/dev/null 2>"$work/ntrace.err" ||
  fail "hetopt trace --profile exited $?"
expect "$work/ntrace.err" "profile stored in .* as 'wrapped'" "named profile stored"
"$hetopt" run --dry-run --profile wrapped --policy opencl --force -- "$wrap" "$@" >"$work/ndry.out" 2>&1 ||
  fail "dry run --profile exited $?"
expect "$work/ndry.out" "^launched: this plan is for $prog" "named profile found"
"$hetopt" run --dry-run --profile nosuch -- "$wrap" "$@" >"$work/none.out" 2>&1
expect "$work/none.out" "no profile named 'nosuch'" "unknown name"

[[ $failed -eq 0 ]] && echo "OK: launcher traced, planned and optimized through its exec'd program"
exit $failed
