#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks optimize mode's stats as JSON (HETOPT_STATS_JSON, `hetopt run --stats=FILE.json`).

  stats_check.py FILE EXPR...    every EXPR (Python over `s`, the JSON object, whose keys are also
                                 attributes: s.transfers_pinned_pool.h2d) must be true
  stats_check.py --get FILE KEY  prints the value at KEY (dotted: registered_blocks.adopted)
  stats_check.py --eval FILE EXPR  prints the value of EXPR (as above)
  stats_check.py --files FILE    lists FILE and the forked children's FILE.<pid>, one per line
  stats_check.py --children FILE EXPR...  every EXPR holds for each forked child's FILE.<pid>;
                                 prints how many there are (one process for a thousand children)

MiB(x) is x bytes in MiB rounded to a tenth, as the --stats lines print it; re is imported. A
failing check prints the expression and the object and exits 1.
"""
import glob
import json
import re  # noqa: F401 (for expressions)
import sys


class Obj(dict):
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def load(path):
    with open(path) as f:
        return json.load(f, object_hook=Obj)


def MiB(x):  # noqa: N802
    return round(x / 1048576, 1)


def main(argv):
    if len(argv) >= 2 and argv[0] == "--files":
        for path in [argv[1]] + sorted(glob.glob(argv[1] + ".*")):
            print(path)
        return 0
    if len(argv) >= 2 and argv[0] == "--children":
        children = sorted(glob.glob(argv[1] + ".*"))
        for path in children:
            s = load(path)
            for expr in argv[2:]:
                if not eval(expr, {"s": s, "re": re, "MiB": MiB}):
                    print(f"FAIL: {path}: {expr}\n{json.dumps(s, indent=1)}", file=sys.stderr)
                    return 1
        print(len(children))
        return 0
    if len(argv) == 3 and argv[0] == "--get":
        value = load(argv[1])
        for key in argv[2].split("."):
            value = value[key]
        print(value)
        return 0
    if len(argv) == 3 and argv[0] == "--eval":
        print(eval(argv[2], {"s": load(argv[1]), "re": re, "MiB": MiB}))
        return 0
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    s = load(argv[0])
    for expr in argv[1:]:
        if not eval(expr, {"s": s, "re": re, "MiB": MiB}):
            print(f"FAIL: {expr}\n{json.dumps(s, indent=1)}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
