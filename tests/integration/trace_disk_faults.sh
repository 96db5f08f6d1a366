#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Trace output that the disk refuses. The program (exit3_app; it writes no file itself) must finish
# with its own stdout and exit status 3, hetopt must say once that the trace stops (or was never
# started), and the trace must read as valid up to what was written, marked INCOMPLETE by
# `hetopt show`:
#   - a file size limit (RLIMIT_FSIZE, ulimit -f) below the trace's size, under the shim and under
#     `hetopt trace` (whose own DB write then fails too): SIGXFSZ, whose default action kills, must
#     not be raised by hetopt's writes;
#   - a limit below the trace header: no trace, the program runs untraced;
#   - ENOSPC: a full tmpfs (mounted in a new user and mount namespace, or directly as root).
#   trace_disk_faults.sh HETOPT SHIM EXIT3_APP
set -u
hetopt=$1 shim=$2 app=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-diskfaults.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
unset HETOPT_MODE HETOPT_PLAN_FILE HETOPT_STATS HETOPT_TRACE_FILE OPENCL_LAYERS
export HETOPT_DB=$work/hetopt.db
failed=0

"$app" >"$work/native.out" 2>/dev/null
rc=$?
[[ $rc -eq 3 && -s $work/native.out ]] || { echo "FAIL: native run exited $rc"; exit 1; }
# The whole trace's size, to put the limits inside it.
env LD_PRELOAD="$shim" HETOPT_MODE=trace HETOPT_TRACE_FILE="$work/full.trace" "$app" >/dev/null 2>&1
full=$(stat -c %s "$work/full.trace")
[[ $full -gt 400 ]] || { echo "FAIL: the whole trace is only $full bytes"; exit 1; }

# check NAME PATTERN TRACE STATE -- CMD...: exit 3, native stdout, one line from hetopt (matching
# PATTERN) besides `hetopt trace`'s summary; TRACE (when not empty) read by `hetopt show` as STATE.
check() {
  local name=$1 pattern=$2 trace=$3 state=$4 rc n why=''
  shift 5
  # Through pipes: the size limit must meet only the trace, not these files.
  ( "$@" | cat >"$work/$name.out"; exit "${PIPESTATUS[0]}" ) 2>&1 | cat >"$work/$name.err"
  rc=${PIPESTATUS[0]}
  n=$(grep -c "$pattern" "$work/$name.err")
  [[ $rc -eq 3 ]] || why+=" exit status $rc;"
  cmp -s "$work/native.out" "$work/$name.out" || why+=" stdout differs from native;"
  [[ $n -eq 1 ]] || why+=" $n lines matching '$pattern', expected 1;"
  if [[ -n $trace ]]; then
    "$hetopt" show "$trace" >"$work/$name.show" 2>&1 || why+=" hetopt show cannot read the trace;"
    grep -q "^$state" "$work/$name.show" || why+=" hetopt show does not say $state;"
  fi
  if [[ -n $why ]]; then
    echo "FAIL: $name:$why"; sed 's/^/    /' "$work/$name.err"; failed=1
  else
    echo "ok: $name: $(grep "$pattern" "$work/$name.err" | cut -c1-200)"
  fi
}

stops='; the trace ends here, marked incomplete, and the program goes on$'
limit=$((full / 2))
check fsize_mid "file size limit.*$stops" "$work/mid.trace" INCOMPLETE -- \
  prlimit --fsize=$limit env LD_PRELOAD="$shim" HETOPT_MODE=trace \
  HETOPT_TRACE_FILE="$work/mid.trace" "$app"
size=$(stat -c %s "$work/mid.trace")
[[ $size -le $limit ]] || { echo "FAIL: fsize_mid: trace of $size bytes over the limit $limit"; failed=1; }
check fsize_header 'trace mode: cannot write .*file size limit.*; running untraced$' '' '' -- \
  prlimit --fsize=16 env LD_PRELOAD="$shim" HETOPT_MODE=trace HETOPT_TRACE_FILE="$work/h.trace" "$app"
# hetopt trace: the program's status comes back although hetopt's own DB write fails too.
check fsize_hetopt_trace "$stops" "$work/cli.trace" INCOMPLETE -- \
  prlimit --fsize=$limit "$hetopt" trace -o "$work/cli.trace" -- "$app"
grep -q 'profile not stored' "$work/fsize_hetopt_trace.err" ||
  { echo "FAIL: fsize_hetopt_trace: the failed DB write was not reported"; failed=1; }
# The program's own SIGXFSZ is untouched: a program that writes past the limit still gets it.
prlimit --fsize=16 env LD_PRELOAD="$shim" HETOPT_MODE=trace HETOPT_TRACE_FILE=/dev/null \
  dd if=/dev/zero of="$work/dd.out" bs=64 count=1 2>/dev/null | cat
rc=${PIPESTATUS[0]}
[[ $rc -eq $((128 + $(kill -l XFSZ))) ]] ||
  { echo "FAIL: a program writing past the limit exited $rc, not by SIGXFSZ"; failed=1; }

# ENOSPC: a tmpfs of one page, the trace header made large by a long argument (the program ignores
# its arguments) so that the records do not fit.
mnt=$work/mnt
mkdir -p "$mnt"
arg=$(head -c 3600 /dev/zero | tr '\0' x)
ns=(unshare -rm)
[[ $(id -u) -eq 0 ]] && ns=(unshare -m)
if "${ns[@]}" sh -c "mount -t tmpfs -o size=4k tmpfs '$mnt'" 2>"$work/mount.err"; then
  check enospc "No space left on device.*$stops" "$work/enospc.trace" INCOMPLETE -- \
    "${ns[@]}" sh -c 'mount -t tmpfs -o size=4k tmpfs "$1" && shift &&
      env LD_PRELOAD="$1" HETOPT_MODE=trace HETOPT_TRACE_FILE="$2/x.trace" "$3" "$4"; rc=$?
      cp "$2/x.trace" "$5"; exit $rc' _ "$mnt" "$shim" "$mnt" "$app" "$arg" "$work/enospc.trace"
else
  echo "NOT RUN: enospc: no tmpfs can be mounted here ($(head -n 1 "$work/mount.err"))"
fi

[[ $failed -eq 0 ]] && echo "OK: every disk fault handled"
exit $failed
