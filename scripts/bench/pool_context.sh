#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where the pinned pool's context costs the program time: each app natively, under `hetopt run`
# (pool in the program's own context, the default) and `hetopt run` with HETOPT_POOL_CONTEXT=own
# (a second context of hetopt's own, made at start-up), ROUNDS interleaved rounds; medians of the
# whole process and of its phases (apps_speedup.sh's measure(): before OpenCL set-up, set-up,
# exit). Needs a characterization in $HETOPT_DB.   pool_context.sh BUILD_DIR [ROUNDS]
set -uo pipefail
build=${1:?usage: pool_context.sh BUILD_DIR [ROUNDS]}
rounds=${2:-7}
bin=$build/bin
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-context.XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache
# shellcheck source=measure_lib.sh
source "$(dirname "$0")/measure_lib.sh"

printf '%-17s %-8s %9s %9s %9s %9s %9s\n' app variant app_ms wall_ms before_ms setup_ms exit_ms
for app in ${APPS:-loop_wkr calloc_realloc}; do
  a=(--size 64M --iters 20)
  "$bin/hetopt" trace -- "$bin/$app" "${a[@]}" >/dev/null 2>&1 || { echo "$app: trace failed"; continue; }
  : >"$work/native"; : >"$work/program"; : >"$work/own"
  for ((i = 0; i < rounds; ++i)); do
    measure "$bin/$app" "${a[@]}" >>"$work/native"
    measure "$bin/hetopt" run -- "$bin/$app" "${a[@]}" >>"$work/program"
    HETOPT_POOL_CONTEXT=own measure "$bin/hetopt" run -- "$bin/$app" "${a[@]}" >>"$work/own"
  done
  for v in native program own; do
    printf '%-17s %-8s' "$app" "$v"
    for col in 1 2 3 4 5; do printf ' %9s' "$(cut -d' ' -f$col "$work/$v" | median)"; done
    echo
  done
done
