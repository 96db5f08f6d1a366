#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian package CPack makes (packaging/CMakeLists.txt): named hetopt_<version>_<arch>.deb, its
# dependencies installable here (apt's simulation of `apt install ./hetopt_*.deb`, which changes
# nothing), its files under /usr with the shim private in /usr/lib/hetopt, and the unpacked tree
# working where it lies.
#   debian_package.sh BUILD_DIR
set -u
build=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-deb.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.err; do [[ -s $f ]] && { echo "--- $f"; tail -n 20 "$f"; }; done; exit 1; }
command -v dpkg-deb >/dev/null || fail "no dpkg-deb (Debian's dpkg)"

(cd "$build" && cpack -G DEB -B "$work/out") >"$work/cpack.out" 2>"$work/cpack.err" || fail "cpack exited $?"
debs=("$work"/out/hetopt_*.deb)
[[ -f ${debs[0]} && ${#debs[@]} -eq 1 ]] || fail "no single hetopt_*.deb: $(ls "$work/out")"
deb=${debs[0]}
[[ $(basename "$deb") =~ ^hetopt_[0-9.]+_[a-z0-9]+\.deb$ ]] || fail "unexpected name $(basename "$deb")"
dpkg-deb -I "$deb" >"$work/info.out" || fail "dpkg-deb -I exited $?"
grep -q '^ Depends: .*libc6' "$work/info.out" || fail "no Depends on libc6: $(cat "$work/info.out")"
dpkg-deb -c "$deb" >"$work/contents.out" || fail "dpkg-deb -c exited $?"
for f in ./usr/bin/hetopt ./usr/lib/hetopt/libhetopt_shim.so ./usr/share/man/man1/hetopt.1 \
         ./usr/share/bash-completion/completions/hetopt ./usr/share/doc/hetopt/copyright; do
  grep -q " $f\$" "$work/contents.out" || fail "the package has no $f"
done
if grep -v ' \./usr/' "$work/contents.out" | grep -qv ' \./$'; then
  fail "files outside /usr: $(grep -v ' ./usr/' "$work/contents.out")"
fi
# Whether apt could install it here: a simulation, as any user, changing nothing.
apt-get install -s -q "$deb" >"$work/apt.out" 2>"$work/apt.err" || fail "apt-get install -s exited $?"
grep -q '^Inst hetopt ' "$work/apt.out" || fail "apt would not install hetopt: $(cat "$work/apt.out")"
dpkg-deb -x "$deb" "$work/root" || fail "dpkg-deb -x exited $?"
"$work/root/usr/bin/hetopt" --version >"$work/version.out" 2>"$work/version.err" || fail "hetopt --version exited $?"
HETOPT_DB=$work/db XDG_CACHE_HOME=$work/cache "$work/root/usr/bin/hetopt" trace --no-analyze -o "$work/t.trace" \
  -- sh -c 'echo "$LD_PRELOAD"' >"$work/env.out" 2>"$work/env.err" || fail "hetopt trace exited $?"
[[ $(cat "$work/env.out") == "$work/root/usr/lib/hetopt/libhetopt_shim.so" ]] ||
  fail "the unpacked hetopt preloaded $(cat "$work/env.out")"
echo "OK: $(basename "$deb"): $(grep '^ Depends:' "$work/info.out")"
