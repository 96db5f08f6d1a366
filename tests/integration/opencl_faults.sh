#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Injected OpenCL errors (tests/fault_icd: a layer that fails the calls FAULTCL names). For each
# fault, fault_app runs under the fault layer without hetopt (the reference), then with the shim in
# trace mode, in optimize mode with a hand plan forcing a pool (opencl and hybrid policies, the
# shim's layer on either side of the fault layer, and no pool), and through `hetopt run --force`.
# Every run must print the reference's stdout (which lists the error each of the program's calls
# got: the shim neither hides nor changes them) and exit 3. Optimize mode must say once that the
# pool is unavailable and why, with the driver's status, and its own calls must have met the
# injected failure (more "faultcl:" lines than the reference).
#   opencl_faults.sh HETOPT SHIM FAULT_LAYER FAULT_APP
set -u
source "$(dirname "${BASH_SOURCE[0]}")/plan_lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/stats_lib.sh"
hetopt=$1 shim=$2 layer=$3 app=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-clfaults.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
unset HETOPT_MODE HETOPT_PLAN_FILE HETOPT_STATS HETOPT_MIN_TRACKED_SIZE HETOPT_SITE_DEPTH \
  HETOPT_POOL_WAIT_MS HETOPT_TRACE_FILE FAULTCL OPENCL_LAYERS
failed=0

HETOPT_MODE=count HETOPT_REPORT_FILE="$work/count" LD_PRELOAD="$shim" "$app" >/dev/null 2>&1
keys=$(awk '$1 == "site" { print $2 }' "$work/count")
[[ -n $keys ]] || { echo "FAIL: count mode saw no allocation site"; exit 1; }
for policy in opencl hybrid; do
  # shellcheck disable=SC2086
  write_plan "$work/$policy.plan" "$app" $policy $((8 << 20)) $keys ||
    { echo "FAIL: $app has no build id"; exit 1; }
  # shellcheck disable=SC2086
  PLAN_MODE=direct write_plan "$work/$policy.direct.plan" "$app" $policy $((8 << 20)) $keys
done
# A profile for `hetopt run --force`, traced without faults.
"$hetopt" trace -o "$work/clean.trace" -- "$app" >/dev/null 2>"$work/clean.err"
grep -q "profile stored" "$work/clean.err" || { echo "FAIL: hetopt trace stored no profile"; exit 1; }

# check FAULT NAME HETOPT_LINES PATTERN MORE_FAULTS -- CMD...: exit status and stdout of the
# reference, HETOPT_LINES lines from hetopt (one matching PATTERN when not empty), and more
# injected failures than the reference when MORE_FAULTS is 1 (the shim's own calls met them).
check() {
  local fault=$1 name=$2 want=$3 pattern=$4 more=$5 rc n faults
  shift 6
  FAULTCL=$fault "$@" >"$work/$name.out" 2>"$work/$name.err"
  rc=$?
  n=$(hetopt_messages "$work/$name.err")
  faults=$(grep -c '^faultcl:' "$work/$name.err")
  local why=''
  [[ $rc -eq $ref_rc ]] || why+=" exit status $rc, reference $ref_rc;"
  cmp -s "$work/ref.$fault.out" "$work/$name.out" || why+=" stdout differs from the reference;"
  [[ $n -eq $want ]] || why+=" $n lines from hetopt, expected $want;"
  [[ -z $pattern ]] || grep -Eq "$pattern" "$work/$name.err" || why+=" no line matching '$pattern';"
  if [[ $more -eq 1 ]]; then
    [[ $faults -gt $ref_faults ]] || why+=" $faults injected failures, not more than the reference's $ref_faults;"
  else
    [[ $faults -eq $ref_faults ]] || why+=" $faults injected failures, the reference had $ref_faults;"
  fi
  if [[ -n $why ]]; then
    echo "FAIL: $fault/$name:$why"; sed 's/^/    /' "$work/$name.err" "$work/$name.out"; failed=1
  else
    echo "ok: $fault/$name: $(grep '^hetopt' "$work/$name.err" | head -n 1 | cut -c1-160)"
  fi
}

