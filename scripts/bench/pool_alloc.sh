#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Pool allocator against glibc: runs bench_pool with RUNS interleaved repetitions of every case
# (pool and glibc alternate in random order within one process, so machine noise hits both alike)
# and prints the median CPU ns per alloc+free pair and glibc's cost as a multiple of the pool's.
# Usage: pool_alloc.sh BUILD_DIR [RUNS]
set -euo pipefail
build=${1:?usage: pool_alloc.sh BUILD_DIR [RUNS]}
runs=${2:-15}
bench=$build/bin/bench_pool
[[ -x $bench ]] || { echo "build bench_pool first" >&2; exit 2; }
out=$(mktemp "${TMPDIR:-/tmp}/hetopt-pool-bench.XXXXXX.json")
trap 'rm -f "$out"' EXIT

"$bench" --benchmark_repetitions="$runs" --benchmark_enable_random_interleaving=true \
  --benchmark_min_time=0.1 --benchmark_report_aggregates_only=true \
  --benchmark_format=json >"$out" 2>/dev/null

python3 - "$out" "$runs" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
unit = {"ns": 1, "us": 1e3, "ms": 1e6}
med = {}
for b in doc["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    alloc, rest = b["run_name"].split("/", 1)          # pool/4KiB/threads:1
    case, threads = rest.rsplit("/threads:", 1)
    med[(alloc, case, int(threads))] = b["cpu_time"] * unit[b["time_unit"]]
ctx = doc["context"]
print(f"host: {ctx.get('host_name')}  cpus: {ctx.get('num_cpus')} @ {ctx.get('mhz_per_cpu')} MHz  "
      f"load: {ctx.get('load_avg')}  runs: {sys.argv[2]} (median CPU time per alloc+free pair)")
print(f"{'case':8s} {'threads':>7s} {'pool ns':>9s} {'glibc ns':>9s} {'glibc/pool':>10s}")
order = ["4KiB", "64KiB", "1MiB", "16MiB", "64MiB", "mixed"]
pool = sorted((k for k in med if k[0] == "pool"),
              key=lambda k: (order.index(k[1]) if k[1] in order else len(order), k[2]))
for (alloc, case, threads) in pool:
    ns = med[(alloc, case, threads)]
    g = med.get(("glibc", case, threads), float("nan"))
    print(f"{case:8s} {threads:7d} {ns:9.1f} {g:9.1f} {g / ns:10.2f}")
PY
