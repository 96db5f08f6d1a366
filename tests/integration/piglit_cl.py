#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Piglit's OpenCL tests (Debian's piglit package) natively and under hetopt, test by test.

`run MODE` runs the chosen tests of piglit's `cl` profile the way `piglit run` runs them (the same
command line per test, from the piglit root, each result read from its `PIGLIT:` lines and exit
status as piglit's framework reads them) with MODE's prefix, and keeps each test's result,
subtests, exit status and output in WORK/MODE/results.json. Every mode but `native` then compares
each test with WORK/native/results.json and fails when one ends differently (another result,
subtest result or exit status), printing the test's name and both outputs. Modes:
  native       the tests themselves (the baseline; it starts WORK afresh)
  trace        `hetopt trace --profile piglit-TEST` (a profile per test, for the two below)
  register     `hetopt run --policy register --force` with that profile: every candidate block,
               static array and mapping registered in place
  pool         `hetopt run --policy opencl --force` with that profile: candidates from a pool
  passthrough  `hetopt run --passthrough`: the shim loaded, every call forwarded
Tracked allocations start at 256 B here (HETOPT_MIN_TRACKED_SIZE, 4096 by default), so that
cl-program-tester's argument buffers become candidates: with the default none of 18 sampled tests
ran in optimize mode; with 256 B, 36 of 316 did.

Which tests (`--select ci`, the ctests): all 42 API tests, the 4 custom tests, the interop test,
the 3 program binaries and the 22 build tests, every third of the 200 hand-written execute tests
and every tenth of the 438 generated ones: 183 tests, 136 of them program tests. Why not the whole
profile (710 tests): a program test's time is mostly PoCL compiling its kernels (about 1.2 s of
CPU each, cold; the native baseline compiles, the other modes reuse PoCL's cache), and the whole
profile takes about 16 minutes of CPU natively alone, where CI leaves the piglit ctests about 10
(5 minutes on 2 cores) for all five modes. Generated tests are kept at a tenth because they are
the costliest to trace (large test files: many tracked parser blocks) but the likeliest to run in
optimize mode. `--select all` runs the whole profile (docs/results.md has its counts).

piglit's runner is not used: it runs OpenCL tests one at a time on machines without a DRM render
node, cannot put a different prefix before each test, and keeps its results in its own format.
What it would add is the interpretation below, which follows framework/test/base.py and
framework/results.py of piglit 0~git20220119.

  piglit_cl.py run MODE --work DIR [--hetopt PATH] [--select SET] [--jobs N] [--timeout S]
  piglit_cl.py list [--select SET]      the chosen tests, one `name<TAB>command` per line
"""
import argparse
import ast
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

PIGLIT_ROOT = os.environ.get("PIGLIT_ROOT", "/usr/lib/x86_64-linux-gnu/piglit")
MODES = ("native", "trace", "register", "pool", "passthrough")
# piglit's status order (framework/status.py): the worst subtest is the test's result; pass, skip
# and notrun weigh the same, and then the first one listed wins.
# Allocations from this size on are tracked and can be served or registered (HETOPT_MIN_TRACKED_SIZE,
# 4096 by default): cl-program-tester's argument buffers are 16 B..4 KiB, its parser's own blocks
# mostly under 256 B (over a million in a large test file; each tracked one is unwound to its site).
MIN_TRACKED = 256
# The `ci` selection keeps one execute test in this many (see select and the header).
STRIDE = {"hand": 3, "generated": 10}
WEIGHT = {"notrun": 0, "skip": 0, "pass": 0, "warn": 10, "dmesg-warn": 20, "fail": 30,
          "dmesg-fail": 40, "timeout": 50, "crash": 60, "incomplete": 100}


def load_profile():
    """[(name, argv)] of piglit's `cl` profile, in its order."""
    tests = []
    with gzip.open(os.path.join(PIGLIT_ROOT, "tests", "cl.xml.gz")) as f:
        for t in ET.parse(f).getroot():
            opts = {o.get("name"): ast.literal_eval(o.get("value")) for o in t.findall("option")}
            if t.get("type") == "cl":
                argv = [os.path.join(PIGLIT_ROOT, "bin", opts["command"][0])] + list(opts["command"][1:])
            elif t.get("type") == "cl_prog":
                argv = [os.path.join(PIGLIT_ROOT, "bin", "cl-program-tester"),
                        os.path.join(PIGLIT_ROOT, opts["filename"])]
            else:
                raise SystemExit(f"piglit_cl.py: test {t.get('name')} has unknown type {t.get('type')}")
            tests.append((t.get("name"), argv))
    return tests


def select(tests, which, pattern=None):
    """`all`: the whole profile. `ci`: every API, custom and interop test, the 3 program binaries
    and the 22 build tests; of the execute tests, every HAND_STRIDE-th hand-written one and every
    GENERATED_STRIDE-th generated one (builtins per type and vector width), by place in the
    profile."""
    if pattern:
        tests = [t for t in tests if re.search(pattern, t[0])]
    if which == "all":
        return tests
    if which != "ci":
        raise SystemExit(f"piglit_cl.py: unknown selection {which}")
    out, seen = [], Counter()
    for name, argv in tests:
        if name.startswith("program@execute@"):
            kind = "generated" if os.path.relpath(argv[-1], PIGLIT_ROOT).startswith(
                "generated_tests/") else "hand"
            seen[kind] += 1
            if seen[kind] % STRIDE[kind] != 1:
                continue
        out.append((name, argv))
    return out


