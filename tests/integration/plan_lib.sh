# SPDX-License-Identifier: MIT
# Sourced by the integration scripts that run optimize mode without the analyzer: a hand-written
# plan (contracts/plan.h format) naming allocation sites found by count mode, or memory to register.

# write_plan FILE PROGRAM POLICY POOL_BYTES KEY...: a 0600 plan serving every KEY (any size) from a
# POLICY pool of POOL_BYTES for PROGRAM, on $HETOPT_DEVICE. Returns 1 when PROGRAM has no build id.
# PLAN_MODE=direct adds `pool-mode direct` (no pool); PLAN_PROFILE="<allocations> <min> <max>
# <typical> <peak-bytes> <peak-blocks>" gives every site that profile (the conformance check).
# PLAN_STRATEGY=register registers every site's blocks in place (no pool: POLICY and POOL_BYTES
# are ignored); PLAN_WAIT=<ns per MiB> lets transfers wait that long for pinning and adds a
# register-cost line (so that a pool site's block registers in place when the pool is not ready);
# PLAN_EARLY=1 adds `context early` (the shim makes the program's context at start-up).
write_plan() {
  local file=$1 prog=$2 policy=$3 bytes=$4 k opts=""
  shift 4
  [[ ${PLAN_STRATEGY:-} == register ]] && { policy=none bytes=0 opts=" register"; }
  [[ -n ${PLAN_WAIT:-} ]] && opts+=" wait $PLAN_WAIT"
  plan_head "$prog" "$policy $bytes" >"$file" || return 1
  {
    [[ -z ${PLAN_MODE:-} ]] || echo "pool-mode $PLAN_MODE"
    [[ -z ${PLAN_WAIT:-} ]] || echo "register-cost 1000 100000"
    [[ -z ${PLAN_EARLY:-} ]] || echo "context early"
    for k in "$@"; do echo "site $k 0 18446744073709551615$opts${PLAN_PROFILE:+ profile $PLAN_PROFILE}"; done
  } >>"$file"
  chmod 600 "$file"
}

# plan_head PROGRAM POOL: the header, program, device and pool lines of a plan for PROGRAM; returns
# 1 when PROGRAM has no build id.
plan_head() {
  local build_id
  build_id=$(readelf -n "$1" | awk '/Build ID/ { print $3 }')
  [[ -n $build_id ]] || return 1
  echo "hetopt-plan 2"
  echo "program $(readlink -f "$1") build-id:$build_id"
  echo "device ${HETOPT_DEVICE:-}"
  echo "pool $2"
}

# write_register_plan FILE PROGRAM LINE...: a 0600 plan for PROGRAM with no pool and only the given
# registration lines ("register static KEY OFFSET BYTES", "register mmap MIN MAX"). Returns 1 when
# PROGRAM has no build id.
write_register_plan() {
  local file=$1 prog=$2 line
  shift 2
  plan_head "$prog" "none 0" >"$file" || return 1
  for line in "$@"; do echo "$line"; done >>"$file"
  chmod 600 "$file"
}
