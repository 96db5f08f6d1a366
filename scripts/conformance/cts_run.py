#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The runner of `scripts/conformance/cts.sh run BIN_DIR HETOPT_BUILD OUT` (its header says what
and why): each OpenCL-CTS test as its own process, natively and in each hetopt mode, its result
from the harness's JSON (CL_CONFORMANCE_RESULTS_FILENAME) and its exit status; a table of the
differences from native per suite.

A test's result: the harness's pass/fail/skip when it wrote one and exited normally; "crash" when
it died of a signal, "timeout" when killed at TEST_TIMEOUT, "fail" when it exited otherwise
without a result (e.g. the harness found no device)."""
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

SUITES = ("api", "basic", "buffers", "events", "profiling")
# Tests that compile hundreds of kernels: over 100 s each natively on PoCL (see cts.sh).
DEFAULT_SKIP = r"^(api/(kernel_attributes|kernel_arg_multi_setup_random)|basic/astype)$"


def env_int(name, default):
    return int(os.environ.get(name, default))


def list_tests(exe):
    """The suite's test names, from its --list (one per line, tab-indented)."""
    p = subprocess.run([exe, "--list"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       stdin=subprocess.DEVNULL, timeout=60)
    return [line.strip() for line in p.stdout.decode("utf-8", "replace").split("\n")
            if line.startswith("\t") and line.strip()]


def prefix(mode, hetopt, state, key):
    if mode == "native":
        return []
    if mode == "trace":
        return [hetopt, "trace", "-o", os.path.join(state, "traces", key + ".trace"),
                "--profile", "cts-" + key, "--"]
    if mode == "passthrough":
        return [hetopt, "run", "--passthrough", "--"]
    policy = {"pool": "opencl", "register": "register"}[mode]
    return [hetopt, "run", "--verify=off", "--stats", "--policy", policy, "--force",
            "--profile", "cts-" + key, "--"]


def run_test(mode, hetopt, binp, state, logs, timeout, suite, test):
    key = f"{suite}-{test}"
    res_file = os.path.join(state, "results", mode, key + ".json")
    env = dict(os.environ)
    env.update({"CL_CONFORMANCE_RESULTS_FILENAME": res_file,
                "HETOPT_DB": os.path.join(state, "hetopt.db"),
                # Plans are kept under the program's identity, which every test of a suite shares.
                "XDG_CACHE_HOME": os.path.join(state, "cache", mode, key)})
    for k in ("HETOPT_MODE", "HETOPT_PLAN_FILE", "HETOPT_STATS"):
        env.pop(k, None)
    argv = prefix(mode, hetopt, state, key) + [os.path.join(binp, "test_" + suite), test, "-w"]
    start = time.monotonic()
    log = os.path.join(logs, mode, key + ".log")
    with open(log, "wb") as f:
        f.write((" ".join(argv) + "\n").encode())
        f.flush()
        proc = subprocess.Popen(argv, cwd=binp, env=env, stdin=subprocess.DEVNULL, stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
    seconds = time.monotonic() - start
    # Whether the shim ran in optimize mode (it prints its stats at exit; a declined run says why).
    with open(log, "rb") as f:
        optimized = b"\nhetopt: stats:" in f.read()
    result = None
    try:
        with open(res_file) as f:
            result = json.load(f)["results"].get(test)
    except (OSError, ValueError, KeyError):
        pass
    if rc is None:
        result = "timeout"
    elif rc < 0 or rc > 128 and result is None:
        result = "crash"
    elif result is None:
        result = "fail"
    return suite, test, {"result": result, "exit": rc, "seconds": round(seconds, 2),
                         "optimized": optimized}


def main():
    binp, build, out = (os.path.realpath(a) for a in sys.argv[1:4])
    hetopt = os.path.join(build, "bin", "hetopt")
    if not os.access(hetopt, os.X_OK):
        raise SystemExit(f"cts.sh: no {hetopt}")
    modes = os.environ.get("MODES", "native trace pool register").split()
    if modes[0] != "native":
        modes.insert(0, "native")
    if "pool" in modes or "register" in modes:
        if "trace" not in modes or modes.index("trace") > min(
                modes.index(m) for m in ("pool", "register") if m in modes):
            raise SystemExit("cts.sh: the pool and register modes need the trace mode before them")
    suites = os.environ.get("SUITES", " ".join(SUITES)).split()
    if not suites or any(s not in SUITES for s in suites):
        raise SystemExit(f"cts.sh: SUITES names one or more of {' '.join(SUITES)}")
    timeout = env_int("TEST_TIMEOUT", 60)
    total_budget = env_int("BUDGET", 480)
    jobs = env_int("JOBS", max(1, min(8, (os.cpu_count() or 2) // 2)))
    skip = re.compile(os.environ.get("TESTS_SKIP", DEFAULT_SKIP))
    keep = re.compile(os.environ.get("SELECT", ""))
    os.makedirs(out, exist_ok=True)
    state = tempfile.mkdtemp(prefix="hetopt-cts.")
    logs = os.path.join(state, "logs")
    for m in modes:
        os.makedirs(os.path.join(state, "results", m))
        os.makedirs(os.path.join(logs, m))
    os.makedirs(os.path.join(state, "traces"))

    tests = {}
    for s in suites:
        exe = os.path.join(binp, "test_" + s)
        if not os.access(exe, os.X_OK):
            raise SystemExit(f"cts.sh: no {exe} (cts.sh build makes it)")
        names = list_tests(exe)
        if not names:
            raise SystemExit(f"cts.sh: {exe} --list named no tests")
        tests[s] = [t for t in names if not skip.search(f"{s}/{t}") and keep.search(f"{s}/{t}")]
    # The whole run's budget, shared by the suites as their numbers of tests, evenly by the modes.
    ntests = sum(len(tests[s]) for s in suites) or 1
    budget = {s: total_budget * len(tests[s]) / ntests / len(modes) for s in suites}
    skipped = {s: len(list_tests(os.path.join(binp, "test_" + s))) - len(tests[s]) for s in suites}

    results = {m: defaultdict(dict) for m in modes}
    walls = defaultdict(dict)
    for s in suites:
        for m in modes:
            start = time.monotonic()
            # A test not started within the suite's budget is left out ("notrun"), and so is one,
            # in the hetopt modes, that did not end natively (nothing to compare it with).
            def one(t, m=m, s=s, start=start):
                if time.monotonic() - start > budget[s] or m != "native" and \
                        results["native"][s][t]["result"] in ("notrun", "timeout"):
                    return s, t, {"result": "notrun", "exit": None, "seconds": 0,
                                  "optimized": False}
                return run_test(m, hetopt, binp, state, logs, timeout, s, t)
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                for _, t, r in pool.map(one, tests[s]):
                    results[m][s][t] = r
            walls[s][m] = time.monotonic() - start
            c = Counter(r["result"] for r in results[m][s].values())
            print(f"cts: {s} {m}: {len(tests[s])} tests in {walls[s][m]:.0f} s: " +
                  ", ".join(f"{c[k]} {k}" for k in sorted(c)), flush=True)

    lines = [f"OpenCL-CTS, suites {', '.join(suites)}; modes {', '.join(modes)}; {jobs} tests at a "
             f"time, {timeout} s each at most, {total_budget} s in all; tests left out by "
             f"TESTS_SKIP/SELECT: " + ", ".join(f"{s} {skipped[s]}" for s in suites), ""]
    # The device the harness picked, as its first native run printed it.
    for f in sorted(os.listdir(os.path.join(logs, "native"))):
        with open(os.path.join(logs, "native", f), "rb") as fh:
            m = re.search(rb"Compute Device Name = [^\n]*", fh.read())
        if m:
            lines.insert(1, m.group(0).decode("utf-8", "replace"))
            break
    head = f"{'suite':10} {'mode':12} {'tests':>5} {'pass':>5} {'fail':>5} {'skip':>5} " \
           f"{'crash':>5} {'t/o':>5} {'notrun':>6} {'differ':>6} {'optim':>5} {'wall s':>7}"
    lines += [head, "-" * len(head)]
    diffs = []
    for s in suites:
        for m in modes:
            c = Counter(r["result"] for r in results[m][s].values())
            d = 0
            if m != "native":
                for t in tests[s]:
                    a, b = results["native"][s][t], results[m][s][t]
                    if "notrun" in (a["result"], b["result"]):
                        continue
                    if a["result"] != b["result"]:
                        d += 1
                        diffs.append(f"DIFFERS: {s}/{t}: native {a['result']} (exit {a['exit']}), "
                                     f"{m} {b['result']} (exit {b['exit']}); logs/{m}/{s}-{t}.log")
            opt = sum(r.get("optimized", False) for r in results[m][s].values())
            lines.append(f"{s:10} {m:12} {len(tests[s]):5} {c['pass']:5} {c['fail']:5} "
                         f"{c['skip']:5} {c['crash']:5} {c['timeout']:5} {c['notrun']:6} "
                         f"{'-' if m == 'native' else d:>6} "
                         f"{opt if m in ('pool', 'register') else '-':>5} {walls[s][m]:7.0f}")
    lines.append("")
    for s in suites:
        bad = [t for t in tests[s] if results["native"][s][t]["result"] not in ("pass", "skip", "notrun")]
        if bad:
            lines.append(f"natively not passing in {s}: " + ", ".join(
                f"{t} ({results['native'][s][t]['result']})" for t in bad))
    lines += diffs
    lines.append("FAIL: tests ended differently under hetopt" if diffs else
                 "OK: every test that ran ended as natively in every mode")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(os.path.join(out, "cts.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({m: results[m] for m in modes}, f, indent=1)
    with tarfile.open(os.path.join(out, "logs.tar.xz"), "w:xz") as tar:
        tar.add(logs, arcname="logs")
    subprocess.run(["rm", "-rf", state])
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
