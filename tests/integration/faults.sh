#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Faults hetopt must survive. For each, the program (exit3_app: transfers from malloc'd memory,
# exits 3) must print exactly its native stdout and exit 3, and hetopt must say what happened in
# the expected message, once:
#   - no locked memory (RLIMIT_MEMLOCK 64 KiB, CAP_IPC_LOCK dropped) under a hybrid/locked pool;
#   - a pool too small for the sites (fallbacks counted);
#   - corrupt, truncated, foreign-version, world-writable, missing plan files; a plan whose file
#     stamp is another file's; a plan for another program;
#   - bogus HETOPT_* values; a corrupt or missing DB; a trace path that cannot be created, or
#     that holds another file (hetopt trace stops before the program: exit 2);
#   - another user's plants: a symbolic link at the plan, trace or DB path (nothing is written
#     through it), a group/world-writable DB or DB directory.
#   faults.sh HETOPT SHIM EXIT3_APP
set -u
source "$(dirname "${BASH_SOURCE[0]}")/plan_lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/stats_lib.sh"
hetopt=$1 shim=$2 app=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-faults.XXXXXX") || exit 2
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
unset HETOPT_MODE HETOPT_PLAN_FILE HETOPT_STATS HETOPT_MIN_TRACKED_SIZE HETOPT_SITE_DEPTH \
  HETOPT_POOL_WAIT_MS HETOPT_TRACE_FILE
failed=0

"$app" >"$work/native.out" 2>/dev/null
rc=$?
[[ $rc -eq 3 && -s $work/native.out ]] || { echo "FAIL: native run exited $rc"; exit 1; }

# check NAME PATTERN [COUNT] -- CMD...: exit 3, native stdout, and COUNT (default 1) lines of
# hetopt's on stderr, one of which matches PATTERN (grep -E).
check() {
  local name=$1 pattern=$2 want=1 rc n
  shift 2
  [[ $1 != -- ]] && { want=$1; shift; }
  shift
  "$@" >"$work/$name.out" 2>"$work/$name.err"
  rc=$?
  n=$(hetopt_messages "$work/$name.err")
  local why=''
  [[ $rc -eq 3 ]] || why+=" exit status $rc;"
  cmp -s "$work/native.out" "$work/$name.out" || why+=" stdout differs from native;"
  [[ $n -eq $want ]] || why+=" $n lines from hetopt, expected $want;"
  grep -Eq "$pattern" "$work/$name.err" || why+=" no line matching '$pattern';"
  if [[ -n $why ]]; then
    echo "FAIL: $name:$why"; sed 's/^/    /' "$work/$name.err"; failed=1
  else
    echo "ok: $name: $(grep -E "$pattern" "$work/$name.err" | head -n 1 | cut -c1-200)"
  fi
}
# refused NAME PATTERN -- CMD...: hetopt stops before the program: exit 2, no program output, one
# line of hetopt's matching PATTERN.
refused() {
  local name=$1 pattern=$2 rc n why=''
  shift 3
  "$@" >"$work/$name.out" 2>"$work/$name.err"
  rc=$?
  n=$(grep -c '^hetopt' "$work/$name.err")
  [[ $rc -eq 2 ]] || why+=" exit status $rc;"
  [[ -s $work/$name.out ]] && why+=" the program ran;"
  [[ $n -eq 1 ]] || why+=" $n lines from hetopt, expected 1;"
  grep -Eq "$pattern" "$work/$name.err" || why+=" no line matching '$pattern';"
  if [[ -n $why ]]; then
    echo "FAIL: $name:$why"; sed 's/^/    /' "$work/$name.err"; failed=1
  else
    echo "ok: $name: $(head -n 1 "$work/$name.err" | cut -c1-200)"
  fi
}
# served NAME COUNT EXPR... -- CMD...: exit 3, native stdout, COUNT lines of hetopt's on stderr,
# and the run's stats as JSON ($work/NAME.json, HETOPT_STATS_JSON) hold every EXPR (stats_check.py).
served() {
  local name=$1 want=$2 rc n why=''
  shift 2
  local exprs=()
  while [[ $1 != -- ]]; do exprs+=("$1"); shift; done
  shift
  HETOPT_STATS_JSON=$work/$name.json "$@" >"$work/$name.out" 2>"$work/$name.err"
  rc=$?
  n=$(hetopt_messages "$work/$name.err")
  [[ $rc -eq 3 ]] || why+=" exit status $rc;"
  cmp -s "$work/native.out" "$work/$name.out" || why+=" stdout differs from native;"
  [[ $n -eq $want ]] || why+=" $n lines from hetopt, expected $want;"
  [[ -f $work/$name.json ]] && stats_expect "$work/$name.json" "${exprs[@]}" || why+=" stats do not hold;"
  if [[ -n $why ]]; then
    echo "FAIL: $name:$why"; sed 's/^/    /' "$work/$name.err"; failed=1
  else
    echo "ok: $name: $(stats_get "$work/$name.json" pool | cut -c1-200)"
  fi
}
shimmed() { env LD_PRELOAD="$shim" OPENCL_LAYERS="$shim" "$@"; }

