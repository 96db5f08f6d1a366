#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Full `hetopt characterize` on the GPU machine, for the device tool. Usage:
#   scripts/gpu/characterize.sh BUILD_DIR [hetopt characterize args, e.g. --device all, --quick]
# Writes to $OUT (default ./gpu-out), directly, as the device tool brings files back: hetopt.db
# (raw samples, fits, decisions), <device>.dat/.gp for gnuplot (there is no gnuplot there: render
# with `cd DIR && gnuplot <device>.gp`, or re-plot from the DB with
# `hetopt characterize --show --db hetopt.db --plots DIR`) and characterize.log.
# By default only the NVIDIA device is measured (gpu/env.sh makes it visible and sets
# HETOPT_DEVICE); `--device NAME` picks another, `--device all` measures every device.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: scripts/gpu/characterize.sh BUILD_DIR [hetopt characterize args]}
shift
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
# shellcheck source=env.sh
source "$root/scripts/gpu/env.sh"
device=(--device "${HETOPT_DEVICE:-NVIDIA}")
args=()
while (($#)); do
  if [[ $1 == --device && $# -ge 2 ]]; then
    if [[ $2 == all ]]; then device=(); else device=(--device "$2"); fi
    shift 2
  else
    args+=("$1")
    shift
  fi
done
{
  echo "== $(date -u +%FT%TZ) kernel $(uname -r),$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current \
    --format=csv,noheader 2>/dev/null
  echo "== ulimit -l: $(ulimit -l), free: $(free -g | awk '/Mem:/ {print $7}') GiB available"
  "$build/bin/hetopt" devices
  echo "== hetopt characterize ${device[*]} --force --db $out/hetopt.db --plots $out ${args[*]}"
  start=$(date +%s)
  "$build/bin/hetopt" characterize "${device[@]}" --force --db "$out/hetopt.db" --plots "$out" \
    "${args[@]}"
  echo "== exit status $?, wall $(($(date +%s) - start)) s"
} 2>&1 | tee "$out/characterize.log"
