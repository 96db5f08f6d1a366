#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real third-party OpenCL programs (scripts/realprogs/programs.txt, built by
# scripts/realprogs/build.sh) natively and under hetopt, interleaved, with their outputs checked.
#
#   scripts/bench/real_programs.sh BUILD_DIR PROGS_DIR [ROUNDS] [OUTDIR]
#
# BUILD_DIR is hetopt's build (bin/hetopt, lib/libregister_first_transfer.so), PROGS_DIR the OUTDIR
# of build.sh, ROUNDS 7 by default, OUTDIR (default .) receives everything below. Per configuration:
#  (a) one `hetopt trace`, then `hetopt analyze --json` of it: the trace's device (printed), its
#      whole duration and its transfers' device time (h2d_ns + d2h_ns, the copy time); where
#      `hetopt run --dry-run` exits 0, its output (runs/NAME/dry-run.txt) and its decision (its
#      "plan:"/"decline:" line, else its first line), else "n/a"; one `hetopt run --stats` (what
#      the shim did, or its one line saying why it declined: the decision without --dry-run);
#  (b) ROUNDS rounds, each running these variants once, in a freshly shuffled order (the seed is
#      printed; SEED=N repeats it): native (the program itself), hetopt (`hetopt run`), baseline
#      (LD_PRELOAD=lib/libregister_first_transfer.so: every heap block >= 64 KiB registered at its
#      first transfer), nopool (`hetopt run --no-pool`), declined (`hetopt run` with a DB holding
#      no profile: hetopt declines and execs the program untouched; what an untouched run costs,
#      flagged when over 1%). Whole-process wall time, in the configuration's working directory,
#      stdout and stderr kept under OUTDIR/runs/NAME/. Every run's output (stdout and stderr each
#      through the manifest's filter, the tools' own "hetopt:" lines removed) is compared with
#      native's first run: a difference, or another exit status, is reported loudly, its diff kept
#      (runs/NAME/diff-VARIANT-ROUND.txt) and the row marked FAIL; the trace run and the --stats
#      run are checked the same way;
#  (c) a table (stdout and OUTDIR/real_programs.txt): median ms of each variant, speedups (native
#      median / variant median) and the median of paired ratios (native / variant of one round)
#      with their min-max, the copy time and its share of native, the ceiling (native / (native -
#      copy time)), the decision; OUTDIR/real_programs.dat and the chart real_programs.{png,svg}
#      (scripts/bench/real_programs.gp, when gnuplot is installed).
# ROUNDS 0 sweeps decisions only: (a) without the --stats run, a table of decisions, no chart.
# Environment:
#   SELECT=REGEX       configurations whose name matches (default all)
#   MAX_EST=SECONDS    skip configurations whose manifest estimate (native, on the GPU machine) is larger
#   CHAR_DB=PATH       the machine's characterization, copied into the private DB first (default
#                      $HETOPT_DB); without one `hetopt run` has no curves and declines
#   EXPECT_DEVICE=S    refuse the numbers of a configuration whose trace names another device (a
#                      case-insensitive substring of "platform / device", e.g. NVIDIA)
#   RUN_OPTIONS="..." options for `hetopt run` in the hetopt and nopool variants and the --stats run,
#                      e.g. "--verify=off" for the benchmark (no control runs: every hetopt run
#                      optimized), "--policy opencl --force" to exercise optimize mode where the
#                      curves decline (PoCL)
#   LOOP_RUNS=N        before the rounds, N plain `hetopt run`s (the closed loop on: optimized and
#                      control runs as its ledger decides, outputs checked), then `hetopt report
#                      --json`'s verdict: a second table puts it beside the rounds' hetopt paired ratio
#   VARIANTS="..."     only native and these variants (also native_env: the program in the declined
#                      variant's environment, and untouched: `hetopt run --untouched`, after whose
#                      rounds `hetopt report` writes runs/NAME/report.txt and its plot; noahead:
#                      `hetopt run --no-build-ahead`, the plan without kernels built ahead; table only;
#                      the .dat keeps every column, NaN for the variants not run, and the chart
#                      leaves their bars out)
#   SEED, RUN_TIMEOUT (seconds per run, default 600), MANIFEST (default scripts/realprogs/programs.txt),
#   KEEP_STATE=1 (keep the private DB, plans and traces; printed)
# Everything the script writes goes to a private DB, cache and trace folder (mktemp), never to
# $HETOPT_DB. Exit status 1 when a configuration failed (outputs differ, wrong device).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: real_programs.sh BUILD_DIR PROGS_DIR [ROUNDS] [OUTDIR]}
progs=${2:?usage: real_programs.sh BUILD_DIR PROGS_DIR [ROUNDS] [OUTDIR]}
rounds=${3:-7}
outdir=${4:-.}
build=$(cd "$build" && pwd) || exit 2
[[ -x $build/bin/hetopt ]] || { echo "real_programs: no $build/bin/hetopt" >&2; exit 2; }
[[ -f $build/lib/libregister_first_transfer.so ]] ||
  { echo "real_programs: no $build/lib/libregister_first_transfer.so (build the bench targets)" >&2; exit 2; }
