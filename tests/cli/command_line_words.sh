#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The command line as a user meets it: --opt=value and --opt value in every command, a bad value
# naming its range in the one wording every command uses ("hetopt CMD: ... (see hetopt CMD
# --help)", exit 2), -V/--version, the program's own options left to it, and every --help ending
# with its exit status.
#   command_line_words.sh HETOPT
set -u
hetopt=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-cmdline.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# expect_error WANT_STDERR -- ARGS...: exit 2 and exactly that line on stderr.
expect_error() {
  local want=$1
  shift 2
  local got rc
  got=$("$hetopt" "$@" 2>&1 >/dev/null)
  rc=$?
  [[ $rc == 2 && $got == "$want" ]] || fail "hetopt $*: exit $rc, said '$got'; want exit 2 and '$want'"
}

expect_error "hetopt report: --last '0' is not a whole number from 1 to 50 (see hetopt report --help)" -- report --last 0 -- /bin/true
expect_error "hetopt report: --last '99' is not a whole number from 1 to 50 (see hetopt report --help)" -- report --last=99 -- /bin/true
expect_error "hetopt report: --last 'abc' is not a whole number from 1 to 50 (see hetopt report --help)" -- report --last abc /bin/true
expect_error "hetopt run: unknown option --bogus (see hetopt run --help)" -- run --bogus -- /bin/true
expect_error "hetopt run: --verify 'maybe' is not on or off (see hetopt run --help)" -- run --verify=maybe -- /bin/true
expect_error "hetopt trace: no program given (see hetopt trace --help)" -- trace -o "$work/x.trace"
expect_error "hetopt characterize: --plot-format 'gif' is not png or svg (see hetopt characterize --help)" -- characterize --plot-format gif
expect_error "hetopt devices: unexpected argument 'gpu' (see hetopt devices --help)" -- devices gpu
expect_error "hetopt: unknown command 'frobnicate' (see hetopt --help)" -- frobnicate
expect_error "hetopt: unknown command 'frobnicate' (see hetopt --help)" -- help frobnicate

# --opt=value where only --opt value worked: accepted, and meant the same.
"$hetopt" run --db="$work/other.db" --verify=off -- /bin/true 2>"$work/db.err" || fail "run --db=PATH refused: $(cat "$work/db.err")"
grep -q "$work/other.db" "$work/db.err" || fail "run --db=PATH did not use PATH: $(cat "$work/db.err")"
"$hetopt" devices --device=cpu >/dev/null 2>"$work/dev.err"; [[ $? != 2 ]] || fail "devices --device=cpu refused: $(cat "$work/dev.err")"
"$hetopt" report --last=3 -- /bin/true >/dev/null 2>"$work/last.err"; [[ $? == 1 ]] || fail "report --last=3: $(cat "$work/last.err")"

# The program's own options are its own, wherever they look like hetopt's.
got=$("$hetopt" trace --no-analyze -o "$work/t.trace" -- sh -c 'echo "$*"' sh --db x -o y --help 2>/dev/null)
[[ $got == "--db x -o y --help" ]] || fail "the program got '$got', not its own options"
got=$("$hetopt" trace --no-analyze -o "$work/u.trace" sh -c 'echo "$*"' sh --stats -V 2>/dev/null)
[[ $got == "--stats -V" ]] || fail "without --, the program got '$got', not its own options"

# A --device that matches nothing is said, with what there is, before the program runs.
"$hetopt" run --device no-such-device --dry-run -- /bin/true >/dev/null 2>"$work/nodev.err"
grep -q "^hetopt: run: --device no-such-device: no OpenCL device matches 'no-such-device' (have: '.*'); \`hetopt devices\` lists them$" \
  "$work/nodev.err" || fail "run --device matching nothing: $(cat "$work/nodev.err")"
"$hetopt" trace --no-analyze -o "$work/nodev.trace" --device=no-such-device -- /bin/true 2>"$work/nodev.err"
grep -q "^hetopt: trace: --device no-such-device: no OpenCL device matches" "$work/nodev.err" ||
  fail "trace --device matching nothing: $(cat "$work/nodev.err")"
"$hetopt" run --device cpu --dry-run -- /bin/true >/dev/null 2>"$work/cpu.err"
if grep -q -- "--device cpu" "$work/cpu.err"; then fail "run --device cpu warned: $(cat "$work/cpu.err")"; fi

# Versions, and each command's help.
version=$("$hetopt" --version)
[[ $version == "hetopt "* ]] || fail "hetopt --version said '$version'"
for cmd in "" devices run trace show characterize analyze report; do
  # shellcheck disable=SC2086
  [[ $("$hetopt" $cmd -V) == "$version" ]] || fail "hetopt $cmd -V is not '$version'"
  # shellcheck disable=SC2086
  help=$("$hetopt" $cmd --help) || fail "hetopt $cmd --help exited $?"
  grep -q '^exit status:$' <<<"$help" || fail "hetopt $cmd --help has no exit status section"
  grep -q '^usage: hetopt' <<<"$help" || fail "hetopt $cmd --help has no usage line"
  # shellcheck disable=SC2086
  [[ -z $cmd || $("$hetopt" help $cmd) == "$help" ]] || fail "hetopt help $cmd is not hetopt $cmd --help"
done
[[ $failed == 0 ]] && echo "OK: the command line's words"
exit $failed
