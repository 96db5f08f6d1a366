#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Tracing overhead: wall time of whole test-app runs natively and under `hetopt trace`,
# alternating, RUNS times each, in the same session; prints the medians, the overhead in percent
# (target: at most 5% for runs of a second or more) and the trace size.
#   trace_overhead.sh BUILD_DIR [RUNS] [APP:ARGS]...
# Default apps and arguments are chosen to run at least a second on PoCL with 2 cores; on a GPU
# pass your own, e.g. 'loop_wkr:--size 64M --iters 200'.
set -euo pipefail
build=${1:?usage: trace_overhead.sh BUILD_DIR [RUNS] [APP:ARGS]...}
runs=${2:-5}
shift $(( $# >= 2 ? 2 : 1 ))
cases=("$@")
if [[ ${#cases[@]} -eq 0 ]]; then
  cases=("loop_wkr:--size 4K --iters 20000"
         "loop_wkr:--size 16M --iters 20"
         "selective_alloc:--size 8M --iters 20"
         "async_events:--size 8M --iters 40"
         "two_threads:--size 4M --iters 40"
         "vector_new:--size 16M --iters 20")
fi
hetopt=$build/bin/hetopt
[[ -x $hetopt ]] || { echo "build hetopt first" >&2; exit 2; }
out=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-trace-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT

now() { date +%s%N; }
echo "machine: $(uname -n), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "device: $("$build/bin/loop_wkr" --size 4K --iters 1 2>/dev/null | sed -n 's/^device: //p')"
echo "date: $(date -u +%Y-%m-%d), runs: $runs per variant (median), alternating native/traced"
printf '%-16s %-26s %10s %10s %9s %10s\n' app arguments native_ms traced_ms overhead trace_B
for c in "${cases[@]}"; do
  app=${c%%:*} args=${c#*:}
  read -r -a argv <<<"$args"
  : >"$out/native" ; : >"$out/traced"
  for ((i = 0; i < runs; ++i)); do
    t0=$(now); "$build/bin/$app" "${argv[@]}" >/dev/null 2>&1; t1=$(now)
    echo $(( (t1 - t0) / 1000 )) >>"$out/native"
    t0=$(now); "$hetopt" trace -o "$out/t.trace" -- "$build/bin/$app" "${argv[@]}" >/dev/null 2>&1; t1=$(now)
    echo $(( (t1 - t0) / 1000 )) >>"$out/traced"
  done
  python3 - "$out" "$app" "$args" "$(stat -c %s "$out/t.trace")" <<'PY'
import statistics, sys
out, app, args, size = sys.argv[1:5]
n = statistics.median(int(x) for x in open(f"{out}/native")) / 1000
t = statistics.median(int(x) for x in open(f"{out}/traced")) / 1000
print(f"{app:16s} {args:26s} {n:10.1f} {t:10.1f} {100 * (t - n) / n:8.1f}% {size:>10s}")
PY
done