# ---- a hand-written plan naming every tracked site of the app -------------------------------
HETOPT_MODE=count HETOPT_REPORT_FILE="$work/count" LD_PRELOAD="$shim" "$app" >/dev/null 2>&1
keys=$(awk '$1 == "site" { print $2 }' "$work/count")
[[ -n $keys ]] || { echo "FAIL: count mode saw no allocation site"; exit 1; }
plan() {  # plan FILE POOL_POLICY POOL_BYTES
  # shellcheck disable=SC2086
  write_plan "$1" "$app" "$2" "$3" $keys || { echo "FAIL: $app has no build id"; exit 1; }
}
# The app allocates right after its context: its blocks wait for the pool being made there.
opt() { local p=$1; shift; shimmed env HETOPT_MODE=optimize HETOPT_PLAN_FILE="$p" HETOPT_POOL_WAIT_MS=5000 "$@"; }
plan "$work/good.plan" opencl $((8 << 20))
served good_plan 0 "s.pool_policy == 'opencl'" 's.redirected >= 2' -- opt "$work/good.plan" "$app"

# ---- (a) no locked memory: root ignores RLIMIT_MEMLOCK unless CAP_IPC_LOCK is dropped -----------
nolock=(prlimit --memlock=65536)
[[ $(id -u) -eq 0 ]] && nolock=(setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock "${nolock[@]}")
for policy in hybrid locked; do
  plan "$work/$policy.plan" $policy $((8 << 20))
  # One warning when the pool fails; the stats say why and what the allocations fell back to.
  served memlock_$policy 1 "s.pool_state == 'failed'" \
    "re.match('mlock of .* refused.*RLIMIT_MEMLOCK 64 KiB', s.pool_failure)" \
    's.redirected == 0 and s.fallback_no_pool >= 2' -- \
    "${nolock[@]}" env LD_PRELOAD="$shim" HETOPT_MODE=optimize HETOPT_PLAN_FILE="$work/$policy.plan" \
    HETOPT_POOL_WAIT_MS=5000 "$app"
  grep -Eq 'pinned pool unavailable \(mlock of .* refused' "$work/memlock_$policy.err" ||
    { echo "FAIL: memlock_$policy: no warning of the pool's failure"; failed=1; }
done
# Through `hetopt run --policy hybrid` (profile from `hetopt trace`): the same, end to end.
"$hetopt" trace -o "$work/app.trace" -- "$app" >/dev/null 2>"$work/trace.err"
grep -q "profile stored" "$work/trace.err" || { echo "FAIL: hetopt trace stored no profile"; exit 1; }
# Two lines: what hetopt run pins (optimizing: ...), the pool's failure. The app's blocks wait for
# the pool's outcome (a loaded machine can end the app before the mlock is tried).
served memlock_run 2 "s.pool_state == 'failed' and re.match('mlock of', s.pool_failure)" -- \
  "${nolock[@]}" env HETOPT_POOL_WAIT_MS=5000 "$hetopt" run --stats="$work/memlock_run.json" --policy hybrid -- "$app"
grep -Eq '^hetopt: optimizing: [0-9]+ sites? from a pool \(hybrid, [0-9.]+ [KMG]iB\).*predicted saving ~.*--stats shows what was done( \(the plan is [a-z]+: .*\))?$' \
  "$work/memlock_run.err" || { echo "FAIL: memlock_run: no 'optimizing:' line saying what is pinned"; failed=1; }

# ---- (b) a pool too small for the sites: every block that does not fit falls back -------------
plan "$work/small.plan" opencl 65536
served pool_too_small 0 "s.pool_policy == 'opencl' and s.pool_bytes == 65536" 's.fallback_pool_full >= 2' -- \
  opt "$work/small.plan" "$app"

# ---- (c) bad plan files: one warning, unoptimized run ----------------------------------------
printf 'garbage\001\002\n' >"$work/corrupt.plan"
head -c 60 "$work/good.plan" >"$work/cut.plan"                   # cut inside a line
head -n 3 "$work/good.plan" >"$work/lines.plan"                  # whole lines missing
sed 's/^hetopt-plan 2$/hetopt-plan 99/' "$work/good.plan" >"$work/v99.plan"
cp "$work/good.plan" "$work/shared.plan"
chmod 600 "$work/corrupt.plan" "$work/cut.plan" "$work/lines.plan" "$work/v99.plan"
chmod 666 "$work/shared.plan"
check plan_corrupt 'optimization plan .*not a hetopt plan.*running unoptimized' -- \
  opt "$work/corrupt.plan" "$app"
