#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Interposition overhead in pass-through mode: runs bench_interpose natively and with the shim
# preloaded, alternating, RUNS times each; prints the median ns per iteration of each benchmark
# and the difference (the shim's added cost). Usage: interpose_overhead.sh BUILD_DIR [RUNS]
set -euo pipefail
build=${1:?usage: interpose_overhead.sh BUILD_DIR [RUNS]}
runs=${2:-5}
bench=$build/bin/bench_interpose
shim=$build/lib/libhetopt_shim.so
[[ -x $bench && -f $shim ]] || { echo "build bench_interpose and hetopt_shim first" >&2; exit 2; }
out=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT

for ((i = 0; i < runs; ++i)); do
  "$bench" --benchmark_format=json --benchmark_min_time=0.2 >"$out/native.$i.json" 2>/dev/null
  LD_PRELOAD=$shim OPENCL_LAYERS=$shim HETOPT_MODE=off \
    "$bench" --benchmark_format=json --benchmark_min_time=0.2 >"$out/shim.$i.json" 2>/dev/null
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
native, shim = load("native"), load("shim")
ctx = json.load(open(f"{out}/native.0.json"))["context"]
print(f"host: {ctx.get('host_name')}  cpus: {ctx.get('num_cpus')} @ {ctx.get('mhz_per_cpu')} MHz  runs: {runs} (median)")
print(f"{'benchmark':34s} {'native ns':>10s} {'shim ns':>10s} {'added ns':>9s}")
for name in native:
    n, s = native[name], shim.get(name, float('nan'))
    print(f"{name:34s} {n:10.1f} {s:10.1f} {s - n:9.1f}")
PY
