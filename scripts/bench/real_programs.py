#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The measuring part of scripts/bench/real_programs.sh (which documents the whole; run that).

  real_programs.py BUILD_DIR PROGS_DIR ROUNDS OUTDIR

Environment (set up by real_programs.sh): HETOPT_DB (the private DB, characterization already
copied in), RP_EMPTY_DB (a private DB without profiles), RP_STATE (private folder for traces),
XDG_CACHE_HOME (private), MANIFEST, SELECT, MAX_EST, EXPECT_DEVICE, SEED, RUN_TIMEOUT, RUN_OPTIONS.
"""
import difflib
import json
import os
import random
import re
import shlex
import statistics
import subprocess
import sys
import threading
import time

VARIANTS = ["native", "hetopt", "baseline", "nopool", "declined"]
MEASURED = VARIANTS[1:]
# The .dat always has every variant's columns (NaN where one was not run): the chart's columns are fixed.
ALL_VARIANTS = list(VARIANTS)
ALL_MEASURED = ALL_VARIANTS[1:]
# Only when VARIANTS names it (table only, not the .dat): the program itself in the declined
# variant's environment (its other HETOPT_DB path), to tell what hetopt's exec costs from what the
# environment's layout does.
OPTIONAL = ["native_env", "untouched", "noahead"]
# ... and "untouched": `hetopt run --untouched` (the program with no shim, timed from hetopt's own
# start and recorded beside the plan), so that `hetopt report` (runs/NAME/report.txt, its plot
# under runs/NAME/plots) measures the saving against plain runs of the same rounds.
# ... and "noahead": `hetopt run --no-build-ahead` (the plan without the program's kernels built
# ahead on the early context), what start-up speculation adds on top of it.
# Lines the tools under test add to a program's stderr: not the program's output.
TOOL_LINE = re.compile(r"^(hetopt|register_first_transfer): ")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def loud(msg):
    print(f"!!! {msg}", flush=True)


def parse_manifest(path):
    filters, configs = {}, []
    with open(path) as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("filter "):
                parts = line.split(None, 2)
                if len(parts) != 3:
                    sys.exit(f"{path}:{lineno}: filter NAME SED-SCRIPT")
                filters[parts[1]] = parts[2]
                continue
            parts = line.split()
            if len(parts) < 7:
                sys.exit(f"{path}:{lineno}: NAME SUITE SIZE EST WORKDIR FILTER COMMAND... expected")
            name, suite, size, est, workdir, filt = parts[:6]
            configs.append(dict(name=name, suite=suite, size=size, est=float(est), workdir=workdir,
                                filter=filt, command=parts[6:], line=lineno))
    names = [c["name"] for c in configs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        sys.exit(f"{path}: duplicate names {sorted(dup)}")
    for c in configs:
        if c["filter"] not in filters:
            sys.exit(f"{path}:{c['line']}: unknown filter {c['filter']}")
    return filters, configs


def run(argv, cwd, env, out_base, timeout):
    """Runs argv; stdout and stderr to OUT_BASE.out/.err. Returns (wall ms, exit status).

    The wait is a plain blocking waitpid, the timeout a watchdog thread: subprocess's own timeout
    polls with sleeps of up to 50 ms, which rounded every wall time up to the next poll (seen on
    the H100: whole-process times 416, 466, 516 ms... for every program)."""
    with open(out_base + ".out", "wb") as o, open(out_base + ".err", "wb") as e:
        t0 = time.perf_counter_ns()
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=o, stderr=e, stdin=subprocess.DEVNULL)
        expired = threading.Event()
        watchdog = threading.Timer(timeout, lambda: (expired.set(), p.kill()))
        watchdog.start()
        try:
            rc = p.wait()
        finally:
            watchdog.cancel()
        wall = (time.perf_counter_ns() - t0) / 1e6
        return wall, ("timeout" if expired.is_set() else rc)


def read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def tool_lines(out_base):
    return [line for line in read(out_base + ".err").splitlines() if TOOL_LINE.match(line)]


def comparable(out_base, sed_script):
    """A run's output as the manifest's filter makes it: stdout, then stderr, each filtered alone
    (their interleaving is the program's buffering, not its result), the tools' lines removed."""
    parts = []
    for stream in ("out", "err"):
        text = "".join(line for line in read(f"{out_base}.{stream}").splitlines(keepends=True)
                       if not TOOL_LINE.match(line))
        filtered = subprocess.run(["sed", "-E", "-e", sed_script], input=text.encode(),
                                  stdout=subprocess.PIPE, check=True).stdout.decode("utf-8", "replace")
        parts.append(f"--- std{stream} ---\n{filtered}")
    return "".join(parts)


def spread(values):
    return (min(values), max(values)) if values else (float("nan"), float("nan"))


def fmt(v, spec, missing="-"):
    return missing if v is None or v != v else format(v, spec)


def decision_of(dry_first, stats_lines):
    if dry_first:
        return dry_first
    for line in stats_lines:
        if "running unoptimized" in line:
            return line[len("hetopt: "):]
    for line in stats_lines:
        m = re.search(r"redirected (\S+) allocations \(([^)]*)\)", line)
        if m:
            return f"optimized: redirected {m.group(1)} allocations ({m.group(2)})"
    for line in stats_lines:
        if "registered in place" in line:
            return "optimized: " + line[len("hetopt: stats: "):][:80]
    return "optimized" if not stats_lines else stats_lines[0][len("hetopt: "):]


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    build, progs, rounds, outdir = sys.argv[1], os.path.abspath(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    hetopt = os.path.join(build, "bin", "hetopt")
    baseline_lib = os.path.join(build, "lib", "libregister_first_transfer.so")
    state = os.environ["RP_STATE"]
    timeout = float(os.environ.get("RUN_TIMEOUT") or 600)
    expect = os.environ.get("EXPECT_DEVICE", "")
    max_est = float(os.environ.get("MAX_EST") or "inf")
    select = re.compile(os.environ.get("SELECT") or ".")
    seed = int(os.environ.get("SEED") or time.time_ns() % 1000000)
    opts = shlex.split(os.environ.get("RUN_OPTIONS", ""))  # e.g. --policy opencl --force (PoCL checks)
    loop_runs = int(os.environ.get("LOOP_RUNS") or 0)
    loop_kinds = {}
    rng = random.Random(seed)
    filters, configs = parse_manifest(os.environ["MANIFEST"])
    if os.environ.get("VARIANTS"):  # a quick look (e.g. "hetopt"): native and these only
        wanted = os.environ["VARIANTS"].split()
        VARIANTS[:] = ["native"] + [v for v in MEASURED + OPTIONAL if v in wanted]
        MEASURED[:] = VARIANTS[1:]

    chosen, skipped = [], []
    for c in configs:
        if not select.search(c["name"]):
            continue
        if c["est"] > max_est:
            skipped.append(f"{c['name']} (estimated {c['est']:g} s > MAX_EST {max_est:g})")
        elif not os.access(os.path.join(progs, c["command"][0]), os.X_OK):
            skipped.append(f"{c['name']} (not built: {c['command'][0]})")
        else:
            chosen.append(c)
    log(f"{len(chosen)} configurations, {rounds} rounds, seed {seed}; variants {' '.join(VARIANTS)}"
        + (f"; hetopt run {' '.join(opts)}" if opts else ""))
    for s in skipped:
        log(f"skipped: {s}")

    base_env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "HETOPT_MODE", "HETOPT_PLAN_FILE")
                and not k.startswith("RP_")}
    env_of = {v: base_env for v in VARIANTS}
    env_of["baseline"] = dict(base_env, LD_PRELOAD=baseline_lib)
    env_of["declined"] = dict(base_env, HETOPT_DB=os.environ["RP_EMPTY_DB"])
    env_of["native_env"] = env_of["declined"]
    rows, devices, failed_any = [], set(), False
    for c in chosen:
        name = c["name"]
        rundir = os.path.join(outdir, "runs", name)
        os.makedirs(rundir, exist_ok=True)
        cwd = os.path.join(progs, c["workdir"])
        prog = [os.path.join(progs, c["command"][0])] + c["command"][1:]
        argv_of = {"native": prog, "hetopt": [hetopt, "run"] + opts + ["--"] + prog,
                   "baseline": prog, "nopool": [hetopt, "run", "--no-pool"] + opts + ["--"] + prog,
                   "declined": [hetopt, "run", "--"] + prog, "native_env": prog,
                   "untouched": [hetopt, "run", "--untouched", "--"] + prog,
                   "noahead": [hetopt, "run", "--no-build-ahead"] + opts + ["--"] + prog}
        log(f"== {name}: {' '.join(shlex.quote(a) for a in c['command'])} (in {c['workdir']})")
        row = dict(c, status="ok")

        # (a) one trace, its analysis, the plan (--dry-run) and one run with --stats.
        trace = os.path.join(state, name + ".trace")
        ms, rc = run([hetopt, "trace", "--no-analyze", "-o", trace, "--"] + prog, cwd, base_env,
                     os.path.join(rundir, "trace"), timeout)
        row["traced_wall_ms"], row["trace_rc"] = ms, rc
        analysis = {}
        a = subprocess.run([hetopt, "analyze", "--json", trace], env=base_env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        with open(os.path.join(rundir, "analysis.json"), "wb") as f:
            f.write(a.stdout)
        try:
            analysis = json.loads(a.stdout) if a.returncode == 0 else {}
        except ValueError:
            analysis = {}
        if not analysis:
            loud(f"{name}: the trace could not be analysed (trace exit {rc}; analyze: "
                 f"{a.stderr.decode(errors='replace').strip()[:200]})")
        b = analysis.get("breakdown", {})
        row["device"] = analysis.get("device", "")
        row["copy_ms"] = (b["h2d_ns"] + b["d2h_ns"]) / 1e6 if "h2d_ns" in b else None
        row["traced_ms"] = b["total_ns"] / 1e6 if "total_ns" in b else None
        row["eligibility"] = analysis.get("eligibility", {}).get("reason", "")
        row["candidates"] = len(analysis.get("candidates", []))
        log(f"   device: {row['device'] or '(unknown: no queue in the trace)'}")
        if row["device"]:
            devices.add(row["device"])
        if expect and expect.lower() not in row["device"].lower():
            loud(f"{name} ran on '{row['device'] or 'an unknown device'}', not on the expected "
                 f"'{expect}' (EXPECT_DEVICE): no numbers reported for it")
            row["status"] = "WRONG-DEVICE"
            failed_any = True
            rows.append(row)
            continue
        if row["copy_ms"] is not None:
            log(f"   traced: {row['traced_ms']:.1f} ms, transfers {row['copy_ms']:.1f} ms device time "
                f"(h2d {b['h2d_ns'] / 1e6:.1f}, d2h {b['d2h_ns'] / 1e6:.1f}), {row['candidates']} candidate "
                f"sites; {row['eligibility']}")
        try:  # `hetopt run --dry-run` prints the plan without running the program (where it exists)
            dry = subprocess.run([hetopt, "run", "--dry-run"] + opts + ["--"] + prog, cwd=cwd, env=base_env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 timeout=timeout)
        except subprocess.TimeoutExpired:
            dry = None
        dry_first = None
        if dry is not None and dry.returncode == 0:
            with open(os.path.join(rundir, "dry-run.txt"), "wb") as f:
                f.write(dry.stdout)
            # Its decision: the "plan: ..." or "decline: ..." line (after the sites), else its first line.
            lines = dry.stdout.decode(errors="replace").strip().splitlines()
            decided = [line for line in lines if re.match(r"(plan|decline): ", line)]
            dry_first = decided[0] if decided else (lines[0] if lines else "")
        row["dry_run"] = dry_first if dry_first is not None else "n/a"
        if rounds == 0:  # decisions only: the trace, its analysis and the plan, nothing run again
            row["status"], row["decision"] = "decided", decision_of(dry_first, [])
            log(f"   --dry-run: {row['dry_run']}")
            rows.append(row)
            continue
        # The closed loop as a user meets it: LOOP_RUNS plain `hetopt run`s (optimized and control
        # runs as the ledger decides), then the verdict `hetopt report --json` gives.
        row["verdict"] = None
        for i in range(loop_runs):
            ms, rc = run([hetopt, "run", "--"] + prog, cwd, base_env, os.path.join(rundir, f"loop.{i}"), timeout)
            kind = next((k for k, pat in (("control", r"^hetopt: control run"), ("untouched", r"^hetopt: not optimizing"),
                                          ("declined", r"running unoptimized$"), ("optimized", r"optimizing: "))
                         if any(re.search(pat, l) for l in tool_lines(os.path.join(rundir, f"loop.{i}")))), "?")
            loop_kinds.setdefault(name, []).append(kind)
        if loop_runs:
            rep = subprocess.run([hetopt, "report", "--json", "--"] + prog, cwd=cwd, env=base_env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            with open(os.path.join(rundir, "report.json"), "wb") as f:
                f.write(rep.stdout)
            try:
                row["verdict"] = json.loads(rep.stdout).get("verdict")
            except ValueError:
                row["verdict"] = None
            v = row["verdict"]
            log(f"   loop: {' '.join(loop_kinds.get(name, []))}; verdict: "
                + (f"{v['state']}, {v['pairs']} pairs, paired median {fmt(v['paired_median'], '.3f')} "
                   f"[{fmt(v['ci_low'], '.3f')}-{fmt(v['ci_high'], '.3f')}]" if v else "none (declined)"))
        stats_base = os.path.join(rundir, "stats")
        run([hetopt, "run", "--stats"] + opts + ["--"] + prog, cwd, base_env, stats_base, timeout)
        row["decision"] = decision_of(dry_first, tool_lines(stats_base))
        log(f"   --dry-run: {row['dry_run']}")
        log(f"   decision: {row['decision']}")
        for line in tool_lines(stats_base):
            log(f"   {line[:300]}")

        # (b) interleaved rounds, each in a fresh order.
        times = {v: [] for v in VARIANTS}
        rcs = {v: [] for v in VARIANTS}
        with open(os.path.join(rundir, "times.txt"), "w") as tf:
            tf.write("# round variant wall_ms exit\n")
            for r in range(rounds):
                order = rng.sample(VARIANTS, len(VARIANTS))
                walls = []
                for v in order:
                    ms, rc = run(argv_of[v], cwd, env_of[v], os.path.join(rundir, f"{v}.{r}"), timeout)
                    times[v].append(ms)
                    rcs[v].append(rc)
                    tf.write(f"{r} {v} {ms:.3f} {rc}\n")
                    walls.append(f"{v} {ms:.0f}")
                log(f"   round {r + 1}/{rounds}: {', '.join(walls)} ms")

        # Identical results: every run's filtered output against native's first.
        sed = filters[c["filter"]]
        ref = comparable(os.path.join(rundir, "native.0"), sed)
        ref_rc = rcs["native"][0]
        checks = [(v, r, os.path.join(rundir, f"{v}.{r}"), rcs[v][r]) for v in VARIANTS for r in range(rounds)]
        checks += [("trace", 0, os.path.join(rundir, "trace"), row["trace_rc"]),
                   ("stats", 0, stats_base, None)]
        checks += [("loop", i, os.path.join(rundir, f"loop.{i}"), None) for i in range(loop_runs)]
        bad = set()
        for v, r, base, rc in checks:
            if (v, r) == ("native", 0):
                continue
            got = comparable(base, sed)
            problem = None
            if got != ref:
                problem = "output differs from native's first run"
            elif rc is not None and rc != ref_rc:
                problem = f"exit status {rc}, native's first run {ref_rc}"
            if problem:
                diff_path = os.path.join(rundir, f"diff-{v}-{r}.txt")
                with open(diff_path, "w") as f:
                    f.writelines(difflib.unified_diff(ref.splitlines(True), got.splitlines(True),
                                                      "native.0 (filtered)", f"{v}.{r} (filtered)"))
                loud(f"FAILED {name}: {v} (run {r}): {problem}; diff: {diff_path}")
                bad.add(v)
        if bad:
            row["status"] = "FAIL(" + ",".join(sorted(bad)) + ")"
            failed_any = True
        else:
            log(f"   outputs identical: {rounds * len(VARIANTS) + 1} runs and the trace, filter '{c['filter']}'")

        if "untouched" in VARIANTS:  # hetopt's own before/after of the runs just made
            rep = subprocess.run([hetopt, "report", "--last", str(min(max(rounds, 1), 50)), "--plots",
                                  os.path.join(rundir, "plots"), "--"] + prog, cwd=cwd, env=base_env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            with open(os.path.join(rundir, "report.txt"), "wb") as f:
                f.write(rep.stdout)
            for line in rep.stdout.decode(errors="replace").splitlines():
                if re.search(r"saving|predicted|measured", line):
                    log(f"   report: {line.strip()[:300]}")

        # (c) numbers.
        med = {v: statistics.median(times[v]) for v in VARIANTS}
        row["median"] = med
        row["speedup"] = {v: med["native"] / med[v] for v in MEASURED}
        paired = {v: [n / x for n, x in zip(times["native"], times[v])] for v in MEASURED}
        row["paired"] = {v: statistics.median(paired[v]) for v in MEASURED}
        row["spread"] = {v: spread(paired[v]) for v in MEASURED}
        if "hetopt" in times and "noahead" in times:  # what building ahead adds to the same plan
            ahead = [a / h for a, h in zip(times["noahead"], times["hetopt"])]
            log(f"   build-ahead: noahead/hetopt paired median {statistics.median(ahead):.3f} "
                f"[{min(ahead):.3f}-{max(ahead):.3f}]")
        # Fastest against fastest: noise on these VMs only adds time (a host core shared with
        # others slowed a program's own CPU phases by up to 40% in one run), so the best runs agree
        # more closely than the medians.
        row["best"] = {v: min(times["native"]) / min(times[v]) for v in MEASURED}
        n = med["native"]
        cp = row["copy_ms"]
        row["copy_pct"] = 100 * cp / n if cp is not None else None
        row["ceiling"] = (n / (n - cp) if cp < n else float("inf")) if cp is not None else None
        if "declined" in row["paired"] and row["paired"]["declined"] < 0.99:
            loud(f"{name}: the declined (untouched) run costs {100 * (1 / row['paired']['declined'] - 1):.1f}% "
                 f"over native (paired median), more than 1%")
        rows.append(row)

    # Table.
    head = (f"{'program':<28} {'size':<10} {'native':>9} "
            + " ".join(f"{v:>9}" for v in MEASURED) + " "
            + " ".join(f"{v + ' x':>10}" for v in MEASURED) + " "
            + " ".join(f"{v + ' paired [min-max]':>27}" for v in MEASURED)
            + " " + " ".join(f"{v + ' best':>13}" for v in MEASURED)
            + f" {'copy ms':>9} {'copy%':>6} {'ceiling':>7}  {'status':<10} decision")
    lines = [f"# real programs: {len(rows)} configurations, {rounds} rounds, seed {seed}, "
             + (f"hetopt run {' '.join(opts)}, " if opts else "")
             + f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; device(s): {'; '.join(sorted(devices)) or '?'}",
             "# ms: median whole-process wall time; x: native median / variant median; paired: median of "
             "native/variant of the same round [min-max]; best: fastest native / fastest variant; "
             "ceiling: native / (native - copy time of the trace)",
             head]
    dat = ["# name size native_ms hetopt_ms baseline_ms nopool_ms declined_ms hetopt_x baseline_x nopool_x "
           "declined_x hetopt_pr baseline_pr nopool_pr declined_pr hetopt_lo hetopt_hi baseline_lo baseline_hi "
           "nopool_lo nopool_hi declined_lo declined_hi copy_ms copy_pct ceiling ceiling_shown status "
           "hetopt_best baseline_best nopool_best declined_best"]
    shown = [r for r in rows if "median" in r]
    top = max([max(r["spread"][v][1] for v in MEASURED) for r in shown] + [1.0])
    cap = max(2.0, 1.25 * top)
    for r in rows:
        if "median" not in r:
            lines.append(f"{r['name']:<28} {r['size']:<10} {'-':>9}  {r['status']}: {r['device'] or '?'}"
                         + (f"; copy {fmt(r['copy_ms'], '.1f')} ms of {fmt(r.get('traced_ms'), '.1f')} ms traced;"
                            f" {r['decision']}" if r["status"] == "decided" else ""))
            continue
        m, x, p, s = r["median"], r["speedup"], r["paired"], r["spread"]
        lines.append(f"{r['name']:<28} {r['size']:<10} {m['native']:>9.1f} "
                     + " ".join(f"{m[v]:>9.1f}" for v in MEASURED) + " "
                     + " ".join(f"{x[v]:>9.3f}x" for v in MEASURED) + " "
                     + " ".join(f"{p[v]:>9.3f} [{s[v][0]:.3f}-{s[v][1]:.3f}]".rjust(27) for v in MEASURED)
                     + " " + " ".join(f"{r['best'][v]:>12.3f}x" for v in MEASURED)
                     + f" {fmt(r['copy_ms'], '9.1f'):>9} {fmt(r['copy_pct'], '5.1f'):>6} "
                     + f"{fmt(r['ceiling'], '7.3f'):>7}  {r['status']:<10} {r['decision']}")
        ceil = r["ceiling"] if r["ceiling"] is not None else float("nan")
        def col(table, v, i=None, spec=".4f"):
            if v not in table:
                return "NaN"
            return format(table[v] if i is None else table[v][i], spec)
        dat.append(" ".join([r["name"], r["size"]] + [col(m, v, spec=".3f") for v in ALL_VARIANTS]
                            + [col(x, v) for v in ALL_MEASURED] + [col(p, v) for v in ALL_MEASURED]
                            + [col(s, v, i) for v in ALL_MEASURED for i in (0, 1)]
                            + [fmt(r["copy_ms"], ".3f", "NaN"), fmt(r["copy_pct"], ".2f", "NaN"),
                               f"{ceil:.4f}", f"{min(ceil, cap):.4f}", r["status"]]
                            + [col(r["best"], v) for v in ALL_MEASURED]))
    if loop_runs:
        lines.append("")
        lines.append(f"# the closed loop: {loop_runs} plain `hetopt run`s each (before the rounds), then `hetopt report --json`")
        lines.append(f"{'program':<28} {'size':<10} {'verdict':<13} {'pairs':>5} {'paired':>7} {'ci_low':>7} {'ci_high':>7}"
                     f" {'hetopt paired':>13}  runs")
        for r in rows:
            v = r.get("verdict")
            bench = r.get("paired", {}).get("hetopt")
            lines.append(f"{r['name']:<28} {r['size']:<10} {(v['state'] if v else 'declined'):<13} "
                         f"{(v['pairs'] if v else 0):>5} {fmt(v and v['paired_median'], '7.3f'):>7} "
                         f"{fmt(v and v['ci_low'], '7.3f'):>7} {fmt(v and v['ci_high'], '7.3f'):>7} "
                         f"{fmt(bench, '13.3f'):>13}  {' '.join(loop_kinds.get(r['name'], []))}")
    lines.append("")
    for r in rows:
        lines.append(f"# {r['name']}: device {r.get('device') or '?'}; --dry-run: {r.get('dry_run', 'n/a')}; "
                     f"trace exit {r.get('trace_rc')}, traced {fmt(r.get('traced_ms'), '.1f')} ms of "
                     f"{fmt(r.get('traced_wall_ms'), '.1f')} ms wall; {r.get('eligibility', '')}")
    print("\n".join(lines), flush=True)
    with open(os.path.join(outdir, "real_programs.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
        if skipped:
            f.write("# skipped: " + "; ".join(skipped) + "\n")
    with open(os.path.join(outdir, "real_programs.dat"), "w") as f:
        f.write("\n".join(dat) + "\n")
    with open(os.path.join(outdir, "devices.txt"), "w") as f:
        f.write("\n".join(sorted(devices)) + "\n")
    with open(os.path.join(outdir, "ceiling_cap.txt"), "w") as f:
        f.write(f"{cap:.3f}\n")
    if failed_any:
        loud("some configurations FAILED (outputs differ, or the wrong device): see above")
    return 1 if failed_any else 0


if __name__ == "__main__":
    sys.exit(main())