check plan_cut_line 'optimization plan .*truncated.*running unoptimized' -- opt "$work/cut.plan" "$app"
check plan_missing_lines 'optimization plan .*truncated.*running unoptimized' -- \
  opt "$work/lines.plan" "$app"
check plan_version 'version 99 is not supported \(this hetopt reads 3\)' -- opt "$work/v99.plan" "$app"
check plan_world_writable 'writable by others.*refusing it' -- opt "$work/shared.plan" "$app"
check plan_missing 'optimization plan .*No such file' -- opt "$work/none.plan" "$app"
check plan_unset 'without HETOPT_PLAN_FILE' -- shimmed env HETOPT_MODE=optimize "$app"

# ---- the plan's stamp of the program file (`hetopt run` writes it so the shim need not hash) ------
stamp_of() { command stat -L -c '%d %i %s %.9Y %.9Z' "$1" | sed 's/\.//g'; }
# Another file's stamp: the shim identifies the program itself, and it is this one.
sed "/^program /a stamp $(stamp_of "$hetopt")" "$work/good.plan" >"$work/stamp_other.plan"
chmod 600 "$work/stamp_other.plan"
served plan_stamp_other_file 0 "s.pool_policy == 'opencl'" -- opt "$work/stamp_other.plan" "$app"
# A plan made for another program, with that program's stamp: not for this process.
# shellcheck disable=SC2086
write_plan "$work/other.plan" "$hetopt" opencl $((8 << 20)) $keys
sed -i "/^program /a stamp $(stamp_of "$hetopt")" "$work/other.plan"
chmod 600 "$work/other.plan"
check plan_for_another_program 'not optimizing this process: the plan is for .*hetopt' -- \
  opt "$work/other.plan" HETOPT_DEBUG=1 "$app"

# ---- bogus HETOPT_* values: one warning each, the default used -------------------------------
check mode_bogus 'ignoring HETOPT_MODE=bogus' -- shimmed env HETOPT_MODE=bogus "$app"
check min_tracked_abc 'invalid HETOPT_MIN_TRACKED_SIZE' -- \
  opt "$work/good.plan" HETOPT_MIN_TRACKED_SIZE=abc "$app"
check site_depth_99 'invalid HETOPT_SITE_DEPTH' -- opt "$work/good.plan" HETOPT_SITE_DEPTH=99 "$app"
check pool_wait_negative 'invalid HETOPT_POOL_WAIT_MS' -- \
  opt "$work/good.plan" HETOPT_POOL_WAIT_MS=-1 "$app"

# ---- DBs and trace paths through the CLI ------------------------------------------------------
head -c 4096 /dev/urandom >"$work/corrupt.db"
check run_db_corrupt 'not a readable hetopt DB.*running unoptimized' -- \
  "$hetopt" run --db "$work/corrupt.db" -- "$app"
check run_db_missing 'no hetopt DB at .*running unoptimized' -- \
  "$hetopt" run --db "$work/nodir/none.db" -- "$app"
touch "$work/afile"
refused trace_not_a_dir 'cannot create .*; nothing was run$' -- \
  "$hetopt" trace -o "$work/afile/x.trace" -- "$app"
refused trace_no_dir 'cannot create .*; nothing was run$' -- \
  "$hetopt" trace -o "$work/nodir/x.trace" -- "$app"
# -o naming a file that is not a trace: kept, unless --force.
printf 'int main() { return 0; }\n' >"$work/main.c"
refused trace_not_a_trace 'main.c exists and is not a hetopt trace; not overwriting it \(--force does\)' -- \
  "$hetopt" trace --no-analyze -o "$work/main.c" -- "$app"
grep -q 'int main' "$work/main.c" || { echo "FAIL: trace_not_a_trace: main.c was changed"; failed=1; }
check trace_force_overwrites 'hetopt: trace .*main.c' 7 -- \
  "$hetopt" trace --no-analyze --force -o "$work/main.c" -- "$app"
"$hetopt" show "$work/main.c" >/dev/null 2>&1 || { echo "FAIL: trace_force_overwrites: no trace in main.c"; failed=1; }
# show on a file that is missing or not a trace: exit 2, like analyze.
"$hetopt" show "$work/none.trace" >/dev/null 2>&1
rc=$?
[[ $rc -eq 2 ]] && echo "ok: show_missing: exit 2" || { echo "FAIL: show_missing: exit $rc"; failed=1; }
# show --salvage on a trace with nothing before its damage (cut inside its first chunk): exit 2,
# saying so; on one with damage after its records, those records and a line saying what was cut.
first=$(grep -obUa CHNK "$work/main.c" | head -n 1 | cut -d: -f1)
head -c $((first + 10)) "$work/main.c" >"$work/nothing.trace"
"$hetopt" show --salvage "$work/nothing.trace" >"$work/salvage.out" 2>"$work/salvage.err"
rc=$?
if [[ $rc -eq 2 ]] &&
   grep -q 'nothing.trace: nothing to salvage (.*): truncated' "$work/salvage.err"; then
  echo "ok: show_salvage_nothing: $(cat "$work/salvage.err")"
