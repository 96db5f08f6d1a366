#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The generated bash completion: commands, each command's options (only its own), option values
# (choices, files), --opt=value, and nothing of hetopt's once the program has begun.
#   completion.sh COMPLETION_FILE
set -u
file=$(realpath "$1")
dir=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-completion.XXXXXX") || exit 2
trap 'rm -rf "$dir"' EXIT
touch "$dir/app.trace" "$dir/appendix.txt"
mkdir "$dir/plots"
failed=0
# complete_is WANT WORDS...: the last word is the one being completed; WANT in any order (files
# come in the directory's order).
complete_is() {
  local want=$1
  shift
  local got
  got=$(cd "$dir" && bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _hetopt; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$file" "$@" | sort | paste -sd ' ')
  want=$(tr ' ' '\n' <<<"$want" | sort | paste -sd ' ')
  [[ $got == "$want" ]] || { echo "FAIL: completing '$*' gave '$got', want '$want'"; failed=1; }
}
complete_is "characterize" hetopt cha
complete_is "--help --version --help-env" hetopt -
complete_is "--dry-run" hetopt run --dr
complete_is "--verify --version" hetopt run --ver
complete_is "on off" hetopt run --verify ''
complete_is "off" hetopt run --verify = of
complete_is "--last" hetopt report --la
complete_is "--no-plots" hetopt report --no-plo
complete_is "png svg" hetopt characterize --plot-format ''
complete_is "gpu cpu" hetopt trace --device ''
complete_is "app.trace appendix.txt" hetopt trace -o app
complete_is "plots" hetopt characterize --plots pl
complete_is "app.trace" hetopt show app.t
complete_is "--stats= --stats" hetopt run --sta
complete_is "app.trace" hetopt run --stats = app.
# After the program: its own arguments, never hetopt's options.
complete_is "" hetopt run ./app --dr
complete_is "" hetopt run -- ./app --dr
complete_is "" hetopt run --db x.db ./app --la
complete_is "appendix.txt" hetopt trace -o t.trace -- ./app appen
[[ $failed == 0 ]] && echo "OK: the completion completes"
exit $failed
