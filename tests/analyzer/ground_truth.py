#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Compares the analyzer's candidate sites for one test app with the app's ground-truth markers.

Every host allocation in tests/apps that feeds a host<->device transfer carries
`// hetopt:transfer` on its line; host-only allocations of at least 4 KiB carry
`// hetopt:host-only`. This traces the app with `hetopt trace`, analyses the trace with
`hetopt analyze --json`, and requires:
  - every transfer marker on an allocation call is a candidate site, symbolized to that line;
  - a transfer marker on memory no allocation call made (a static array's definition, an mmap)
    is reported as untracked transfer memory: static data by its definition line, an mmap as a
    mapping, each with the bytes it moved;
  - no host-only marker and no unmarked line is a candidate.

With --eligible yes|no, the eligibility verdict must also be that (compute_bound: no).

usage: ground_truth.py [--eligible yes|no] HETOPT APP SOURCE WORKDIR [app args...]
"""
import json
import os
import re
import subprocess
import sys


def markers(source):
    transfer, host_only, text = set(), set(), {}
    with open(source, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if "// hetopt:transfer" in line:
                transfer.add(number)
            elif "// hetopt:host-only" in line:
                host_only.add(number)
            text[number] = line
    return transfer, host_only, text


def main():
    argv = sys.argv[1:]
    want_eligible = None
    if argv[:1] == ["--eligible"]:
        want_eligible = argv[1] == "yes"
        argv = argv[2:]
    hetopt, app, source, workdir = argv[:4]
    app_args = argv[4:]
    name = os.path.basename(app)
    os.makedirs(workdir, exist_ok=True)
    trace = os.path.join(workdir, name + ".trace")
    env = dict(os.environ)
    # Track every allocation: selective_alloc's transfer-feeding calloc is 256 bytes, below the
    # default HETOPT_MIN_TRACKED_SIZE, and ground truth must not depend on that threshold.
    env["HETOPT_MIN_TRACKED_SIZE"] = "1"
    # `hetopt trace` may analyse and store a profile at its end: never into the user's DB.
    env["HETOPT_DB"] = os.path.join(workdir, "hetopt.db")
    run = subprocess.run([hetopt, "trace", "-o", trace, "--", app] + app_args, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        print(f"FAIL {name}: hetopt trace exited {run.returncode}\n{run.stderr}")
        return 1
    analysis = subprocess.run([hetopt, "analyze", "--json", "--no-store", trace], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if analysis.returncode != 0:
        print(f"FAIL {name}: hetopt analyze exited {analysis.returncode}\n{analysis.stderr}")
        return 1
    profile = json.loads(analysis.stdout)

    transfer, host_only, text = markers(source)
    base = os.path.basename(source)
    found, extra = {}, []
    for c in profile["candidates"]:
        loc = c["location"]
        if loc["has_source"] and os.path.basename(loc["file"]) == base:
            found[loc["line"]] = c
        else:
            extra.append(loc["text"] + (f" ({loc['note']})" if loc.get("note") else ""))

    untracked_ok = set()
    for u in profile["untracked"]:
        moved = u["h2d"]["bytes"] + u["d2h"]["bytes"]
        if moved == 0:
            continue
        m = re.search(r"\(" + re.escape(base) + r":(\d+)\)", u["what"])
        if u["kind"] == "static" and m:
            untracked_ok.add(int(m.group(1)))
        if u["kind"] == "mmap":
            untracked_ok.update(l for l in transfer if "mmap(" in text[l])

    problems = []
    for line in sorted(transfer):
        if line not in found and line not in untracked_ok:
            problems.append(f"transfer marker {base}:{line} not found: {text[line].strip()}")
    for line in sorted(found):
        if line in host_only:
            problems.append(f"host-only {base}:{line} reported as a candidate")
        elif line not in transfer:
            problems.append(f"unmarked {base}:{line} reported as a candidate: {text[line].strip()}")
    for e in extra:
        problems.append(f"candidate outside {base}: {e}")
    elig = profile["eligibility"]
    if want_eligible is not None and elig["eligible"] != want_eligible:
        problems.append(f"eligible={elig['eligible']}, expected {want_eligible}: {elig['reason']}")
    if not elig["reason"] or "dispatch ratio" not in elig["reason"]:
        problems.append(f"eligibility reason does not give the ratio: {elig['reason']!r}")

    lines = ", ".join(str(l) for l in sorted(found))
    untracked = ", ".join(f"{u['kind']} {u['what']} ({u['h2d']['bytes'] + u['d2h']['bytes']} B)"
                          for u in profile["untracked"])
    summary = (f"{name}: candidates at {base}:[{lines}]; untracked: [{untracked}]; "
               f"host-only sites {profile['host_only_sites']}; "
               f"{'eligible' if elig['eligible'] else 'not eligible'} (ratio {elig['ratio']})")
    if problems:
        print("FAIL " + summary)
        for p in problems:
            print("  " + p)
        return 1
    print("OK " + summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
