#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A traced program that dies by a signal: `hetopt trace` must end with the program's own status
# (the same as natively), and the trace must hold every call made before the signal (an
# incomplete trace, read by `hetopt show`). Programs with their own handlers keep them.
#   fatal_signals.sh HETOPT SIGNAL_APP
set -u
hetopt=$1 app=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-signals.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
unset HETOPT_MODE HETOPT_TRACE_FILE
ulimit -c 0
failed=0

# check MODE STATUS CALLS-PATTERN COMPLETENESS (STATUS "native": whatever the native run gives)
check() {
  local mode=$1 want=$2 calls=$3 state=$4
  (cd "$work" && "$app" "$mode") >"$work/$mode.native" 2>/dev/null
  local native=$?
  [[ $want == native ]] && want=$native
  (cd "$work" && "$hetopt" trace -o "$work/$mode.trace" -- "$app" "$mode") >"$work/$mode.out" 2>"$work/$mode.err"
  local rc=$?
  if [[ $native -ne $want || $rc -ne $want ]]; then
    echo "FAIL $mode: native exit $native, under hetopt trace $rc, expected $want"
    cat "$work/$mode.err"
    failed=1
    return
  fi
  if ! diff -q "$work/$mode.native" <(grep -v '^hetopt' "$work/$mode.out") >/dev/null; then
    echo "FAIL $mode: stdout differs from the native run"
    failed=1
  fi
  if ! "$hetopt" show "$work/$mode.trace" >"$work/$mode.show" 2>&1; then
    echo "FAIL $mode: hetopt show cannot read the trace"
    cat "$work/$mode.show"
    failed=1
    return
  fi
  if ! grep -Eq "$calls" "$work/$mode.show"; then
    echo "FAIL $mode: the trace lacks the calls made before the signal:"
    grep -E '^calls|INCOMPLETE|^complete' "$work/$mode.show"
    failed=1
  fi
  if ! grep -q "^$state" "$work/$mode.show"; then
    echo "FAIL $mode: the trace is not $state"
    failed=1
  fi
  [[ $failed -eq 0 ]] && echo "ok $mode: exit $rc, $(grep -E '^calls' "$work/$mode.show")"
}

# 3 writes and 3 reads before the signal; `survive` writes once more after its handler returned.
before='host->device 768.0 KiB in 3 calls, device->host 768.0 KiB in 3 calls'
check abort 134 "$before" INCOMPLETE
check raise-segv native "$before" '\(INCOMPLETE\|complete\)'
check fault 139 "$before" INCOMPLETE
check term 143 "$before" INCOMPLETE
check handler 7 "$before" INCOMPLETE
check survive 0 'host->device 1.00 MiB in 4 calls' complete
exit $failed
