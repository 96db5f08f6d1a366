#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Python programs: each script (and `-m module`, `-c code`) has a profile of its own, keyed by the
# interpreter plus the script's content; a numpy-only script that never touches OpenCL is not
# optimized by another script's profile; a wrapper that execs python3 is planned through the
# script; numpy's allocation sites are grouped in the report. The pool policy is forced (PoCL).
# multiprocessing over PyOpenCL has its own test: pyopencl_multiprocessing.sh.
#   python_programs.sh HETOPT PYTHON SCRIPT_DIR
set -u
source "$(dirname "${BASH_SOURCE[0]}")/stats_lib.sh"
hetopt=$1 python=$2 src=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-python.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
source "$(dirname "${BASH_SOURCE[0]}")/line_checks.sh"
cd "$work" || exit 2
cp "$src/pyopencl_roundtrip.py" a.py
sed 's/1 << 18/1 << 19/' a.py >b.py
mkdir mods && cp a.py mods/roundtrip_mod.py
printf 'import numpy as np\nprint(np.ones(1 << 22, np.float32).sum())\n' >numpy_only.py
forced=(--policy opencl --force)

for s in a b; do
  "$hetopt" trace -o "$s.trace" -- "$python" "$s.py" >"$s.out" 2>"$s.err" || fail "trace $s.py exited $?"
  expect "$s.err" "^hetopt analysis of .*python3[.0-9]* running $work/$s.py\$" "$s.py's own report"
  expect "$s.err" "profile stored in .*\\+script-sha256:" "$s.py's profile keyed by the script"
done
key() { sed -n 's/^program: .* (\(.*\))$/\1/p' "$1"; }
for s in a b; do
  "$hetopt" run --dry-run "${forced[@]}" -- "$python" "$s.py" >"$s.dry" 2>&1 || fail "dry run $s.py exited $?"
  expect "$s.dry" "^program: .* running $work/$s.py \\(" "$s.py's own plan"
done
[[ -n $(key a.dry) && $(key a.dry) != "$(key b.dry)" ]] || fail "a.py and b.py share a profile: $(key a.dry)"

# Arrays made by numpy on two lines of a script, each written to or read from the device: two
# sites inside numpy, reported under one heading with their totals, each told apart by its frames.
cat >lines.py <<'EOF'
import numpy as np
import pyopencl as cl
ctx = cl.Context([cl.get_platforms()[0].get_devices()[0]])
q = cl.CommandQueue(ctx)
n = 1 << 18
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * n)
total = 0
for i in range(3):
    a = np.arange(n, dtype=np.uint32) + i
    b = np.empty(n, dtype=np.uint32)
    cl.enqueue_copy(q, buf, a)
    cl.enqueue_copy(q, b, buf)
    total += int(b.sum())
print(total)
EOF
"$hetopt" trace -o lines.trace -- "$python" lines.py >lines.out 2>lines.err || fail "trace lines.py exited $?"
expect lines.out '^103079608320$' "lines.py's result"
expect lines.err '^  numpy \(/.*/numpy\): 2 sites inside it, not the program.s own code$' "numpy's sites grouped"
expect lines.err '^      together: 6 allocations, .*h2d 3 x 1 MiB \(3 MiB.*d2h 3 x 1 MiB \(3 MiB' "the group's totals"
expect lines.err '^    #2 _multiarray_umath\.' "the second site inside the group"
[[ $(grep -c '^    #[0-9]' lines.err) -eq 2 ]] || fail "lines.py: not exactly 2 sites in the group"

# Another script: no profile, so no shim, whatever the interpreter's other scripts did.
"$hetopt" run --stats="$work/np.json" "${forced[@]}" -- "$python" numpy_only.py >np.out 2>np.err || fail "numpy-only run exited $?"
expect np.out '^4194304.0$' "numpy-only result"
expect np.err "no profile for .* running $work/numpy_only.py.*running unoptimized" "numpy-only declined"
[[ -e $work/np.json ]] && fail "the numpy-only script ran under the shim"

# -m module and -c code: their own keys.
(cd mods && "$hetopt" trace -o ../m.trace -- "$python" -m roundtrip_mod >/dev/null 2>../m.err) || fail "trace -m exited $?"
expect m.err "profile stored in .*\\+module:roundtrip_mod" "-m keyed by the module"
(cd mods && "$hetopt" run --stats="$work/m.json" "${forced[@]}" -- "$python" -m roundtrip_mod >../mrun.out 2>../mrun.err) || fail "run -m exited $?"
stats_expect "$work/m.json" 's.redirected >= 1' || fail "-m not optimized"
code=$(cat a.py)
"$hetopt" trace -o c.trace -- "$python" -c "$code" >/dev/null 2>c.err || fail "trace -c exited $?"
expect c.err "profile stored in .*\\+code-sha256:" "-c keyed by the code"
"$hetopt" run --stats="$work/c.json" "${forced[@]}" -- "$python" -c "$code" >crun.out 2>crun.err || fail "run -c exited $?"
stats_expect "$work/c.json" 's.redirected >= 1' || fail "-c not optimized"
"$hetopt" run --stats "${forced[@]}" -- "$python" -c "$code
" >c2.out 2>c2.err || fail "run of other code exited $?"
expect c2.err 'no profile for .* -c <code .*running unoptimized' "other code declined"

# A wrapper that execs the interpreter: planned through the script's own profile.
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$python" "$work/a.py" >wrap.sh
chmod +x wrap.sh
"$hetopt" trace -o w.trace -- ./wrap.sh >/dev/null 2>w.err || fail "trace wrap.sh exited $?"
"$hetopt" run --dry-run "${forced[@]}" -- ./wrap.sh >w.dry 2>&1 || fail "dry run wrap.sh exited $?"
expect w.dry "^launched: this plan is for .*python3[.0-9]* running $work/a.py, which ./wrap.sh starts" "wrapper planned through the script"

[[ $failed -eq 0 ]] && echo "OK: scripts, modules and code keyed apart; wrapper"
exit $failed