def slug(name):
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def prefix(mode, hetopt, work, name):
    """The command line before the test's own in MODE, and the environment it adds."""
    # PoCL's compiled kernels are kept in one cache for every mode: the native baseline compiles
    # them once (most of a program test's time) and the other modes load them, as a user's
    # second run would; what a test checks does not depend on where its kernel binary came from.
    env = {"POCL_CACHE_DIR": os.path.join(work, "pocl-cache")}
    if mode == "native":
        return [], env
    s = slug(name)
    # One cache directory per test: `hetopt run` writes its plan under the program's identity,
    # which every program test shares (cl-program-tester), named profile or not.
    env.update({"XDG_CACHE_HOME": os.path.join(work, mode, "cache", s),
                "HETOPT_DB": os.path.join(work, "hetopt.db"),
                "HETOPT_MIN_TRACKED_SIZE": str(MIN_TRACKED)})
    if mode == "trace":
        return [hetopt, "trace", "-o", os.path.join(work, "trace", "traces", s + ".trace"),
                "--profile", "piglit-" + s, "--"], env
    if mode == "passthrough":
        return [hetopt, "run", "--passthrough", "--"], env
    # --verify=off: no control runs, so every run of a planned test is an optimized one.
    policy = {"register": "register", "pool": "opencl"}[mode]
    return [hetopt, "run", "--verify=off", "--stats=" + os.path.join(work, mode, "stats", s + ".json"),
            "--policy", policy, "--force", "--profile", "piglit-" + s, "--"], env


def interpret(out, returncode):
    """piglit's result of a test from its stdout and exit status (None: killed at the timeout)."""
    result, subtests = "notrun", {}
    for line in out.split("\n"):
        if not line.startswith("PIGLIT:"):
            continue
        try:
            d = json.loads(line[8:])
        except ValueError:
            continue
        if "enumerate subtests" in d:
            for n in d["enumerate subtests"]:
                subtests[n] = "notrun"
        elif "result" in d:
            result = d["result"]
        elif "subtest" in d:
            subtests.update(d["subtest"])
    if result == "skip" and subtests:
        subtests = {k: "skip" if v == "notrun" else v for k, v in subtests.items()}
    if returncode is None:
        result = "timeout"
        subtests = {k: "timeout" for k in subtests}
    elif returncode < 0:
        result = "crash"
        for k, v in subtests.items():
            if v == "notrun":
                subtests[k] = "crash"
                break
    elif returncode != 0:
        result = "warn" if result == "pass" else "fail"
    if subtests and result != "crash":
        worst = None
        for v in subtests.values():
            if worst is None or WEIGHT.get(v, 0) > WEIGHT.get(worst, 0):
                worst = v
        result = worst
    return result, subtests


