#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's first command: installs what is missing, builds, and runs hetopt's main job on the
# bundled example (tests/apps/loop_wkr, the write -> kernel -> read loop) on the default OpenCL
# device (the first GPU, else PoCL on the CPU): characterize this machine (quick mode), trace the
# app, run it natively and with `hetopt run`, and say what that run did. Everything the demo makes
# stays in DEMO_DIR (default build/demo): its DB, plans and run records (XDG_CACHE_HOME), traces
# and plots, and it runs there; the user's DB, cache and working directory are left as they were.
# The end says what to run next for the user's own programs. DEMO_SKIP_SETUP=1 uses the build as
# it is (the test does). BUILD_DIR and DEMO_DIR are relative to the repository.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[[ ${DEMO_SKIP_SETUP:-0} == 1 ]] || scripts/setup.sh
build=$(cd "${BUILD_DIR:-build}" && pwd)
hetopt=$build/bin/hetopt
app=$build/bin/loop_wkr
args=(--size "${DEMO_SIZE:-16M}" --iters "${DEMO_ITERS:-10}")
work=${DEMO_DIR:-$build/demo}
mkdir -p "$work"
work=$(cd "$work" && pwd)
own_db=${HETOPT_DB:-}
export HETOPT_DB=${HETOPT_DB:-$work/hetopt.db}
# Plans, run records and the OpenCL driver's kernel cache: the demo's own.
export XDG_CACHE_HOME=$work/cache
cd "$work"

has() { "$hetopt" "$1" --help >/dev/null 2>&1; }
step() { printf '\n== %s\n' "$*"; }

step "OpenCL devices (hetopt devices)"
"$hetopt" devices

if has characterize; then
  step "characterize this machine (quick mode; hetopt characterize)"
  "$hetopt" characterize --quick --plots "$work/plots"
fi
if has trace; then
  step "trace the application (hetopt trace)"
  "$hetopt" trace -o "$work/loop_wkr.trace" -- "$app" "${args[@]}"
  step "the compressed trace (hetopt show)"
  "$hetopt" show "$work/loop_wkr.trace"
fi
step "native run"
"$app" "${args[@]}"
step "hetopt run"
"$hetopt" run -- "$app" "${args[@]}" 2>"$work/run.err"
cat "$work/run.err" >&2
# Say what that run did, from its own words: the trace's measured transfer times and the curves
# decide, so a CPU device may be optimized too.
if did=$(sed -n 's/^hetopt: optimizing: //p' "$work/run.err") && [[ -n $did ]]; then
  echo "demo: hetopt run optimized the program: $did"
  if has trace; then
    step "hetopt run --stats (the same run, with what the shim did)"
    "$hetopt" run --stats -- "$app" "${args[@]}"
  fi
else
  why=$(sed -n 's/^hetopt: \(.*running unoptimized.*\)/\1/p' "$work/run.err" | head -n 1)
  echo "demo: hetopt run left the program untouched: ${why:-see its line above}"
  if has trace; then
    step "hetopt run --stats --policy opencl (a pool forced, to show what the shim does when it optimizes)"
    "$hetopt" run --stats --policy opencl -- "$app" "${args[@]}"
  fi
fi

step "next: your own programs"
if [[ -n $own_db ]]; then
  echo "The demo used your HETOPT_DB ($HETOPT_DB): its characterization serves your programs too."
  echo "Next, for your program:"
else
  echo "The demo kept everything in its own DB ($HETOPT_DB), not in hetopt's default DB"
  echo "(\$HETOPT_DB, else \${XDG_DATA_HOME:-~/.local/share}/hetopt/hetopt.db), and its plans and run"
  echo "records in $XDG_CACHE_HOME: your own programs have no characterization of this machine yet."
  echo "Next, once per machine (it measures more sizes than the quick one above, and shows its progress):"
  echo "  $hetopt characterize"
  echo "then, for your program:"
fi
echo "  $hetopt trace -- ./your_program args"
echo "  $hetopt run -- ./your_program args"
