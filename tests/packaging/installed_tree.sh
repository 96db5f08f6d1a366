#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cmake --install` into a temporary prefix, the prefix moved elsewhere, and the moved tree used:
# hetopt finds its shim and symbolizer beside itself (nothing points back into the build or the
# first prefix), traces and runs a test app, and its man page and bash completion are in place.
# A copy of bin/hetopt alone says where it looked and what to copy.
#   installed_tree.sh BUILD_DIR APP [APP_ARGS...]
set -u
build=$1 app=$2
shift 2
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-install.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.err; do [[ -s $f ]] && { echo "--- $f"; tail -n 20 "$f"; }; done; exit 1; }

cmake --install "$build" --prefix "$work/first" >"$work/install.out" 2>"$work/install.err" ||
  fail "cmake --install exited $?"
for f in bin/hetopt lib/hetopt/libhetopt_shim.so share/man/man1/hetopt.1 \
         share/bash-completion/completions/hetopt share/doc/hetopt/README.md share/doc/hetopt/copyright; do
  [[ -f $work/first/$f ]] || fail "the installed tree has no $f"
done
mv "$work/first" "$work/moved"
prefix=$work/moved
hetopt=$prefix/bin/hetopt
for f in "$hetopt" "$prefix"/lib/hetopt/*.so; do
  if readelf -d "$f" | grep -E 'R(UN)?PATH' | grep -q -e "$build" -e "$work/first"; then
    fail "$f has a search path into the build or the first prefix: $(readelf -d "$f" | grep -E 'R(UN)?PATH')"
  fi
done

"$hetopt" --version >"$work/version.out" 2>"$work/version.err" || fail "hetopt --version exited $?"
grep -q '^hetopt [0-9]' "$work/version.out" || fail "hetopt --version printed: $(cat "$work/version.out")"
"$hetopt" devices >"$work/devices.out" 2>"$work/devices.err" || fail "hetopt devices exited $?"
grep -q 'hetopt uses this' "$work/devices.out" || fail "hetopt devices marked no device"

export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache
# The shim the moved tree puts into the program is its own.
"$hetopt" trace --no-analyze -o "$work/env.trace" -- sh -c 'echo "$LD_PRELOAD"' >"$work/env.out" 2>"$work/env.err" ||
  fail "hetopt trace of sh exited $?"
[[ $(cat "$work/env.out") == "$prefix/lib/hetopt/libhetopt_shim.so" ]] ||
  fail "the program got LD_PRELOAD=$(cat "$work/env.out"), not the moved tree's shim"
"$hetopt" trace -o "$work/app.trace" -- "$app" "$@" >"$work/trace.out" 2>"$work/trace.err" ||
  fail "hetopt trace exited $?"
grep -q "profile stored" "$work/trace.err" || fail "hetopt trace stored no profile"
if grep -q "cannot load the symbolizer" "$work/trace.err"; then fail "the symbolizer was not found"; fi
"$hetopt" run --verify=off --stats --policy opencl -- "$app" "$@" >"$work/run.out" 2>"$work/run.err" ||
  fail "hetopt run exited $?"
grep -q '^hetopt: stats: ' "$work/run.err" || fail "hetopt run did not optimize (no stats)"
cmp -s "$work/trace.out" "$work/run.out" || fail "the program's output differs between trace and run"

# The man page renders without warnings; the completion completes.
if command -v groff >/dev/null; then
  groff -man -Tutf8 -ww -z "$prefix/share/man/man1/hetopt.1" 2>"$work/man.err" || fail "groff exited $?"
  [[ ! -s $work/man.err ]] || fail "groff warns about the man page"
fi
got=$(bash -c 'source "$1"; COMP_WORDS=(hetopt run --dry); COMP_CWORD=2; _hetopt; echo "${COMPREPLY[*]}"' _ \
  "$prefix/share/bash-completion/completions/hetopt")
[[ $got == --dry-run ]] || fail "completing 'hetopt run --dry' gave '$got'"

# bin/hetopt alone: it cannot put its shim into a program, and says why.
mkdir -p "$work/lone/bin"
cp "$hetopt" "$work/lone/bin/"
"$work/lone/bin/hetopt" trace --no-analyze -o "$work/lone.trace" -- /bin/true >"$work/lone.out" 2>"$work/lone.err" &&
  fail "a lone bin/hetopt traced a program"
grep -q "libhetopt_shim.so is in neither $work/lone/lib/hetopt nor $work/lone/lib: .*copy or move the whole installed tree" \
  "$work/lone.err" || fail "a lone bin/hetopt did not say where it looked: $(cat "$work/lone.err")"
echo "OK: installed, moved, traced and ran $(basename "$app") from $prefix"