[[ -d $progs ]] || { echo "real_programs: no $progs (scripts/realprogs/build.sh makes it)" >&2; exit 2; }
mkdir -p "$outdir" || exit 2

state=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-realprogs.XXXXXX")
chmod 700 "$state"
if [[ ${KEEP_STATE:-0} == 1 ]]; then
  echo "real_programs: private state kept in $state"
else
  trap 'rm -rf "$state"' EXIT
fi
mkdir -m 700 "$state/cache" "$state/empty"
: >"$state/empty/hetopt.db"  # an empty DB: no profile, no characterization
chmod 600 "$state/empty/hetopt.db"
char=${CHAR_DB:-${HETOPT_DB:-}}
if [[ -n $char && -f $char ]]; then
  # SQLite's own copy (a plain cp can miss what sits in a WAL file).
  python3 - "$char" "$state/hetopt.db" <<'EOF' || { echo "real_programs: cannot copy $char" >&2; exit 2; }
import sqlite3, sys
src, dst = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.close()
EOF
  chmod 600 "$state/hetopt.db"
  echo "real_programs: characterization from $char"
else
  echo "real_programs: no characterization (CHAR_DB/HETOPT_DB '${char}' missing): hetopt run will decline every program" >&2
fi
echo "real_programs: $(uname -n), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

PYTHONUNBUFFERED=1 HETOPT_DB=$state/hetopt.db RP_EMPTY_DB=$state/empty/hetopt.db RP_STATE=$state XDG_CACHE_HOME=$state/cache \
  MANIFEST=${MANIFEST:-$root/scripts/realprogs/programs.txt} \
  python3 "$root/scripts/bench/real_programs.py" "$build" "$progs" "$rounds" "$outdir"
status=$?
echo "real_programs: load average after $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine makes the numbers noisy)"

if [[ -s $outdir/real_programs.dat ]] && grep -qv '^#' "$outdir/real_programs.dat"; then
  if command -v gnuplot >/dev/null; then
    device=$(head -n1 "$outdir/devices.txt")
    (cd "$outdir" && gnuplot -e "datafile='real_programs.dat'; outbase='real_programs'; \
      device='${device//\'/}'; date='$(date -u +%F)'; rounds='$rounds'; cap=$(cat ceiling_cap.txt); \
      variants='${VARIANTS:-hetopt baseline nopool declined}'" \
      "$root/scripts/bench/real_programs.gp") &&
      echo "real_programs: chart $outdir/real_programs.png and .svg" ||
      echo "real_programs: gnuplot failed" >&2
  else
    echo "real_programs: gnuplot not installed; render with: cd $outdir && gnuplot -e \"datafile='real_programs.dat'; outbase='real_programs'; device='?'; date='?'; rounds='$rounds'; cap=$(cat "$outdir/ceiling_cap.txt")\" $root/scripts/bench/real_programs.gp"
  fi
fi
exit $status
