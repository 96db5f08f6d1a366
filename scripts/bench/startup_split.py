#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where a real program's OpenCL start-up goes: each configuration of the real-program manifest
traced with a cold and then a warm kernel cache, and its timeline (`hetopt analyze --timeline`)
summed per call: the driver's load and the platform and device queries, the context, the queues,
program creation and builds, kernel creation, and the first kernel launch; with when the program
made its first OpenCL call and its whole traced time. The cold cache is a fresh, empty
CUDA_CACHE_PATH and POCL_CACHE_DIR (NVIDIA's and PoCL's compiled-kernel caches); the warm run
reuses it.

  startup_split.py HETOPT PROGS_DIR OUTDIR [REGEX]

PROGS_DIR is scripts/realprogs/build.sh's OUTDIR; REGEX picks manifest names (default all).
Environment: MANIFEST (default scripts/realprogs/programs.txt), RUN_TIMEOUT (seconds, default 300).
Tracing costs time of its own (timing device commands, recording): the split says where set-up
time goes, not what a plain run takes. Prints a table; OUTDIR/startup_split.txt keeps it.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from real_programs import parse_manifest, run  # noqa: E402

# Columns: a name and the calls it sums.
GROUPS = [
    ("platform", ("clGetPlatformIDs", "clGetPlatformInfo", "clGetDeviceIDs", "clGetDeviceInfo")),
    ("context", ("clCreateContext", "clCreateContextFromType")),
    ("queue", ("clCreateCommandQueue", "clCreateCommandQueueWithProperties",
               "clCreateCommandQueueWithPropertiesKHR")),
    ("program", ("clCreateProgramWithSource", "clCreateProgramWithBinary", "clCreateProgramWithIL")),
    ("build", ("clBuildProgram", "clCompileProgram", "clLinkProgram")),
    ("kernel", ("clCreateKernel", "clCreateKernelsInProgram")),
]


def split(timeline):
    with open(timeline) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    sums, first_launch, first_call, end = defaultdict(float), None, None, 0.0
    for e in events:
        if e.get("ph") != "X" or not e.get("name", "").startswith("cl"):
            continue
        name, ts, dur = e["name"], float(e.get("ts", 0)), float(e.get("dur", 0))
        first_call = ts if first_call is None else min(first_call, ts)
        end = max(end, ts + dur)
        for group, calls in GROUPS:
            if name in calls:
                sums[group] += dur
        if name == "clEnqueueNDRangeKernel" and (first_launch is None or ts < first_launch[0]):
            first_launch = (ts, dur)
    row = {g: sums[g] / 1000 for g, _ in GROUPS}
    row["first_launch"] = first_launch[1] / 1000 if first_launch else 0.0
    row["first_call_at"] = (first_call or 0) / 1000
    row["last_call_end"] = end / 1000
    return row


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    hetopt, progs, outdir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    select = re.compile(sys.argv[4] if len(sys.argv) == 5 else ".")
    timeout = float(os.environ.get("RUN_TIMEOUT") or 300)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    _, configs = parse_manifest(os.environ.get("MANIFEST") or os.path.join(root, "scripts/realprogs/programs.txt"))
    os.makedirs(outdir, exist_ok=True)
    cols = [g for g, _ in GROUPS] + ["first_launch", "first_call_at", "last_call_end"]
    lines = ["# ms per group of calls in the traced run (timeline stamps); first_call_at: the program's first "
             "OpenCL call after the shim started; cache: the compiled-kernel caches' state",
             f"{'program':<32} {'cache':<5} " + " ".join(f"{c:>13}" for c in cols)]
    with tempfile.TemporaryDirectory(prefix="hetopt-startup.") as tmp:
        for c in configs:
            if not select.search(c["name"]) or not os.access(os.path.join(progs, c["command"][0]), os.X_OK):
                continue
            cache = os.path.join(tmp, c["name"] + ".kcache")
            os.makedirs(cache)
            env = dict(os.environ, CUDA_CACHE_PATH=cache, POCL_CACHE_DIR=cache, HETOPT_DB=os.path.join(tmp, "db"))
            prog = [os.path.join(progs, c["command"][0])] + c["command"][1:]
            for state in ("cold", "warm"):
                trace = os.path.join(tmp, f"{c['name']}.{state}.trace")
                base = os.path.join(outdir, f"{c['name']}.{state}")
                _, rc = run([hetopt, "trace", "--no-analyze", "-o", trace, "--"] + prog,
                            os.path.join(progs, c["workdir"]), env, base, timeout)
                timeline = base + ".timeline.json"
                a = subprocess.run([hetopt, "analyze", "--no-store", "--timeline", timeline, trace], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                if rc != 0 or a.returncode != 0:
                    lines.append(f"{c['name']:<32} {state:<5} trace exit {rc}, analyze exit {a.returncode}")
                    continue
                row = split(timeline)
                os.unlink(timeline)
                lines.append(f"{c['name']:<32} {state:<5} " + " ".join(f"{row[k]:>13.1f}" for k in cols))
                print(lines[-1], flush=True)
    with open(os.path.join(outdir, "startup_split.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[:2]))


if __name__ == "__main__":
    main()