else
  echo "FAIL: show_salvage_nothing: exit $rc"; cat "$work/salvage.err"; failed=1
fi
{ cat "$work/main.c"; printf 'not a chunk, not a chunk, not a chunk\n'; } >"$work/cut.trace"
"$hetopt" show --salvage "$work/cut.trace" >"$work/salvage.out" 2>"$work/salvage.err"
rc=$?
if [[ $rc -eq 0 ]] && grep -q '^thread 0' "$work/salvage.out" &&
   grep -q 'salvaged what precedes the damage: corrupt trace: no chunk marker' "$work/salvage.err"; then
  echo "ok: show_salvage_cut: $(cat "$work/salvage.err")"
else
  echo "FAIL: show_salvage_cut: exit $rc"; cat "$work/salvage.err"; failed=1
fi
# The trace is written and analyzed; only storing the profile fails, and says so.
"$hetopt" trace --db "$work/corrupt.db" -o "$work/c.trace" -- "$app" >"$work/trace_db.out" \
  2>"$work/trace_db.err"
rc=$?
if [[ $rc -ne 3 ]] || ! cmp -s "$work/native.out" "$work/trace_db.out" ||
   ! grep -q 'profile not stored: .*not a readable hetopt DB' "$work/trace_db.err" ||
   ! "$hetopt" show "$work/c.trace" >/dev/null 2>&1; then
  echo "FAIL: trace_db_corrupt (exit $rc)"; tail -n 5 "$work/trace_db.err"; failed=1
else
  echo "ok: trace_db_corrupt: $(grep 'profile not stored' "$work/trace_db.err" | cut -c1-200)"
fi

# ---- another user's plants: links at hetopt's paths, files and directories others can write ----
printf 'precious\n' >"$work/victim"
victim_intact() {  # NAME: nothing was written through a link
  [[ $(cat "$work/victim") == precious ]] || { echo "FAIL: $1: the link's target was written"; failed=1; }
}
ln -s "$work/good.plan" "$work/link.plan"
check plan_symlink 'link.plan is a symbolic link; refusing it\); running unoptimized' -- \
  opt "$work/link.plan" "$app"
# `hetopt run` writes its plan where a link waits (the plan of memlock_run above, replaced).
planfile=$(ls "$work"/cache/hetopt/plans/*.plan 2>/dev/null | head -n 1)
if [[ -z $planfile ]]; then
  echo "FAIL: hetopt run left no plan in $work/cache/hetopt/plans"; failed=1
else
  rm -f "$planfile" && ln -s "$work/victim" "$planfile"
  check run_plan_symlink 'cannot write .*\.plan: is a symbolic link; refusing to write through it; running unoptimized' -- \
    "$hetopt" run --policy hybrid -- "$app"
  victim_intact run_plan_symlink
  rm -f "$planfile"
fi
ln -s "$work/victim" "$work/link.trace"
refused trace_symlink 'cannot create .*link.trace: is a symbolic link; refusing to write through it; nothing was run' -- \
  "$hetopt" trace -o "$work/link.trace" -- "$app"
check shim_trace_symlink 'trace mode: cannot create .*link.trace: is a symbolic link.*running untraced' -- \
  shimmed env HETOPT_MODE=trace HETOPT_TRACE_FILE="$work/link.trace" "$app"
victim_intact trace_symlink
ln -s "$HETOPT_DB" "$work/link.db"
check run_db_symlink 'link.db is a symbolic link; refusing to use it as the DB.*running unoptimized' -- \
  "$hetopt" run --db "$work/link.db" -- "$app"
for mode in 660 606; do
  cp "$HETOPT_DB" "$work/shared$mode.db" && chmod $mode "$work/shared$mode.db"
  check run_db_mode$mode 'shared'$mode'.db is writable by others; refusing to use it.*running unoptimized' -- \
    "$hetopt" run --db "$work/shared$mode.db" -- "$app"
done
mkdir -p "$work/opendir" && cp "$HETOPT_DB" "$work/opendir/hetopt.db" && chmod 777 "$work/opendir"
check run_db_open_dir 'directory .*opendir is writable by others; refusing to use files in it.*running unoptimized' -- \
  "$hetopt" run --db "$work/opendir/hetopt.db" -- "$app"

[[ $failed -eq 0 ]] && echo "OK: every fault handled"
exit $failed
