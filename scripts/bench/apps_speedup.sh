#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 6's table: every test app natively, hand-pinned (--pinned), under `hetopt run` (pool) and
# `hetopt run --no-pool` (the naive variant: each candidate block made by the policy directly), RUNS
# times each, interleaved, on the current default device. Needs a characterization of the device in
# $HETOPT_DB (hetopt characterize). Each app is traced once first (profile stored). Prints, per
# app, the median of the app's own elapsed_ms (allocation + transfers + kernels) and of the whole
# process wall time, and the speedups over native; writes apps_speedup.dat for gnuplot in OUTDIR.
#   apps_speedup.sh BUILD_DIR [RUNS] [OUTDIR]
# APPS and ARGS (one argument list for every app) narrow it for quick checks; POLICY=P forces
# `hetopt run --policy P` (a pool where the curves would pick none, e.g. on PoCL).
set -uo pipefail
build=${1:?usage: apps_speedup.sh BUILD_DIR [RUNS] [OUTDIR]}
runs=${2:-5}
outdir=${3:-.}
bin=$build/bin
hetopt=$bin/hetopt
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-speedup.XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache

declare -A args=(
  [loop_wkr]="--size 64M --iters 20" [selective_alloc]="--size 64M --iters 20"
  [vector_new]="--size 64M --iters 20" [calloc_realloc]="--size 64M --iters 20"
  [host_ptr_buffers]="--size 64M --iters 20" [rect_map]="--size 64M --iters 20"
  [async_events]="--size 64M --iters 20" [two_threads]="--size 64M --iters 20"
  [dlopen_app]="--size 64M --iters 20" [static_mmap]="--size 64M --iters 20"
  [compute_bound]="--size 4M --iters 100")
force=(${POLICY:+--policy "$POLICY"})
apps=${APPS:-"loop_wkr selective_alloc vector_new calloc_realloc host_ptr_buffers rect_map async_events two_threads dlopen_app static_mmap compute_bound"}

# shellcheck source=measure_lib.sh
source "$(dirname "$0")/measure_lib.sh"

printf '%-17s %10s %10s %10s %10s %8s %8s %8s | %9s %9s %9s %9s %8s %8s\n' app native_ms pinned_ms \
  hetopt_ms nopool_ms pinned_x hetopt_x nopool_x native_wall pinned_wall hetopt_wall nopool_wall \
  hetopt_wall_x nopool_wall_x
echo "# app native_ms pinned_ms hetopt_ms nopool_ms pinned_x hetopt_x nopool_x native_wall_ms" \
  "pinned_wall_ms hetopt_wall_ms nopool_wall_ms" >"$outdir/apps_speedup.dat"
for app in $apps; do
  read -r -a a <<<"${ARGS:-${args[$app]}}"  # ARGS overrides every app's (quick checks)
  "$hetopt" trace --no-analyze -o "$work/$app.trace" -- "$bin/$app" "${a[@]}" >"$work/out.trace" 2>"$work/$app.trace.err" &&
    "$hetopt" analyze "$work/$app.trace" >"$work/$app.analysis" 2>&1 ||
    { echo "$app: trace/analyze failed"; tail -n 5 "$work/$app.trace.err" "$work/$app.analysis"; continue; }
  : >"$work/n" ; : >"$work/p" ; : >"$work/h" ; : >"$work/d"
  for ((i = 0; i < runs; ++i)); do
    measure "$bin/$app" "${a[@]}" >>"$work/n" || echo "$app native failed"
    measure "$bin/$app" "${a[@]}" --pinned >>"$work/p" || echo "$app pinned failed"
    measure "$hetopt" run "${force[@]}" -- "$bin/$app" "${a[@]}" >>"$work/h" || echo "$app hetopt failed"
    measure "$hetopt" run "${force[@]}" --no-pool -- "$bin/$app" "${a[@]}" >>"$work/d" || echo "$app --no-pool failed"
  done
  n=$(cut -d' ' -f1 "$work/n" | median) p=$(cut -d' ' -f1 "$work/p" | median) h=$(cut -d' ' -f1 "$work/h" | median)
  d=$(cut -d' ' -f1 "$work/d" | median)
  nw=$(cut -d' ' -f2 "$work/n" | median) pw=$(cut -d' ' -f2 "$work/p" | median) hw=$(cut -d' ' -f2 "$work/h" | median)
  dw=$(cut -d' ' -f2 "$work/d" | median)
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
  px=$(ratio "$n" "$p") hx=$(ratio "$n" "$h") dx=$(ratio "$n" "$d") hwx=$(ratio "$nw" "$hw") dwx=$(ratio "$nw" "$dw")
  printf '%-17s %10.1f %10.1f %10.1f %10.1f %8s %8s %8s | %9s %9s %9s %9s %8s %8s\n' "$app" "$n" "$p" "$h" "$d" \
    "$px" "$hx" "$dx" "$nw" "$pw" "$hw" "$dw" "$hwx" "$dwx"
  echo "$app $n $p $h $d $px $hx $dx $nw $pw $hw $dw" >>"$outdir/apps_speedup.dat"
  phases() { echo "$(cut -d' ' -f3 "$1" | median)/$(cut -d' ' -f4 "$1" | median)/$(cut -d' ' -f5 "$1" | median)"; }
  echo "    $app: median ms before set-up/OpenCL set-up/exit: native $(phases "$work/n")," \
    "hand-pinned $(phases "$work/p"), hetopt $(phases "$work/h"), --no-pool $(phases "$work/d")"
  grep -h "Eligibility:\|dispatch ratio" "$work/$app.analysis" | head -2 | sed "s/^/    $app: /"
  for opt in "" --no-pool; do
    # shellcheck disable=SC2086
    HETOPT_STATS=1 "$hetopt" run "${force[@]}" $opt -- "$bin/$app" "${a[@]}" 2>"$work/stats" >"$work/out.run$opt"
    grep -h "stats:\|unoptimized" "$work/stats" | cut -c1-260 | sed "s/^/    /"
  done
  # Issue 6: the program's results are the same natively, traced and under both kinds of run.
  "$bin/$app" "${a[@]}" >"$work/out.native" 2>/dev/null
  same=yes
  for v in trace run run--no-pool; do
    cmp -s <(grep '^result:' "$work/out.native") <(grep '^result:' "$work/out.$v") || same="no: $v differs"
  done
  echo "    $app: results identical natively, traced, under run and run --no-pool" \
    "($(grep -c '^result:' "$work/out.native") result lines): $same"
done
