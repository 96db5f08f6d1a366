#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs a test app twice and requires both runs to succeed with identical stdout (the contract in
# app_common.h: stdout holds only the "device:" and "result:" lines, the same in every mode).
#
#   compare_runs.sh [--b-prefix WORD]... [--b-suffix WORD]... -- PROGRAM [ARGS...]
#
# Run A is `PROGRAM ARGS...`; run B is `B-PREFIX... PROGRAM ARGS... B-SUFFIX...`. The hand-pinned
# variant is `--b-suffix --pinned`; a run under hetopt is e.g. `--b-prefix hetopt --b-prefix run
# --b-prefix --`. Exits 0 when both exit 0 and their stdout matches; else prints why (exit codes,
# stderr, a unified diff of stdout) and exits 1.
set -u

prefix=()
suffix=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --b-prefix) [[ $# -ge 2 ]] || { echo "compare_runs.sh: --b-prefix needs a value" >&2; exit 2; }
                prefix+=("$2"); shift 2 ;;
    --b-suffix) [[ $# -ge 2 ]] || { echo "compare_runs.sh: --b-suffix needs a value" >&2; exit 2; }
                suffix+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "compare_runs.sh: unknown option '$1' (usage: [--b-prefix W]... [--b-suffix W]... -- PROGRAM [ARGS...])" >&2
       exit 2 ;;
  esac
done
[[ $# -ge 1 ]] || { echo "compare_runs.sh: no program given" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-compare.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT

cmd_a=("$@")
cmd_b=("${prefix[@]}" "$@" "${suffix[@]}")

"${cmd_a[@]}" >"$work/a.out" 2>"$work/a.err"
rc_a=$?
"${cmd_b[@]}" >"$work/b.out" 2>"$work/b.err"
rc_b=$?

failed=0
for run in a b; do
  if [[ $run == a ]]; then rc=$rc_a; cmd=("${cmd_a[@]}"); else rc=$rc_b; cmd=("${cmd_b[@]}"); fi
  if [[ $rc -ne 0 ]]; then
    echo "FAIL: run ${run^^} exited $rc: ${cmd[*]}"
    echo "--- stderr of run ${run^^} (last 40 lines):"
    tail -n 40 "$work/$run.err"
    failed=1
  fi
done
if [[ ! -s "$work/a.out" ]]; then
  echo "FAIL: run A printed nothing on stdout: ${cmd_a[*]}"
  failed=1
fi
if ! cmp -s "$work/a.out" "$work/b.out"; then
  echo "FAIL: stdout differs"
  echo "  A: ${cmd_a[*]}"
  echo "  B: ${cmd_b[*]}"
  diff -u --label "A stdout" --label "B stdout" "$work/a.out" "$work/b.out"
  failed=1
fi
if [[ $failed -eq 0 ]]; then
  echo "OK: identical stdout ($(wc -l <"$work/a.out") lines)"
  cat "$work/a.out"
fi
exit $failed
