# SPDX-License-Identifier: MIT
# Sourced by the integration scripts that run optimize mode without the analyzer: a hand-written
# plan (common/plan.h format) naming allocation sites found by count mode, or memory to register.

# write_plan FILE PROGRAM POLICY POOL_BYTES KEY...: a 0600 plan serving every KEY (any size) from a
# POLICY pool of POOL_BYTES for PROGRAM, on $HETOPT_DEVICE. Returns 1 when PROGRAM has no build id.
# PLAN_MODE=direct adds `pool-mode direct` (no pool); PLAN_PROFILE="<allocations> <min> <max>
# <typical> <peak-bytes> <peak-blocks>" gives every site that profile (the conformance check).
write_plan() {
  local file=$1 prog=$2 policy=$3 bytes=$4 build_id k
  shift 4
  build_id=$(readelf -n "$prog" | awk '/Build ID/ { print $3 }')
  [[ -n $build_id ]] || return 1
  {
    echo "hetopt-plan 1"
    echo "program $(readlink -f "$prog") build-id:$build_id"
    echo "device ${HETOPT_DEVICE:-}"
    echo "pool $policy $bytes"
    [[ -z ${PLAN_MODE:-} ]] || echo "pool-mode $PLAN_MODE"
    for k in "$@"; do echo "site $k 0 18446744073709551615${PLAN_PROFILE:+ profile $PLAN_PROFILE}"; done
  } >"$file"
  chmod 600 "$file"
}

# write_register_plan FILE PROGRAM LINE...: a 0600 plan for PROGRAM with no pool and only the given
# registration lines ("register static KEY OFFSET BYTES", "register mmap MIN MAX"). Returns 1 when
# PROGRAM has no build id.
write_register_plan() {
  local file=$1 prog=$2 build_id line
  shift 2
  build_id=$(readelf -n "$prog" | awk '/Build ID/ { print $3 }')
  [[ -n $build_id ]] || return 1
  {
    echo "hetopt-plan 1"
    echo "program $(readlink -f "$prog") build-id:$build_id"
    echo "device ${HETOPT_DEVICE:-}"
    echo "pool none 0"
    for line in "$@"; do echo "$line"; done
  } >"$file"
  chmod 600 "$file"
}
