#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The preloaded entry points' common path, read from the disassembly of the built shim: malloc
# tests "resolved?" inline and jumps to its cold part when not (no out-of-line call on every
# allocation), and neither malloc nor free reaches the nesting depth through a TLS wrapper call
# (initial-exec TLS: one %fs-relative load).
#   preload_fast_path.sh OBJDUMP LIBHETOPT_SHIM
set -uo pipefail
objdump=$1 lib=$2
fail() { echo "FAIL: $*"; exit 1; }
asm=$("$objdump" -d --no-show-raw-insn "$lib") || fail "$objdump could not read $lib"
body() { awk -v f="<$1>:" '$2 == f { on = 1; next } on && /^$/ { exit } on' <<<"$asm"; }
malloc=$(body malloc)
free=$(body free)
[[ -n $malloc && -n $free ]] || fail "no malloc or free in $lib"
# Before the first call the body must branch to malloc.cold: the resolution test is inline.
head=$(sed -n '1,/call/p' <<<"$malloc")
grep -q "<malloc.cold>" <<<"$head" || { echo "$malloc" | head -20; fail "malloc calls out before its inline resolved test"; }
for f in malloc free; do
  b=$(body $f)
  ! grep -Eq "call.*(__tls_get_addr|TLS init|_ZTW)" <<<"$b" || fail "$f calls a TLS wrapper"
  ! grep -Eq "call.*(ensureResolved|resolveSlow)" <<<"$b" || fail "$f calls the resolver on its common path"
done
grep -q "%fs:" <<<"$malloc" || fail "malloc reads no initial-exec thread-local (the depth)"
echo "OK: malloc tests its resolution inline (cold part: malloc.cold); malloc and free read the depth without a TLS call"
