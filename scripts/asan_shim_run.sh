#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The preloaded shim built with ASan+UBSan (build-asan) inside uninstrumented test apps (build):
# LD_PRELOAD="<asan shim> libasan.so", so the program's malloc calls reach the shim first and the
# shim's "real" allocator (dlsym RTLD_NEXT) is ASan's. verify_asan_link_order=0 lets ASan start
# without coming first. Trace mode and optimize mode (hand plan forcing an opencl pool, and the
# direct no-pool mode) on each app: native stdout and exit status, no sanitizer report, and proof
# that the shim saw the program (optimize: blocks redirected). Not vector_new: under ASan, operator
# new is ASan's own and never calls malloc, so C++ allocations bypass the shim. Not alloc_torture:
# its forked children hang now and then inside ASan's allocator lock, taken by another thread at
# fork (GCC 12's ASan does not lock its allocator around fork); docs/results.md "Sanitizers".
# Called by scripts/sanitize.sh asan-shim.
#   asan_shim_run.sh ASAN_SHIM BUILD_DIR
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../tests/integration/plan_lib.sh"
shim=$(readlink -f "$1") build=$(readlink -f "$2")
asan=$(gcc -print-file-name=libasan.so)
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-asanshim.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
unset HETOPT_MODE HETOPT_PLAN_FILE HETOPT_STATS HETOPT_TRACE_FILE OPENCL_LAYERS
export ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0:abort_on_error=0:use_sigaltstack=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
failed=0
under() { timeout 120 env LD_PRELOAD="$shim $asan" OPENCL_LAYERS="$shim" "$@"; }

run() {  # run NAME EXPECT_PATTERN -- CMD...
  local name=$1 pattern=$2 rc why=''
  shift 3
  "$@" >"$work/$name.out" 2>"$work/$name.err"
  rc=$?
  [[ $rc -eq $native_rc ]] || why+=" exit status $rc, native $native_rc;"
  cmp -s "$work/native.out" "$work/$name.out" || why+=" stdout differs from native;"
  ! grep -Eq 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$work/$name.err" ||
    why+=" sanitizer report;"
  [[ -z $pattern ]] || grep -Eq "$pattern" "$work/$name.err" || why+=" no '$pattern';"
  if [[ -n $why ]]; then echo "FAIL: $name:$why"; head -n 40 "$work/$name.err"; failed=1
  else echo "ok: $name"; fi
}

for spec in "loop_wkr --size 256K --iters 5" "calloc_realloc --size 256K --iters 5" \
            "two_threads --size 256K --iters 5" "exit3_app"; do
  read -r -a cmd <<<"$spec"
  app=$build/bin/${cmd[0]}
  args=("${cmd[@]:1}")
  name=${cmd[0]}
  "$app" "${args[@]}" >"$work/native.out" 2>/dev/null
  native_rc=$?
  run $name.trace '' -- under env HETOPT_MODE=trace HETOPT_TRACE_FILE="$work/$name.trace" "$app" "${args[@]}"
  "$build/bin/hetopt" show "$work/$name.trace" >"$work/$name.show" 2>&1 ||
    { echo "FAIL: $name.trace: unreadable trace"; failed=1; }
  HETOPT_MODE=count HETOPT_REPORT_FILE="$work/$name.count" LD_PRELOAD="$build/lib/libhetopt_shim.so" \
    "$app" "${args[@]}" >/dev/null 2>&1
  keys=$(awk '$1 == "site" { print $2 }' "$work/$name.count")
  # shellcheck disable=SC2086
  write_plan "$work/$name.plan" "$app" opencl $((64 << 20)) $keys
  # shellcheck disable=SC2086
  PLAN_MODE=direct write_plan "$work/$name.direct.plan" "$app" opencl $((64 << 20)) $keys
  run $name.optimize 'redirected [1-9][0-9]* allocations?' -- under env HETOPT_MODE=optimize \
    HETOPT_PLAN_FILE="$work/$name.plan" HETOPT_STATS=1 "$app" "${args[@]}"
  run $name.direct 'redirected [1-9][0-9]* allocations?' -- under env HETOPT_MODE=optimize \
    HETOPT_PLAN_FILE="$work/$name.direct.plan" HETOPT_STATS=1 "$app" "${args[@]}"
done
[[ $failed -eq 0 ]] && echo "OK: the ASan+UBSan shim found nothing"
exit $failed
