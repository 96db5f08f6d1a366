#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# In-place registration on the real OpenCL implementation:
#   (a) static_mmap through the whole pipeline (`hetopt trace`, then `hetopt run --policy register`,
#       which plans every static range and anonymous mapping whatever PoCL's curves say): stdout
#       identical to native; the static range and the mapping registered; every transfer counted
#       as from registered memory; the mapping unpinned before the program's munmap.
#   (b) remap_app under a hand plan registering mappings of 1 MiB and more: munmap, a new mapping
#       at the same address, mremap, madvise(MADV_DONTNEED), a MAP_FIXED replacement and a mapping
#       no device accepts (registration refused): stdout identical to native, each counted.
#   register_inplace.sh HETOPT SHIM STATIC_MMAP REMAP_APP
set -u
source "$(dirname "${BASH_SOURCE[0]}")/plan_lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/stats_lib.sh"
hetopt=$1 shim=$2 static_mmap=$3 remap=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-register.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
unset HETOPT_MODE HETOPT_PLAN_FILE HETOPT_STATS HETOPT_STATS_JSON
failed=0
fail() { echo "FAIL: $*"; failed=1; }
# stat RUN KEY: the in-place registry's KEY in RUN's stats as JSON ($work/RUN.json).
stat() { stats_get "$work/$1.json" "registered_in_place.$2" 2>/dev/null; }
expect() {  # expect RUN WHAT KEY OP VALUE
  local v
  v=$(stat "$1" "$3")
  [[ -n $v ]] && test "$v" "$4" "$5" || fail "$1: $2 ($3) is '${v}', expected $4 $5"
}

# ---- (a) static_mmap, traced and run with its profile ------------------------------------------
iters=5
args=(--size 256K --iters $iters)
"$static_mmap" "${args[@]}" >"$work/native.out" 2>/dev/null || fail "static_mmap natively"
"$hetopt" trace -o "$work/s.trace" -- "$static_mmap" "${args[@]}" >/dev/null 2>"$work/trace.err"
grep -q "profile stored" "$work/trace.err" || { fail "hetopt trace stored no profile"; cat "$work/trace.err"; }
"$hetopt" run --stats="$work/a.json" --policy register -- "$static_mmap" "${args[@]}" >"$work/a.out" 2>"$work/a.err" ||
  fail "hetopt run static_mmap exited $?"
cmp -s "$work/native.out" "$work/a.out" || fail "static_mmap: stdout differs from native"
grep -q '^register static [0-9a-f]\{16\} [0-9]* 262144$' "$work"/cache/hetopt/plans/*.plan ||
  fail "static_mmap: the plan has no 256 KiB static range"
grep -q '^register mmap 262144 ' "$work"/cache/hetopt/plans/*.plan ||
  fail "static_mmap: the plan registers no mapping"
expect a "static ranges registered" static_ranges -eq 1
expect a "mappings registered" mappings -eq 1
# A transfer before the shim's context exists (a loaded machine) runs pageable: one per range.
expect a "h2d transfers from registered memory" h2d -ge $((2 * iters - 2))
expect a "d2h transfers from registered memory" d2h -ge $((iters - 1))
expect a "unpinned before unmap" unpinned_before_unmap -eq 1

# ---- (b) mappings that come and go, and one no device accepts ----------------------------------
"$remap" >"$work/remap_native.out" 2>"$work/remap_native.err" || fail "remap_app natively"
write_register_plan "$work/remap.plan" "$remap" "register mmap 1048576 4611686018427387904" ||
  fail "remap_app has no build id"
env LD_PRELOAD="$shim" OPENCL_LAYERS="$shim" HETOPT_MODE=optimize HETOPT_PLAN_FILE="$work/remap.plan" \
  HETOPT_STATS_JSON="$work/b.json" "$remap" >"$work/b.out" 2>"$work/b.err" || fail "remap_app under the shim exited $?"
cmp -s "$work/remap_native.out" "$work/b.out" ||
  { fail "remap_app: stdout differs from native"; diff "$work/remap_native.out" "$work/b.out"; }
# Steps 1-5 register (mremap, madvise and MAP_FIXED each unpin first and register anew); step 6
# is refused and stays pageable. Step 1 may come before the shim's context exists (a loaded
# machine): then it runs pageable and only steps 2-5 count.
expect b "mappings registered" mappings -ge 4
expect b "mappings registered" mappings -le 5
expect b "refused registrations" refused -eq 1
expect b "unpinned before unmap" unpinned_before_unmap -ge 4
expect b "h2d transfers from registered memory" h2d -ge 4
expect b "d2h transfers from registered memory" d2h -ge 4
# Every registration of a mapping that went away was released first.
[[ $(stat b mappings) == $(stat b unpinned_before_unmap) ]] ||
  fail "b: not every registration was released before its mapping went away"

if [[ $failed -ne 0 ]]; then
  for f in "$work"/*.err; do echo "--- $f"; tail -n 5 "$f"; done
  exit 1
fi
echo "OK: in-place registration"
