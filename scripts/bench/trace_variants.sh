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
# machine and a variant's place in the round hit all alike.
#
# Prints per variant the median wall and CPU time (user + system of the process and its threads,
# hetopt's own included) against native, and the paired figure: each run against the native run
# of the same round, median [smallest..largest] over the rounds (drift between rounds cancels).
# The `hetopt trace` variants run with HETOPT_TIMINGS=1, and a second table gives the medians of
# what they report about themselves: hetopt's time before the program and after it (reading the
# traces, the analysis and its parts, the DB), the recording thread's CPU time and the shim's work
# at exit, and the program threads' own recording cost as the trace estimates it.
#
# VARIANTS="prefix|..." keeps only the rows whose names start so (and native); VARIANTS=split is
# the whole-command split: native, `trace --no-analyze` (program + recording) and `trace`
# (everything). BASE=OTHER_BUILD_DIR adds that build's trace variants as rows "base: ..." in the
# same rounds (before/after on one machine at one time).
#   trace_variants.sh BUILD_DIR [RUNS] [APP:ARGS]     (default 'loop_wkr:--size 4K --iters 20000')
set -euo pipefail
build=${1:?usage: trace_variants.sh BUILD_DIR [RUNS] [APP:ARGS]}
runs=${2:-7}
case=${3:-loop_wkr:--size 4K --iters 20000}
[[ -x $build/bin/hetopt ]] || { echo "build hetopt first" >&2; exit 2; }
[[ -z ${BASE:-} || -x ${BASE:-}/bin/hetopt ]] || { echo "BASE=$BASE has no bin/hetopt" >&2; exit 2; }
echo "machine: $(uname -n), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "device: $("$build/bin/loop_wkr" --size 4K --iters 1 2>/dev/null | sed -n 's/^device: //p')"
exec python3 - "$build" "$runs" "$case" <<'PY'
import os, random, re, resource, statistics, subprocess, sys, tempfile, time

build, runs, case = sys.argv[1], int(sys.argv[2]), sys.argv[3]
base = os.environ.get("BASE", "")
app, args = case.split(":", 1)
cmd = [os.path.join(build, "bin", app)] + args.split()
load = lambda: " ".join(open("/proc/loadavg").read().split()[:3])
UNITS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def timings(err):
    """What a `hetopt trace` run said about its own time (HETOPT_TIMINGS=1), in ms."""
    got = {}
    m = re.search(r"timings: before the program ([\d.]+) ms .*?; the program ([\d.]+) ms; after it "
                  r"([\d.]+) ms \(CPU ([\d.]+)\)(?:: (.*))?", err)
    if m:
        got["before the program"] = float(m[1])
        got["after it"] = float(m[3])
        got["after it, CPU"] = float(m[4])
        for name, wall, cpu in re.findall(r"(?:^|, )([^,]+?) ([\d.]+) ms \(CPU ([\d.]+)\)", m[5] or ""):
            got[f"  {name}"] = float(wall)
            got[f"  {name}, CPU"] = float(cpu)
    m = re.search(r"timings: recording thread ([\d.]+) ms CPU; at exit ([\d.]+) ms", err)
    if m:
        got["recording thread, CPU"] = float(m[1])
        got["shim at exit"] = float(m[2])
    m = re.search(r"recording \(hetopt's own time after each call\): .*?~([\d.]+) (ns|us|ms|s) in all", err)
    if m:
        got["program threads' recording (trace's estimate)"] = float(m[1]) * UNITS[m[2]]
    return got