for fault in host_buffer map context; do
  FAULTCL=$fault OPENCL_LAYERS="$layer" "$app" >"$work/ref.$fault.out" 2>"$work/ref.$fault.err"
  ref_rc=$?
  ref_faults=$(grep -c '^faultcl:' "$work/ref.$fault.err")
  if [[ $ref_rc -ne 3 || $ref_faults -eq 0 ]]; then
    echo "FAIL: $fault: the reference run exited $ref_rc with $ref_faults injected failures"
    failed=1; continue
  fi
  case $fault in
    host_buffer) opencl='clCreateBuffer\(CL_MEM_ALLOC_HOST_PTR\) failed \(OpenCL status -5\)'
                 hybrid='clCreateBuffer\(CL_MEM_USE_HOST_PTR\) failed \(OpenCL status -5\)' ;;
    map) opencl='clEnqueueMapBuffer failed \(OpenCL status -12\)' hybrid=$opencl ;;
    context) opencl='clCreateContext failed \(OpenCL status -6\)' hybrid=$opencl ;;
  esac
  unavailable="pinned pool unavailable \\($opencl\\); candidate allocations use ordinary memory"

  check $fault trace 0 '' 0 -- env LD_PRELOAD="$shim" OPENCL_LAYERS="$layer:$shim" \
    HETOPT_MODE=trace HETOPT_TRACE_FILE="$work/$fault.trace" "$app"
  "$hetopt" show "$work/$fault.trace" >"$work/$fault.show" 2>&1 ||
    { echo "FAIL: $fault/trace: hetopt show cannot read the trace"; cat "$work/$fault.show"; failed=1; }
  # The shim's layer below and above the fault layer: its own calls meet the faults either way.
  # The app allocates before it makes a context: the pool is made in a context of the shim's own
  # (HETOPT_POOL_CONTEXT=own HETOPT_POOL_WAIT_MS=5000), whose every OpenCL call meets the faults.
  for order in "$layer:$shim" "$shim:$layer"; do
    [[ $order == "$layer:"* ]] && side=above || side=below
    check $fault opencl_pool.$side 1 "$unavailable" 1 -- env LD_PRELOAD="$shim" \
      OPENCL_LAYERS="$order" HETOPT_POOL_CONTEXT=own HETOPT_POOL_WAIT_MS=5000 HETOPT_MODE=optimize HETOPT_PLAN_FILE="$work/opencl.plan" "$app"
  done
  check $fault hybrid_pool 1 "pinned pool unavailable \\($hybrid\\)" 1 -- env LD_PRELOAD="$shim" \
    OPENCL_LAYERS="$layer:$shim" HETOPT_POOL_CONTEXT=own HETOPT_POOL_WAIT_MS=5000 HETOPT_MODE=optimize HETOPT_PLAN_FILE="$work/hybrid.plan" "$app"
  # The candidate allocations wait for the direct policy (else, on a loaded machine, they come
  # before it is ready, go to malloc, and the app's own map meets the fault first).
  check $fault opencl_direct 1 "$unavailable" 1 -- env LD_PRELOAD="$shim" OPENCL_LAYERS="$layer:$shim" \
    HETOPT_POOL_CONTEXT=own HETOPT_POOL_WAIT_MS=5000 HETOPT_MODE=optimize HETOPT_PLAN_FILE="$work/opencl.direct.plan" "$app"
  # hetopt run puts its shim after the user's OPENCL_LAYERS (nearest the program); its "optimizing:" line
  # comes beside the failure's, and the stats (as JSON) say why there is no pool.
  check $fault run_force 2 "$unavailable" 1 -- env OPENCL_LAYERS="$layer" HETOPT_POOL_CONTEXT=own HETOPT_POOL_WAIT_MS=5000 \
    "$hetopt" run --force --policy opencl --stats="$work/$fault.run.json" -- "$app"
  stats_expect "$work/$fault.run.json" "s.pool_state == 'failed' and re.fullmatch(r'$opencl', s.pool_failure)" ||
    { echo "FAIL: $fault/run_force: the stats do not say why there is no pool"; failed=1; }
done

[[ $failed -eq 0 ]] && echo "OK: every injected OpenCL error handled"
exit $failed