def run_one(mode, hetopt, work, timeout, name, argv):
    pre, extra = prefix(mode, hetopt, work, name)
    env = {k: v for k, v in os.environ.items()
           if k not in ("HETOPT_MODE", "HETOPT_PLAN_FILE", "HETOPT_STATS")}
    env.update(extra)
    start = time.monotonic()
    # Its own session, so that a test that outlives the timeout is killed with all it started.
    proc = subprocess.Popen(pre + argv, cwd=PIGLIT_ROOT, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        rc = None
    seconds = time.monotonic() - start
    out = out.decode("utf-8", "replace")
    err = err.decode("utf-8", "replace")
    result, subtests = interpret(out, rc)
    return name, {"command": pre + argv, "result": result, "subtests": subtests, "returncode": rc,
                  "out": out, "err": err, "seconds": round(seconds, 3)}


# Output that legitimately differs between two runs of the same test: none is known in piglit's
# OpenCL tests; stdout is shown, not compared (a difference in what a test computes shows as its
# result or a subtest's).
def differs(native, other):
    return (native["result"], native["subtests"], native["returncode"]) != \
        (other["result"], other["subtests"], other["returncode"])


def show(name, mode, native, other):
    print(f"DIFFERS: {name}: native {native['result']} (exit {native['returncode']}), "
          f"{mode} {other['result']} (exit {other['returncode']})")
    for k in sorted(set(native["subtests"]) | set(other["subtests"])):
        a, b = native["subtests"].get(k), other["subtests"].get(k)
        if a != b:
            print(f"  subtest {k}: native {a}, {mode} {b}")
    print("  command: " + " ".join(other["command"]))
    for label, r in (("native", native), (mode, other)):
        for stream in ("out", "err"):
            lines = r[stream].rstrip("\n").split("\n")
            print(f"  --- {label} std{stream} ({len(lines)} lines, last 40)")
            for line in lines[-40:]:
                print("  | " + line)


def cmd_run(args):
    global MIN_TRACKED
    MIN_TRACKED = args.min_tracked
    tests = select(load_profile(), args.select, args.filter)
    if args.mode != "native" and not args.hetopt:
        raise SystemExit("piglit_cl.py: --hetopt is needed for mode " + args.mode)
    hetopt = os.path.realpath(args.hetopt) if args.hetopt else None
    work = os.path.realpath(args.work)
    native_file = os.path.join(work, "native", "results.json")
    native = None
    if args.mode != "native":
        if not os.path.exists(native_file):
            print(f"FAIL: no native results ({native_file}): the native baseline runs first")
            return 1
        with open(native_file) as f:
            native = json.load(f)
        missing = [n for n, _ in tests if n not in native]
        if missing:
            print(f"FAIL: {len(missing)} tests have no native result (first: {missing[0]}); "
                  "run the native baseline with the same selection")
            return 1
    mdir = os.path.join(work, args.mode)
    # The native baseline starts everything afresh: the other modes' results, the profiles and
    # PoCL's kernel cache (its time is the time of a first run).
    shutil.rmtree(work if args.mode == "native" else mdir, ignore_errors=True)
    os.makedirs(mdir)
    for sub in ("stats", "traces"):
        os.makedirs(os.path.join(mdir, sub))
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = dict(pool.map(lambda t: run_one(args.mode, hetopt, work, args.timeout, *t), tests))
    wall = time.monotonic() - start
    with open(os.path.join(mdir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    counts = Counter(r["result"] for r in results.values())
    line = ", ".join(f"{counts[k]} {k}" for k in sorted(counts, key=lambda k: (WEIGHT.get(k, 0), k)))
    print(f"{args.mode}: {len(results)} tests ({args.select}) in {wall:.0f} s with {args.jobs} "
          f"at a time: {line}")
    if args.mode == "native":
        for n, r in results.items():
            if r["result"] not in ("pass", "skip"):
                print(f"  natively {r['result']}: {n}")
        if counts["pass"] == 0:
            print("FAIL: no test passed natively (is an OpenCL device there?)")
            return 1
        return 0
    bad = 0
    if args.mode == "trace":
        # The forced modes run each test with its own profile: without one, the test runs untouched.
        missing = [n for n, r in results.items() if "profile stored" not in r["err"]]
        print(f"  profiles stored: {len(results) - len(missing)} of {len(results)}")
        for n in missing:
            print(f"FAIL: no profile stored for {n}: " + results[n]["err"].strip()[-300:])
        bad += len(missing)
    if args.mode in ("register", "pool"):
        # The shim writes --stats=FILE only where it ran in optimize mode: the other tests ran
        # untouched, each with one line saying why (no candidate site: nothing to optimize).
        stats = [json.load(open(os.path.join(mdir, "stats", f)))
                 for f in os.listdir(os.path.join(mdir, "stats")) if f.endswith(".json")]
        served = sum(1 for s in stats if s.get("redirected", 0) or
                     s.get("registered_blocks", {}).get("registered", 0) or
                     s.get("registered_in_place", {}).get("static_ranges", 0) or
                     s.get("registered_in_place", {}).get("mappings", 0))
        pinned = sum(s.get("run", {}).get("pinned", 0) for s in stats)
        print(f"  optimized: {len(stats)} of {len(results)} ran in optimize mode, {served} with "
              f"memory redirected or registered, {pinned} transfers from pinned memory")
        if served == 0 and args.select == "ci" and not args.filter:
            print("FAIL: no test ran with memory redirected or registered: the mode tested nothing")
            bad += 1
    for name, _ in tests:
        if differs(native[name], results[name]):
            show(name, args.mode, native[name], results[name])
            bad += 1
    if bad:
        print(f"FAIL: {args.mode}: {bad} problems (above)")
        return 1
    print(f"OK: every test ended as natively ({len(tests)} tests)")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("mode", choices=MODES)
    r.add_argument("--work", required=True)
    r.add_argument("--hetopt")
    r.add_argument("--select", default="ci")
    r.add_argument("--min-tracked", type=int, default=MIN_TRACKED,
                   help="HETOPT_MIN_TRACKED_SIZE of the hetopt modes (trace and run the same)")
    r.add_argument("--filter", help="only the tests whose name matches this regular expression")
    r.add_argument("--jobs", type=int, default=1)
    # piglit's own limit for an OpenCL test is 60 s; twice that leaves room for a traced run.
    r.add_argument("--timeout", type=float, default=120)
    ls = sub.add_parser("list")
    ls.add_argument("--select", default="ci")
    ls.add_argument("--filter")
    args = p.parse_args()
    if not os.path.isdir(os.path.join(PIGLIT_ROOT, "bin")):
        print(f"FAIL: piglit is not installed at {PIGLIT_ROOT} (scripts/setup.sh --tests installs it)")
        return 1
    if args.cmd == "list":
        for name, argv in select(load_profile(), args.select, args.filter):
            print(name + "\t" + " ".join(argv))
        return 0
    return cmd_run(args)


if __name__ == "__main__":
    sys.exit(main())
