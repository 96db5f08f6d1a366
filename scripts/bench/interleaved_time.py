#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Wall time of whole processes, interleaved: every round runs each named command once, in turn, so
load from other processes on a shared machine falls on all of them alike. Prints per command the
median and the quartiles in ms, and the median's difference from the first command's.

  interleaved_time.py ROUNDS NAME=COMMAND [NAME=COMMAND ...]

COMMAND is run by `sh -c`, stdout and stderr to /dev/null; a failing command stops the script (a
benchmark of a failure measures nothing). The `sh -c` costs the same in every command.
"""
import statistics
import subprocess
import sys
import time


def quartiles(values):
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return q[0], statistics.median(values), q[2]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    commands = []
    for arg in sys.argv[2:]:
        name, _, command = arg.partition("=")
        commands.append((name, command))
    times = {name: [] for name, _ in commands}
    for _ in range(rounds):
        for name, command in commands:
            t0 = time.perf_counter_ns()
            rc = subprocess.run(["sh", "-c", command], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL).returncode
            times[name].append((time.perf_counter_ns() - t0) / 1e6)
            if rc != 0:
                sys.exit(f"{name}: `{command}` exited {rc}")
    base = statistics.median(times[commands[0][0]])
    print(f"{'command':<22} {'median ms':>10} {'q1':>8} {'q3':>8} {'+ms vs ' + commands[0][0]:>20}")
    for name, _ in commands:
        q1, med, q3 = quartiles(times[name])
        print(f"{name:<22} {med:>10.2f} {q1:>8.2f} {q3:>8.2f} {med - base:>20.2f}")


if __name__ == "__main__":
    main()
