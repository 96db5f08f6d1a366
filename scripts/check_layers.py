#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that includes point down: every source file outside tests/ includes only headers of its
own folder or of folders on a lower floor. The floors are the map at the top of
docs/ARCHITECTURE.md (its table with a `floor` column), so the map and the code cannot drift apart.

  check_layers.py [SOURCE_DIR]    prints each violation (file:line: folder (floor) includes
                                  folder (floor)) and exits 1 when there is one

Generated headers are counted with their source: hetopt/version.h with common/, api_table.h and
shim_wrappers.inc with api/. Folders on one floor do not include each other either.
"""
import os
import re
import sys

SOURCES = (".h", ".hpp", ".c", ".cc", ".cpp", ".inc", ".in")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
GENERATED = {"hetopt": "common/", "api_table.h": "api/", "shim_wrappers.inc": "api/"}


def floors(root):
    """{folder/: floor} from the map table of docs/ARCHITECTURE.md."""
    table, header = {}, None
    with open(os.path.join(root, "docs", "ARCHITECTURE.md")) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
            if not cells:
                if table:
                    break  # the map is the first such table
                header = None
                continue
            if header is None:
                header = [c.lower() for c in cells]
                continue
            if "floor" not in header or "folder" not in header or set(cells[0]) <= set("-: "):
                continue
            folder = cells[header.index("folder")].strip("`")
            table[folder if folder.endswith("/") else folder + "/"] = int(cells[header.index("floor")])
    return table


def folder_of(path, table):
    """The longest folder of the map that `path` (relative, '/'-separated) lies in."""
    best = None
    for folder in table:
        if path.startswith(folder) and (best is None or len(folder) > len(best)):
            best = folder
    return best


def main(argv):
    root = os.path.abspath(argv[0] if argv else os.path.join(os.path.dirname(__file__), ".."))
    table = floors(root)
    if not table:
        print("check_layers: no map with a floor column in docs/ARCHITECTURE.md", file=sys.stderr)
        return 2
    bad = 0
    checked = 0
    for folder, floor in sorted(table.items()):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/") + "/"
            if folder_of(rel_dir, table) != folder:
                dirnames[:] = []  # a deeper folder of its own in the map
                continue
            for name in filenames:
                if not name.endswith(SOURCES):
                    continue
                path = rel_dir + name
                checked += 1
                with open(os.path.join(root, path), errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        first = target.split("/", 1)[0]
                        if first in GENERATED:
                            other = GENERATED[first]
                        elif "/" not in target:
                            continue  # beside the file itself
                        else:
                            other = folder_of(target, table)
                            if other is None:
                                print(f"{path}:{number}: includes {target}, which no floor of the map holds")
                                bad += 1
                                continue
                        if other == folder:
                            continue
                        if table[other] >= floor:
                            print(f"{path}:{number}: {folder} (floor {floor}) includes {target} "
                                  f"({other}, floor {table[other]})")
                            bad += 1
    if bad:
        print(f"check_layers: {bad} include(s) pointing up or sideways in {checked} files")
        return 1
    print(f"check_layers: {checked} files, every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
