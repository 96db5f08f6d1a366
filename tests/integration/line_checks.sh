# SPDX-License-Identifier: MIT
# Sourced by the integration scripts that check a command's output line by line and report every
# check that fails before they end (`exit $failed`): `fail` says one and counts it, `expect` and
# `refuse` want a line matching a regex in a file, or none, and show the file's end when not.
failed=0
fail() { echo "FAIL: $*"; failed=1; }
expect() {  # expect FILE REGEX WHAT
  grep -Eq -- "$2" "$1" || { fail "$3: no line matching '$2'"; sed 's/^/    /' "$1" | tail -n 30; }
}
refuse() {  # refuse FILE REGEX WHAT
  ! grep -Eq -- "$2" "$1" || { fail "$3: a line matches '$2'"; sed 's/^/    /' "$1" | tail -n 30; }
}
