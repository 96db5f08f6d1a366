#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# PyOpenCL's own test suite (Debian's python3-pyopencl, on the system's ICD loader and PoCL) run
# natively, under `hetopt trace` and under `hetopt run --force --policy opencl`: every test must
# end the same way (passed, failed, skipped, xfailed, error) in all three. Prints the counts.
#
# Debian does not package the tests: only the test/ files of the sdist (pyopencl_sdist.sh) are
# used, against the installed module.
#
#   pyopencl_suite.sh HETOPT [pytest arguments, default: TEST FILES below]
set -u
source "$(dirname "${BASH_SOURCE[0]}")/pyopencl_sdist.sh"
hetopt=$(readlink -f "$1")
shift
python=$pyopencl_python
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(test_wrapper.py test_enqueue_copy.py test_arrays_in_structs.py)

fail() { echo "FAIL: $*"; exit 1; }
"$python" -c 'import pytest' 2>/dev/null || fail "python3-pytest is not installed (scripts/setup.sh --tests)"
sdist=$(pyopencl_sdist) || fail "$sdist"
version=$(basename "$sdist" .tar.gz)
version=${version#pyopencl-}
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-pyopencl.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
tar -xzf "$sdist" -C "$work" "pyopencl-$version/test" || fail "$sdist holds no test/ folder"
tests=$work/pyopencl-$version/test
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
unset HETOPT_MODE HETOPT_PLAN_FILE HETOPT_STATS

# suite MODE [PREFIX...]: the tests under PREFIX; outcomes in MODE.xml. Run from a copy of test/ so
# that `import pyopencl` finds Debian's module, not the sdist's uncompiled sources.
suite() {
  local mode=$1 start=$SECONDS
  shift
  (cd "$tests" && "$@" "$python" -m pytest -p no:cacheprovider -q --junitxml="$work/$mode.xml" \
    "${args[@]}" >"$work/$mode.out" 2>"$work/$mode.err")
  echo "$mode: $(tail -n 1 "$work/$mode.out") ($((SECONDS - start)) s)"
  [[ -s $work/$mode.xml ]] || { tail -n 20 "$work/$mode.out" "$work/$mode.err"; fail "$mode: pytest wrote no results"; }
}
suite native
suite trace "$hetopt" trace -o "$work/app.trace" --
grep -q "profile stored" "$work/trace.err" || { tail -n 5 "$work/trace.err"; fail "hetopt trace stored no profile"; }
"$hetopt" show "$work/app.trace" >/dev/null 2>&1 || fail "hetopt show cannot read the trace"
suite run "$hetopt" run --stats="$work/stats.json" --force --policy opencl --
grep -E "hetopt: .*running unoptimized" "$work/run.err" | head -n 1 | cut -c1-240
[[ -f $work/stats.json ]] && python3 -c 'import json, sys; print("stats:", json.load(open(sys.argv[1]))["pool"])' "$work/stats.json"

# Per test id, the same outcome in every mode.
"$python" - "$work" native trace run <<'EOF'
import sys
import xml.etree.ElementTree as ET
from collections import Counter

work, modes = sys.argv[1], sys.argv[2:]

def outcomes(mode):
    out = {}
    for case in ET.parse(f"{work}/{mode}.xml").iter("testcase"):
        result = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                result = child.tag
            elif child.tag == "skipped":
                result = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
        out[f"{case.get('classname')}::{case.get('name')}"] = result
    return out

results = {m: outcomes(m) for m in modes}
native = results[modes[0]]
bad = 0
for m in modes:
    counts = Counter(results[m].values())
    print(f"{m}: " + ", ".join(f"{counts[k]} {k}" for k in
                                ("passed", "failure", "error", "skipped", "xfailed")))
    for test in sorted(set(native) | set(results[m])):
        if native.get(test) != results[m].get(test):
            print(f"  DIFFERS: {test}: native {native.get(test)}, {m} {results[m].get(test)}")
            bad = 1
if not native or Counter(native.values())["passed"] == 0:
    print("no test passed natively")
    bad = 1
print("FAIL" if bad else "OK: the same outcome for every test in every mode")
sys.exit(bad)
EOF
