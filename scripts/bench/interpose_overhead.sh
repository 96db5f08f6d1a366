#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Interposition overhead: runs bench_interpose natively, with the shim preloaded in pass-through
# mode, and in optimize mode under a plan whose only site takes 1-2 GiB blocks (so every
# allocation the benchmark makes is one the plan does not take: what optimize mode costs the rest
# of a program), alternating, RUNS times each; prints the median ns per iteration of each
# benchmark and the shim's added cost. Usage: interpose_overhead.sh BUILD_DIR [RUNS]
set -euo pipefail
build=${1:?usage: interpose_overhead.sh BUILD_DIR [RUNS]}
runs=${2:-5}
bench=$build/bin/bench_interpose
shim=$build/lib/libhetopt_shim.so
[[ -x $bench && -f $shim ]] || { echo "build bench_interpose and hetopt_shim first" >&2; exit 2; }
out=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
command -v readelf >/dev/null || { echo "interpose_overhead: needs readelf (binutils)" >&2; exit 2; }
build_id=$(readelf -n "$bench" | awk '/Build ID/ {print $3}')
[[ -n $build_id ]] || { echo "interpose_overhead: $bench has no build id" >&2; exit 2; }
# A plan for this very binary (contracts/plan.h) with one register site of 1-2 GiB.
printf 'hetopt-plan 2\nprogram %s build-id:%s\ndevice %s\npool none 0\nsite 0000000000000001 1073741824 2147483648 register\n' \
  "$(readlink -f "$bench")" "$build_id" "${HETOPT_DEVICE:-}" >"$out/plan"
chmod 600 "$out/plan"

for ((i = 0; i < runs; ++i)); do
  "$bench" --benchmark_format=json --benchmark_min_time=0.2 >"$out/native.$i.json" 2>/dev/null
  LD_PRELOAD=$shim OPENCL_LAYERS=$shim HETOPT_MODE=off \
    "$bench" --benchmark_format=json --benchmark_min_time=0.2 >"$out/shim.$i.json" 2>/dev/null
  LD_PRELOAD=$shim OPENCL_LAYERS=$shim HETOPT_MODE=optimize HETOPT_PLAN_FILE=$out/plan \
    "$bench" --benchmark_format=json --benchmark_min_time=0.2 >"$out/optimize.$i.json" 2>/dev/null
done

python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def load(kind):
    per = {}
    for i in range(runs):
        for b in json.load(open(f"{out}/{kind}.{i}.json"))["benchmarks"]:
            ns = b["cpu_time"] * {"ns": 1, "us": 1e3, "ms": 1e6}[b["time_unit"]]
            per.setdefault(b["name"], []).append(ns)
    return {k: statistics.median(v) for k, v in per.items()}
native, shim, opt = load("native"), load("shim"), load("optimize")
ctx = json.load(open(f"{out}/native.0.json"))["context"]
print(f"host: {ctx.get('host_name')}  cpus: {ctx.get('num_cpus')} @ {ctx.get('mhz_per_cpu')} MHz  runs: {runs} (median)")
print(f"{'benchmark':34s} {'native ns':>10s} {'shim ns':>10s} {'added ns':>9s} {'optimize ns':>12s} {'added ns':>9s}")
for name in native:
    n, s, o = native[name], shim.get(name, float('nan')), opt.get(name, float('nan'))
    print(f"{name:34s} {n:10.1f} {s:10.1f} {s - n:9.1f} {o:12.1f} {o - n:9.1f}")
PY
