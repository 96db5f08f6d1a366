#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Tracing overhead: whole test-app runs natively and under `hetopt trace`, alternating, RUNS times
# each, in the same session. Prints per case the median wall time and the median CPU time (user +
# system of the process and its threads: steadier than wall time on a shared machine) of each
# variant, the overheads in percent (target: at most 5% of wall time for runs of a second or
# more), the trace size, the median of each traced run's overhead over the native run right
# before it (pair), the native runs' own spread (noise: half their range over their median), and
# what the last trace says recording cost, in % of its traced time (rec: format 3 traces).
#   trace_overhead.sh BUILD_DIR [RUNS] [APP:ARGS]...
# Default apps and arguments run about a second or more on PoCL with 2 cores; on a GPU pass your
# own, e.g. 'loop_wkr:--size 64M --iters 200'.
set -euo pipefail
build=${1:?usage: trace_overhead.sh BUILD_DIR [RUNS] [APP:ARGS]...}
runs=${2:-5}
shift $(( $# >= 2 ? 2 : 1 ))
[[ -x $build/bin/hetopt ]] || { echo "build hetopt first" >&2; exit 2; }
echo "machine: $(uname -n), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "device: $("$build/bin/loop_wkr" --size 4K --iters 1 2>/dev/null | sed -n 's/^device: //p')"
exec python3 - "$build" "$runs" "$@" <<'PY'
import json, os, resource, statistics, subprocess, sys, tempfile, time

build, runs, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
if not cases:
    cases = ["loop_wkr:--size 4K --iters 20000", "loop_wkr:--size 64M --iters 30",
             "selective_alloc:--size 16M --iters 40", "async_events:--size 16M --iters 300",
             "two_threads:--size 4M --iters 500", "vector_new:--size 32M --iters 40"]
hetopt = os.path.join(build, "bin", "hetopt")

def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])

def timed(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall * 1e3, cpu * 1e3

print(f"date: {time.strftime('%Y-%m-%d', time.gmtime())}, runs: {runs} per variant (median), "
      f"alternating native/traced; load average before: {load()}")
print(f"{'app':16s} {'arguments':26s} {'wall ms':>16s} {'wall +%':>8s} {'cpu ms':>16s} {'cpu +%':>7s} {'trace B':>8s} "
      f"{'pair +%':>8s} {'noise %':>8s} {'rec %':>6s}")


def recording_share(path):
    """What the last trace says recording cost, in % of its traced time (format 3), or None."""
    r = subprocess.run([hetopt, "show", "--json", path], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    t = json.loads(r.stdout)
    if not t["summary"].get("recording_ns") or not t["duration_ns"]:
        return None
    return 100 * t["summary"]["recording_ns"] / t["duration_ns"]


with tempfile.TemporaryDirectory(prefix="hetopt-trace-bench.") as tmp:
    trace = os.path.join(tmp, "t.trace")
    for case in cases:
        app, args = case.split(":", 1)
        cmd = [os.path.join(build, "bin", app)] + args.split()
        native, traced = [], []
        for _ in range(runs):
            native.append(timed(cmd))
            traced.append(timed([hetopt, "trace", "-o", trace, "--"] + cmd))
        nw, tw = statistics.median(w for w, _ in native), statistics.median(w for w, _ in traced)
        nc, tc = statistics.median(c for _, c in native), statistics.median(c for _, c in traced)
        # Each traced run against the native run just before it (drift on a shared machine hits
        # both alike), and how far native runs alone spread: half their range over their median.
        pair = statistics.median(t[0] / n[0] - 1 for n, t in zip(native, traced))
        noise = (max(w for w, _ in native) - min(w for w, _ in native)) / 2 / nw
        rec = recording_share(trace)
        rec_text = f"{rec:5.1f}%" if rec is not None else "     -"
        print(f"{app:16s} {args:26s} {nw:7.0f} -> {tw:6.0f} {100 * (tw - nw) / nw:7.1f}% "
              f"{nc:7.0f} -> {tc:6.0f} {100 * (tc - nc) / nc:6.1f}% {os.path.getsize(trace):8d} "
              f"{100 * pair:7.1f}% {100 * noise:7.1f}% {rec_text}")
print(f"load average after: {load()}")
PY