with tempfile.TemporaryDirectory(prefix="hetopt-trace-variants.") as tmp:
    def tracer(b, name, *extra):
        return [os.path.join(b, "bin", "hetopt"), "trace", *extra, "-o", os.path.join(tmp, name), "--"]
    trace, record = tracer(build, "t.trace"), tracer(build, "t.trace", "--no-analyze")
    shim = os.path.join(build, "lib", "libhetopt_shim.so")
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
    if base:
        # The other build runs its own copy of the program: the same source, its own binary.
        base_cmd = [os.path.join(base, "bin", app)] + args.split()
        variants["base: trace --no-analyze, default"] = (tracer(base, "b.trace", "--no-analyze") + base_cmd, {})
        variants["base: trace, default (sampled)"] = (tracer(base, "b.trace") + base_cmd, {})
    print(f"{case}; date: {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {runs} rounds (median); "
          f"load average before: {load()}" + (f"; base build: {base}" if base else ""))
    only = [v.strip() for v in os.environ.get("VARIANTS", "").split("|") if v.strip()]
    if only == ["split"]:
        only = ["trace --no-analyze, default", "trace, default", "base: trace --no-analyze, default",
                "base: trace, default"]
    if only:  # VARIANTS="a|b": only the rows whose names start so (native always runs)
        variants = {k: v for k, v in variants.items() if k == "native" or any(k.startswith(o) for o in only)}
    got = {k: [] for k in variants}
    said = {k: [] for k in variants}
    order = list(variants)
    shuffle = random.Random(20261123)  # repeatable: the same orders on every machine
    for _ in range(runs):
        # A new order each round: a variant's place in the round (right after a heavy one, first
        # after a pause) must not bias it.
        shuffle.shuffle(order)
        for name in order:
            c, env = variants[name]
            e = dict(os.environ)
            for k in ("HETOPT_TIME_SAMPLE", "HETOPT_TIME_QUEUE", "HETOPT_TIMINGS", "BASE", "VARIANTS"):
                e.pop(k, None)
            e.update(env)
            traced = os.path.basename(c[0]) == "hetopt"
            if traced:
                e["HETOPT_TIMINGS"] = "1"
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.monotonic()
            r = subprocess.run(c, env=e, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE if traced else subprocess.DEVNULL)
            wall = time.monotonic() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if r.returncode != 0:
                sys.exit(f"failed ({r.returncode}): {name}: {' '.join(c)}")
            got[name].append((wall * 1e3, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3))
            if traced:
                said[name].append(timings(r.stderr.decode(errors="replace")))
nw = statistics.median(w for w, _ in got["native"])
nc = statistics.median(c for _, c in got["native"])


def paired(name, i):
    """Each run against native in the same round: median [min..max], in %."""
    ratios = [100 * (v[i] / n[i] - 1) for v, n in zip(got[name], got["native"])]
    return f"{statistics.median(ratios):+6.1f}% [{min(ratios):+.1f}..{max(ratios):+.1f}]"


print(f"{'variant':36s} {'wall ms':>8s} {'median':>7s} {'paired [min..max]':>24s} {'cpu ms':>8s} "
      f"{'median':>7s} {'paired [min..max]':>24s}")
for name, v in got.items():
    w, c = statistics.median(x for x, _ in v), statistics.median(y for _, y in v)
    if name == "native":
        spread = 100 * (max(x for x, _ in v) - min(x for x, _ in v)) / 2 / nw
        print(f"{name:36s} {w:8.0f} {'':7s} {f'(noise: half the range {spread:.1f}%)':>24s} {c:8.0f}")
        continue
    print(f"{name:36s} {w:8.0f} {100 * (w - nw) / nw:+6.1f}% {paired(name, 0):>24s} {c:8.0f} "
          f"{100 * (c - nc) / nc:+6.1f}% {paired(name, 1):>24s}")
for name, reports in said.items():
    keys = []
    for rep in reports:
        keys += [k for k in rep if k not in keys]
    if not keys:
        continue
    print(f"{name}: what hetopt reported (HETOPT_TIMINGS=1), median of {len(reports)} runs, ms "
          "(indented: parts of 'after it' or of each other)")
    for k in keys:
        vals = [rep[k] for rep in reports if k in rep]
        print(f"  {k:58s} {statistics.median(vals):9.1f}   [{min(vals):.1f}..{max(vals):.1f}]")
print(f"load average after: {load()}")
PY
