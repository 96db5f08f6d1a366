#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where tracing overhead comes from, for one test-app run: native, the shim preloaded but off
# (loading it), in count mode (interception only), `hetopt trace --no-analyze` (recording only)
# with HETOPT_TIME_SAMPLE=0 (queues left unprofiled, no device times) and by default, and whole
# `hetopt trace` (recording, then the analysis) with HETOPT_TIME_SAMPLE=0, the default (sampled,
# timed commands on twin queues), 1 (every command timed), and HETOPT_TIME_QUEUE=profiled (every
# queue profiled: the way before twin queues). Run it with '--iters 1' too: the
# difference between the two is what each variant costs per call. Variants run interleaved, one
# of each per round in a new (seeded) order each round, RUNS rounds, so load drift on a shared
# machine and a variant's place in the round hit all alike; prints median wall and CPU (user +
# system of the process and its threads) per variant against native. VARIANTS="prefix|..." keeps
# only the rows whose names start so (and native).
#   trace_variants.sh BUILD_DIR [RUNS] [APP:ARGS]     (default 'loop_wkr:--size 4K --iters 20000')
set -euo pipefail
build=${1:?usage: trace_variants.sh BUILD_DIR [RUNS] [APP:ARGS]}
runs=${2:-7}
case=${3:-loop_wkr:--size 4K --iters 20000}
[[ -x $build/bin/hetopt ]] || { echo "build hetopt first" >&2; exit 2; }
echo "machine: $(uname -n), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "device: $("$build/bin/loop_wkr" --size 4K --iters 1 2>/dev/null | sed -n 's/^device: //p')"
exec python3 - "$build" "$runs" "$case" <<'PY'
import os, random, resource, statistics, subprocess, sys, tempfile, time

build, runs, case = sys.argv[1], int(sys.argv[2]), sys.argv[3]
app, args = case.split(":", 1)
cmd = [os.path.join(build, "bin", app)] + args.split()
load = lambda: " ".join(open("/proc/loadavg").read().split()[:3])
with tempfile.TemporaryDirectory(prefix="hetopt-trace-variants.") as tmp:
    trace = [os.path.join(build, "bin", "hetopt"), "trace", "-o", os.path.join(tmp, "t.trace"), "--"]
    shim = os.path.join(build, "lib", "libhetopt_shim.so")
    record = trace[:2] + ["--no-analyze"] + trace[2:]
    variants = {
        "native": (cmd, {}),
        "shim preloaded, HETOPT_MODE=off": (cmd, {"LD_PRELOAD": shim, "HETOPT_MODE": "off"}),
        "count mode (interception)": (cmd, {"LD_PRELOAD": shim, "HETOPT_MODE": "count",
                                            "HETOPT_REPORT_FILE": "/dev/null"}),
        "trace --no-analyze, TIME_SAMPLE=0": (record + cmd, {"HETOPT_TIME_SAMPLE": "0"}),
        "trace --no-analyze, default": (record + cmd, {}),
        "trace, HETOPT_TIME_SAMPLE=0": (trace + cmd, {"HETOPT_TIME_SAMPLE": "0"}),
        "trace, default (sampled)": (trace + cmd, {}),
        "trace, HETOPT_TIME_SAMPLE=1": (trace + cmd, {"HETOPT_TIME_SAMPLE": "1"}),
        "trace, HETOPT_TIME_QUEUE=profiled": (trace + cmd, {"HETOPT_TIME_QUEUE": "profiled"}),
    }
    print(f"{case}; date: {time.strftime('%Y-%m-%d', time.gmtime())}, {runs} rounds (median); "
          f"load average before: {load()}")
    only = [v.strip() for v in os.environ.get("VARIANTS", "").split("|") if v.strip()]
    if only:  # VARIANTS="a|b": only the rows whose names start so (native always runs)
        variants = {k: v for k, v in variants.items() if k == "native" or any(k.startswith(o) for o in only)}
    got = {k: [] for k in variants}
    order = list(variants)
    shuffle = random.Random(20261123)  # repeatable: the same orders on every machine
    for _ in range(runs):
        # A new order each round: a variant's place in the round (right after a heavy one, first
        # after a pause) must not bias it.
        shuffle.shuffle(order)
        for name in order:
            c, env = variants[name]
            e = dict(os.environ)
            e.pop("HETOPT_TIME_SAMPLE", None)
            e.pop("HETOPT_TIME_QUEUE", None)
            e.update(env)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.monotonic()
            r = subprocess.run(c, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wall = time.monotonic() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if r.returncode != 0:
                sys.exit(f"failed ({r.returncode}): {name}: {' '.join(c)}")
            got[name].append((wall * 1e3, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3))
nw = statistics.median(w for w, _ in got["native"])
nc = statistics.median(c for _, c in got["native"])
for name, v in got.items():
    w, c = statistics.median(x for x, _ in v), statistics.median(y for _, y in v)
    print(f"{name:34s} wall {w:7.0f} ms {100 * (w - nw) / nw:+6.1f}%   cpu {c:7.0f} ms {100 * (c - nc) / nc:+6.1f}%")
print(f"load average after: {load()}")
PY
