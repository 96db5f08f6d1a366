#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Concurrent writers of one hetopt DB (SQLite, rollback journal, BEGIN IMMEDIATE, 10 s busy
# timeout: store/db.cpp). On a fresh DB, `hetopt characterize --quick` runs while rounds of three
# `hetopt trace` runs (two of the same program, one of another) finish together and store their
# profiles; then two traces finish while another connection holds the write lock for 3 s (they
# must wait), and one while it is held past the busy timeout (it must say the profile was not
# stored, and still exit with the program's status). Every run: the program's own exit status and
# stdout; afterwards the DB passes PRAGMA integrity_check, holds one profile per program and the
# characterization, and `hetopt run` reads the profile back.
#   db_concurrency.sh HETOPT APP_A APP_B    (both exit 3, as exit3_app and fault_app do)
set -u
hetopt=$1 app_a=$2 app_b=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-dbconc.XXXXXX") || exit 2
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
unset HETOPT_MODE HETOPT_PLAN_FILE HETOPT_STATS HETOPT_TRACE_FILE OPENCL_LAYERS FAULTCL
failed=0
fail() { echo "FAIL: $*"; failed=1; }

"$app_a" >"$work/a.native" 2>/dev/null
"$app_b" >"$work/b.native" 2>/dev/null

# trace NAME APP NATIVE: starts `hetopt trace` of APP in the background.
trace() { "$hetopt" trace -o "$work/$1.trace" -- "$2" >"$work/$1.out" 2>"$work/$1.err" &
          pids[$1]=$!; natives[$1]=$3; }
# verify NAME WANT: the run's exit status and stdout, and WANT (stored|not-stored).
verify() {
  local name=$1 want=$2 rc why=''
  wait "${pids[$name]}"
  rc=$?
  [[ $rc -eq 3 ]] || why+=" exit status $rc;"
  cmp -s "${natives[$name]}" "$work/$name.out" || why+=" stdout differs from native;"
  if [[ $want == stored ]]; then
    grep -q 'profile stored' "$work/$name.err" || why+=" no 'profile stored';"
    ! grep -qi 'locked\|not stored' "$work/$name.err" || why+=" a DB error;"
  else
    grep -q 'profile not stored: .*database is locked' "$work/$name.err" ||
      why+=" the lost profile was not reported;"
  fi
  if [[ -n $why ]]; then fail "$name:$why"; grep '^hetopt: ' "$work/$name.err" | sed 's/^/    /'
  else echo "ok: $name: $(grep -o 'profile.*' "$work/$name.err" | head -n 1 | cut -c1-120)"; fi
}
declare -A pids natives

# ---- characterize meanwhile, rounds of three traces finishing together ------------------------
"$hetopt" characterize --quick >"$work/char.out" 2>"$work/char.err" &
char=$!
round=0
while ((round < 2)) || { kill -0 $char 2>/dev/null && ((round < 8)); }; do
  round=$((round + 1))
  trace a$round.1 "$app_a" "$work/a.native"
  trace a$round.2 "$app_a" "$work/a.native"
  trace b$round "$app_b" "$work/b.native"
  for n in a$round.1 a$round.2 b$round; do verify $n stored; done
done
kill -0 $char 2>/dev/null && during=after || during=during
wait $char || { fail "characterize --quick exited $? alongside the traces"; tail -n 3 "$work/char.err"; }
echo "ok: characterize --quick finished $during $round rounds of three traces"

# ---- another connection holds the write lock ------------------------------------------------
# hold SECONDS: takes the DB's write lock (BEGIN IMMEDIATE) for SECONDS; returns once it is held.
hold() {
  rm -f "$work/held"
  python3 -c '
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
open(sys.argv[2], "w").close()
time.sleep(float(sys.argv[3]))
c.execute("COMMIT")' "$HETOPT_DB" "$work/held" "$1" &
  holder=$!
  while [[ ! -e $work/held ]] && kill -0 $holder 2>/dev/null; do sleep 0.05; done
}
hold 3
trace wait.a "$app_a" "$work/a.native"
trace wait.b "$app_b" "$work/b.native"
verify wait.a stored
verify wait.b stored
wait $holder
hold 12
trace timeout.a "$app_a" "$work/a.native"
verify timeout.a not-stored
wait $holder

# ---- the DB afterwards ----------------------------------------------------------------------
check=$(python3 -c '
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(c.execute("PRAGMA integrity_check").fetchone()[0],
      c.execute("SELECT count(*) FROM app_profiles").fetchone()[0],
      c.execute("SELECT count(DISTINCT program_path) FROM app_profiles").fetchone()[0],
      c.execute("SELECT count(*) FROM char_runs").fetchone()[0])' "$HETOPT_DB")
[[ $check == "ok 2 2 1" ]] ||
  fail "DB afterwards: integrity, profiles, programs, characterizations = $check, expected ok 2 2 1"
for app in "$app_a" "$app_b"; do
  out=$("$hetopt" run --force --policy opencl --stats -- "$app" 2>&1 >/dev/null)
  # Its plan came from the stored profile: it says what it pins (whether the pool is ready before
  # this short program ends depends on the machine's load, and is not what this test is about).
  grep -Eq '^hetopt: optimizing: [0-9]+ sites? from a pool \(opencl' <<<"$out" ||
    { fail "hetopt run did not use the stored profile of $app"; sed 's/^/    /' <<<"$out"; }
done

[[ $failed -eq 0 ]] && echo "OK: concurrent DB writers"
exit $failed
