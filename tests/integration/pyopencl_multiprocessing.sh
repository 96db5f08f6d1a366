#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Python multiprocessing (fork start method) over PyOpenCL (pyopencl_multiprocessing.py), traced
# once with TRACE_ARGS, then the FIRST optimized run after that trace with RUN_ARGS in every way
# `hetopt run` can pin (a pool, no pool, registration in place) and with the driver's libraries
# not loaded early (HETOPT_DRIVER_PRELOAD=0): each in a cache of its own, so no plan or fork mark
# of an earlier run helps it. Each must exit 3 (the script's "all right") within LIMIT seconds
# (default 120: a worker hanging on a driver its parent initialized is a failure), print what the
# native run prints, be optimized (stats), and its `--dry-run` must leave the driver to the program.
#   pyopencl_multiprocessing.sh HETOPT PYTHON SCRIPT TASKS WORKERS PARENT [TRACE_WORKERS]
# PARENT: opencl (the parent uses OpenCL after its workers) or none (never: a job runner).
# TRACE_WORKERS (default WORKERS): 0 traces the script not forking (it runs its tasks itself).
set -u
hetopt=$1 python=$2 script=$3 tasks=$4 workers=$5 parent=$6 traceWorkers=${7:-$5}
limit=${LIMIT:-120}
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-pymp.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db
failed=0
fail() { echo "FAIL: $*"; failed=1; }
run=("$python" "$script" "$tasks" "$workers" "$parent")

timeout "$limit" "${run[@]}" >"$work/native.out" 2>"$work/native.err"
rc=$?
[[ $rc == 3 ]] || { echo "FAIL: natively exited $rc, not 3"; cat "$work/native.err"; exit 1; }
XDG_CACHE_HOME=$work/cache.trace timeout "$limit" "$hetopt" trace -o "$work/t.trace" -- \
  "$python" "$script" "$tasks" "$traceWorkers" "$parent" >/dev/null 2>"$work/trace.err"
rc=$?
[[ $rc == 3 ]] || { echo "FAIL: under trace exited $rc, not 3 (124: hung)"; tail -n 20 "$work/trace.err"; exit 1; }
grep -q "profile stored" "$work/trace.err" || { echo "FAIL: no profile stored"; tail -n 20 "$work/trace.err"; exit 1; }

for variant in "pool|--policy opencl" "direct|--policy opencl --no-pool" "register|--policy register" \
               "no-preload|--policy opencl"; do
  name=${variant%%|*}
  read -ra opts <<<"${variant#*|}"
  export XDG_CACHE_HOME=$work/cache.$name
  preload=1
  [[ $name == no-preload ]] && preload=0
  HETOPT_DRIVER_PRELOAD=$preload timeout -k 5 "$limit" "$hetopt" run --stats="$work/$name.json" --force "${opts[@]}" -- "${run[@]}" \
    >"$work/$name.out" 2>"$work/$name.err"
  rc=$?
  if [[ $rc != 3 ]]; then
    fail "$name: the first optimized run exited $rc, not 3 (124: hung)"
    tail -n 20 "$work/$name.err"
    continue
  fi
  cmp -s "$work/native.out" "$work/$name.out" || { fail "$name: stdout differs from native"; diff "$work/native.out" "$work/$name.out"; }
  [[ -f $work/$name.json ]] || fail "$name: not optimized (no stats)"
  ! grep -q "started the driver early" "$work/$name.err" || fail "$name: a worker met a driver hetopt had started"
  "$hetopt" run --dry-run --force "${opts[@]}" -- "${run[@]}" >"$work/$name.dry" 2>&1
  grep -q "^driver:  late: " "$work/$name.dry" || { fail "$name: the plan does not leave the driver to the program"; cat "$work/$name.dry"; }
  echo "$name: exit 3, $(grep '^driver:' "$work/$name.dry" | cut -c1-120)"
done
[[ $failed == 0 ]] && echo "OK: $tasks tasks on $workers forked workers (parent: $parent; traced with $traceWorkers)" && cat "$work/native.out"
exit "$failed"
