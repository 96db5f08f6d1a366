#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What `hetopt run` costs before the program starts (it must never be slower than native, start-up
# included). Interleaved rounds (scripts/bench/interleaved_time.py), medians, of:
#   true / run_true            /bin/true natively and under `hetopt run` (no profile: identity,
#                              DB look-up, one line, exec)
#   help                       `hetopt run --help`: the driver's own start-up (loader, relocations)
#   app / run_app              a small OpenCL test app with a stored profile, natively and under
#                              `hetopt run` (the curves decide; on PoCL it runs untouched)
#   run_app_forced             the same with --policy hybrid: plan file written, shim in optimize mode
#   big / run_big              the app without a build id and with 64 MiB of extra section, natively
#                              and under `hetopt run` (content hash as identity; stored profile)
# then the dynamic loader's own statistics for the driver (LD_DEBUG=statistics) and the libraries
# it maps. Needs a build with the test apps; uses a private DB and plan cache. With BASELINE_BUILD
# (another build's bin/hetopt and lib/, e.g. of an older commit, same DB schema) its `hetopt run`
# commands are interleaved too, as base_*.
#   run_startup.sh BUILD_DIR [ROUNDS] [BASELINE_BUILD]
set -euo pipefail
usage="usage: run_startup.sh BUILD_DIR [ROUNDS] [BASELINE_BUILD]"
build=$(cd "${1:?$usage}" && pwd)
rounds=${2:-41}
base=${3:+$(cd "$3" && pwd)}
here=$(cd "$(dirname "$0")" && pwd)
hetopt=$build/bin/hetopt
app=$build/bin/loop_wkr
args="--size 256K --iters 5"
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-startup.XXXXXX")
trap 'rm -rf "$work"' EXIT
export HETOPT_DB=$work/hetopt.db XDG_CACHE_HOME=$work/cache

# A program without a build id whose file is large (embedded kernels, data): identity by hash.
objcopy --remove-section .note.gnu.build-id "$app" "$work/big_nobid"
head -c $((64 << 20)) /dev/urandom >"$work/blob"
objcopy --add-section .hetopt_blob="$work/blob" --set-section-flags .hetopt_blob=noload,readonly \
  "$work/big_nobid"
rm "$work/blob"

echo "# $(date -u '+%F %T UTC'), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$hetopt" characterize --quick --no-plots >"$work/characterize.out" 2>&1 ||
  { echo "characterize failed:"; tail -5 "$work/characterize.out"; exit 1; }
for p in "$app" "$work/big_nobid"; do
  "$hetopt" trace -o "$work/$(basename "$p").trace" -- "$p" $args >"$work/trace.out" 2>&1 ||
    { echo "trace of $p failed:"; tail -5 "$work/trace.out"; exit 1; }
done
echo "# hetopt run on the app says: $("$hetopt" run -- "$app" $args 2>&1 >/dev/null | head -1)"
echo "# hetopt run on big_nobid says: $("$hetopt" run -- "$work/big_nobid" $args 2>&1 >/dev/null | head -1)"

commands=("true=/bin/true" "app=$app $args" "big=$work/big_nobid $args")
for who in "" ${base:+base_}; do
  h=$hetopt
  [[ -n $who ]] && h=$base/bin/hetopt
  commands+=("${who}run_true=$h run -- /bin/true" "${who}help=$h run --help"
             "${who}run_app=$h run -- $app $args"
             "${who}run_app_forced=$h run --policy hybrid -- $app $args"
             "${who}run_big=$h run -- $work/big_nobid $args")
done
python3 "$here/interleaved_time.py" "$rounds" "${commands[@]}"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# The loader's view of the driver alone: median over runs of its start-up cycles and relocations.
for h in "$hetopt" ${base:+"$base/bin/hetopt"}; do
  for ((i = 0; i < 21; ++i)); do
    LD_DEBUG=statistics "$h" run --help 2>&1 >/dev/null |
      awk '/total startup time in dynamic loader/ { for (i = 1; i <= NF; ++i) if ($i ~ /^[0-9]+$/) c = $i }
           /number of relocations:/ { r = $NF } END { print c, r }'
  done | sort -n | awk -v h="$h" '{ c[NR] = $1; r[NR] = $2 } END { m = int((NR + 1) / 2);
    printf "%s: loader %d cycles (median of %d), %d relocations\n", h, c[m], NR, r[m] }'
  echo "$h maps $(ldd "$h" | wc -l) libraries ($(ldd "$h" | grep -c libLLVM) libLLVM)"
done
