#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A wrapper that passes its arguments on to the interpreter it execs, as pyenv's `python3` shim
# does (here a #!/bin/bash script named python3, first on PATH, that starts two helpers and then
# execs Debian's python3):
#  - trace, run and report accept the same command line (`python3 app.py`);
#  - the plan for app.py is never shown, announced or applied for another script or for -c code:
#    those have no profile, and say so;
#  - the wrapper's trace ends by exec and says so (trace's summary, show), naming what went on;
#  - the helpers, which made no OpenCL calls, are one line and their traces are not kept.
# The pool policy is forced, as the other pipeline tests do on PoCL.
#   forwarding.sh HETOPT PYTHON SCRIPT_DIR
set -u
source "$(dirname "${BASH_SOURCE[0]}")/stats_lib.sh"
hetopt=$1 python=$2 src=$(cd "$3" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-forwarding.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
source "$(dirname "${BASH_SOURCE[0]}")/line_checks.sh"
cd "$work" || exit 2
mkdir bin
printf '#!/bin/bash\n/bin/true\n/bin/true\nexec "%s" "$@"\n' "$python" >bin/python3
chmod +x bin/python3
export PATH=$work/bin:$PATH
cp "$src/pyopencl_roundtrip.py" app.py
printf 'print(2 + 2)\n' >other.py
forced=(--policy opencl --force)

"$hetopt" trace -o w.trace -- python3 app.py >trace.out 2>trace.err || fail "trace exited $?"
expect trace.err "^hetopt: trace w\\.trace \\([0-9]+ bytes, ended by exec: pid [0-9]+ went on as .*python3[.0-9]* running $work/app\\.py, trace (\\./)?w\\.trace\\.[0-9]+\\)\$" \
  "the wrapper's trace ended by exec"
# The two helpers, and whatever the driver starts (a linker).
expect trace.err '^hetopt: [2-9][0-9]* processes it started made no OpenCL calls \(their traces are not kept\)$' \
  "the helpers in one line"
refuse trace.err '^hetopt:   calls 0 ' "the wrapper's empty summary"
refuse trace.err 'child trace .* 0 OpenCL calls' "a line per helper"
expect trace.err "^hetopt: python3 passes its arguments on to .*python3[.0-9]*: " "the forwarding said"
traces=$(find . -maxdepth 1 -name 'w.trace.*' ! -name '*.programs' | wc -l)
[[ $traces == 1 ]] || fail "$traces child traces kept, not python's alone: $(ls)"
"$hetopt" show w.trace >show.out 2>&1 || fail "show exited $?"
expect show.out "^ended by exec at .*: everything before it is here; pid [0-9]+ went on as $python" \
  "show says the trace ended by exec"
refuse show.out 'INCOMPLETE' "show calls an exec'd trace incomplete"

# The traced script: planned and optimized through the wrapper.
"$hetopt" run --dry-run "${forced[@]}" -- python3 app.py >app.dry 2>&1 || fail "dry run exited $?"
expect app.dry "^program: .*python3[.0-9]* running $work/app\\.py \\(" "app.py's plan"
"$hetopt" run --stats="$work/app.json" "${forced[@]}" -- python3 app.py >app.out 2>app.err ||
  fail "run exited $?"
stats_expect "$work/app.json" 's.redirected >= 1' || fail "app.py was not optimized"

# Another script, and code: no profile, never app.py's plan.
"$hetopt" run --dry-run "${forced[@]}" -- python3 other.py >other.dry 2>&1 || fail "dry run other.py exited $?"
expect other.dry '^decline: no profile for python3 other\.py \(' "other.py has no profile"
refuse other.dry 'app\.py|^plan:' "other.py shown app.py's plan"
"$hetopt" run --stats "${forced[@]}" -- python3 other.py >other.out 2>other.err || fail "run other.py exited $?"
expect other.out '^4$' "other.py's output"
expect other.err '^hetopt: no profile for python3 other\.py .*running unoptimized$' "other.py declined"
refuse other.err 'optimizing|app\.py|stats' "other.py announced as optimized"
"$hetopt" run "${forced[@]}" -- python3 -c 'print(2+2)' >code.out 2>code.err || fail "run -c exited $?"
expect code.out '^4$' "the code's output"
expect code.err '^hetopt: no profile for python3 -c print\(2\+2\) \(' "the code declined"
refuse code.err 'app\.py|would save|optimizing' "the code announced with app.py's plan"

# report takes the same command line as trace and run.
"$hetopt" report --no-plots -- python3 app.py >report.out 2>report.err || fail "report exited $?"
expect report.out '^traced ' "the report's traced run"
expect report.out '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} .*, predicted' "the optimized run in the report"

[[ $failed -eq 0 ]] && echo "OK: a forwarding wrapper is identified as its interpreter running its arguments"
exit $failed
