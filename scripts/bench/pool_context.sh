#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where the pinned pool's context costs the program time: each app natively, under `hetopt run`
# (pool in the program's own context, the default), `hetopt run` with HETOPT_POOL_CONTEXT=own
# (a second context of hetopt's own, made at start-up) and `hetopt run` without a profile (a copy
# of the DB without profiles: the untouched run, which must stay within 2% of native), ROUNDS
# interleaved rounds; medians of the whole process and of its phases (measure_lib.sh: before
# OpenCL set-up, set-up, exit). Needs a characterization in $HETOPT_DB. ARGS overrides the apps'
# arguments (default --size 64M --iters 20).
#   pool_context.sh BUILD_DIR [ROUNDS]
set -uo pipefail
build=${1:?usage: pool_context.sh BUILD_DIR [ROUNDS]}
rounds=${2:-7}
bin=$build/bin
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-context.XXXXXX")
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache
# shellcheck source=measure_lib.sh
source "$(dirname "$0")/measure_lib.sh"
python3 - "$HETOPT_DB" "$work/noprofile.db" <<'PY' || exit 1
import shutil, sqlite3, sys
shutil.copyfile(sys.argv[1], sys.argv[2])
db = sqlite3.connect(sys.argv[2])
db.execute("PRAGMA foreign_keys = ON")
db.execute("DELETE FROM app_profiles")
db.commit()
PY

variants="native program own noprofile"
printf '%-17s %-9s %9s %9s %9s %9s %9s\n' app variant app_ms wall_ms before_ms setup_ms exit_ms
for app in ${APPS:-loop_wkr calloc_realloc}; do
  read -r -a a <<<"${ARGS:---size 64M --iters 20}"
  "$bin/hetopt" trace -o "$work/$app.trace" -- "$bin/$app" "${a[@]}" >/dev/null 2>&1 || { echo "$app: trace failed"; continue; }
  for v in $variants; do : >"$work/$v"; done
  for ((i = 0; i < rounds; ++i)); do
    measure "$bin/$app" "${a[@]}" >>"$work/native"
    measure "$bin/hetopt" run -- "$bin/$app" "${a[@]}" >>"$work/program"
    HETOPT_POOL_CONTEXT=own measure "$bin/hetopt" run -- "$bin/$app" "${a[@]}" >>"$work/own"
    HETOPT_DB=$work/noprofile.db measure "$bin/hetopt" run -- "$bin/$app" "${a[@]}" >>"$work/noprofile"
  done
  for v in $variants; do
    printf '%-17s %-9s' "$app" "$v"
    for col in 1 2 3 4 5; do printf ' %9s' "$(cut -d' ' -f$col "$work/$v" | median)"; done
    echo
  done
done
