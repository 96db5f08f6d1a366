#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every C++ source the repository tracks is as .clang-format says (the tree was formatted once;
# CI keeps it so). Prints each file that differs and how to fix it; exits 1 when one does.
#   check_format.sh [FILE...]     default: every tracked *.h and *.cpp
set -uo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format) ||
  { echo "check_format: clang-format is missing (scripts/setup.sh --tests installs it)" >&2; exit 2; }
if (($#)); then files=("$@"); else mapfile -t files < <(git ls-files '*.h' '*.cpp'); fi
bad=()
for f in "${files[@]}"; do
  "$fmt" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf 'check_format: not formatted: %s\n' "${bad[@]}" >&2
  echo "check_format: fix with: $fmt -i ${bad[*]}" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files formatted as .clang-format says"
