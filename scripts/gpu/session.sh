#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every GPU measurement docs/results.md reports, in steps that each fit one device-tool call
# (10 minutes). State that later steps need (the build, the DB with the characterization) stays in
# BUILD_DIR, which the device machine keeps between calls while it is warm; each step copies its
# outputs to $OUT (emptied before every call).
#
#   scripts/gpu/session.sh BUILD_DIR STEP...
#
#   build         scripts/gpu/build.sh (tests and benchmarks that need no GoogleTest)
#   check         the NVIDIA GPU is the device hetopt picks (fails otherwise: no CPU numbers)
#   characterize  full characterization of the GPU into BUILD_DIR/gpu.db (~45 s on an H100)
#   queue         bench/queue_cost: what device timing costs the driver per command
#   trace         the whole `hetopt trace` command on the call-bound loop (loop_wkr 4K x 20000)
#                 against native, split: trace_variants.sh VARIANTS=split, ROUNDS rounds (default
#                 11): native, `trace --no-analyze`, `trace`, paired, and hetopt's own timings
#   trace-data    scripts/bench/trace_overhead.sh on data-moving runs (64 MiB buffers)
#   trace-apps    the same on every test app at apps_speedup's sizes (each a second or more)
#   variants      trace_variants.sh (native / count / unprofiled / sampled / all timed) on the
#                 call-bound loop, and the sampled-vs-all-timed agreement check of the analysis
#   decompose     where trace overhead goes: bench/record_cost (recording per call, no driver),
#                 trace_variants.sh at 1 and 20000 iterations (fixed vs per-call cost of loading,
#                 interception, recording, device timing and the analysis), count mode's report
#   recording     every test app's trace summary line on what recording cost its threads
#   register      in-place registration on the real driver: tests/integration/register_inplace.sh
#                 (unpin before munmap, data checked) and static_mmap's stats under hetopt run
#   apps          scripts/bench/apps_speedup.sh (native, hand-pinned, hetopt run, --no-pool);
#                 APPS="..." selects apps: all 11 take longer than one call, split them in two
#   loop100       the same for loop_wkr with 100 iterations (the loop's steady state)
#   ocl-icd       dlopen_app's row with ocl-icd's loader (carried in .carry/ocl-icd, hetopt's chosen
#                 loader): it supports OpenCL layers, through which the shim sees programs that
#                 dlopen() libOpenCL; the CUDA toolkit's loader does not
#   tests         the ctests that check behaviour a driver decides, on the real one: twin queues
#                 (ordering, events, release), optimize mode's pool contexts, and fork (whether the
#                 driver's pinned memory is shared with a child decides what the fork protocol copies)
#   context       scripts/bench/pool_context.sh: whole-process time of native, `hetopt run` with the
#                 pool in the program's context (the default), HETOPT_POOL_CONTEXT=own, and with no
#                 profile (untouched), interleaved, per phase
#   realprogs     real third-party programs: scripts/realprogs/build.sh builds SHOC and PolyBench-ACC
#                 from the sources carried in .carry/shoc and .carry/polybench (PolyBench for the
#                 GPU: "platform 0", which env.sh makes NVIDIA) into BUILD_DIR/realprogs, then
#                 scripts/bench/real_programs.sh runs the manifest's configurations (native, hetopt,
#                 baseline, nopool, declined; ROUNDS rounds, default 7) with EXPECT_DEVICE=NVIDIA,
#                 into $OUT/realprogs. SELECT=REGEX picks configurations; MAX_EST (default 30) skips
#                 those the manifest estimates longer (seconds per native run): one call is 10 minutes,
#                 so split the suite with SELECT (docs: scripts/realprogs/programs.txt); RP_OUT names
#                 the folder under $OUT (default realprogs); LOOP_RUNS and RUN_OPTIONS pass through
#                 to real_programs.sh (the closed loop's runs; --verify=off for the rounds). Carry the
#                 sources with the call: git -C <clone> archive --prefix=shoc/ HEAD | tar -x -C .carry
#                 (same for polybench/), and name .carry/shoc and .carry/polybench in `carry`
#
# A characterization carried in .carry/gpu.db (from an earlier lease on the same kind) is used
# when BUILD_DIR has none; `characterize` makes a fresh one.
#
# A first call: `scripts/gpu/session.sh build-gpu build check characterize queue variants register`
# (~6 min), then `APPS="loop_wkr ..." ... check apps` twice (all 11 apps with 5 runs of 4 variants
# take longer than one call), then `... check trace` (~1 min).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: scripts/gpu/session.sh BUILD_DIR STEP...}
shift
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
# shellcheck source=env.sh
source "$root/scripts/gpu/env.sh" >/dev/null
export HETOPT_DB=$build/gpu.db
[[ -f $HETOPT_DB || ! -f $root/.carry/gpu.db ]] || { mkdir -p "$build" && cp "$root/.carry/gpu.db" "$HETOPT_DB"; }
runs=${RUNS:-5}

step() { echo "== $(date -u +%T) $*"; }
for s in "$@"; do
  case $s in
    build)
      step build
      "$root/scripts/gpu/build.sh" "$build" || exit 1
      ;;
    check)
      step check
      nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current \
        --format=csv,noheader
      "$build/bin/hetopt" devices | tee "$build/devices.txt"
      grep -q '^  \* .*\[GPU' "$build/devices.txt" || { echo "check: hetopt does not pick a GPU" >&2; exit 1; }
      ;;
    characterize)
      step characterize
      OUT=$out "$root/scripts/gpu/characterize.sh" "$build" >/dev/null
      cp "$out/hetopt.db" "$HETOPT_DB"
      tail -n 3 "$out/characterize.log"
      ;;
    queue)
      step queue_cost
      "$build/bin/queue_cost" --size 4K --iters 5000 --rounds 7 | tee "$out/queue_cost.txt"
      ;;
    trace)
      # The whole command against the program alone, split: native, `trace --no-analyze` (program
      # + recording), `trace` (everything), interleaved, with what hetopt reports of its own time.
      step "trace: whole-command overhead on the call-bound loop, split"
      VARIANTS=split "$root/scripts/bench/trace_variants.sh" "$build" "${ROUNDS:-11}" \
        'loop_wkr:--size 4K --iters 20000' | tee "$out/trace_split.txt"
      ;;
    trace-data)
      step trace_overhead data-moving
      "$root/scripts/bench/trace_overhead.sh" "$build" "$runs" 'loop_wkr:--size 64M --iters 200' \
        'async_events:--size 64M --iters 40' 'selective_alloc:--size 64M --iters 20' |
        tee "$out/trace_overhead_data.txt"
      ;;
    trace-apps)
      # Every test app at the size apps_speedup.sh runs it (64 MiB buffers), each a second or
      # more natively; calloc_realloc and selective_alloc get their iterations adjusted to that.
      # dlopen_app is left out: CUDA's loader does not load layers, so nothing of it is traced.
      step "trace_overhead: the test apps"
      "$root/scripts/bench/trace_overhead.sh" "$build" "$runs" 'loop_wkr:--size 64M --iters 20' \
        'selective_alloc:--size 64M --iters 8' 'vector_new:--size 64M --iters 20' \
        'calloc_realloc:--size 64M --iters 40' 'host_ptr_buffers:--size 64M --iters 20' \
        'rect_map:--size 64M --iters 20' 'async_events:--size 64M --iters 20' \
        'two_threads:--size 64M --iters 20' 'static_mmap:--size 64M --iters 20' \
        'compute_bound:--size 4M --iters 100' | tee "$out/trace_overhead_apps.txt"
      ;;
    variants)
      step trace_variants
      "$root/scripts/bench/trace_variants.sh" "$build" "${ROUNDS:-9}" 'loop_wkr:--size 4K --iters 20000' |
        tee "$out/trace_variants.txt"
      python3 "$root/tests/trace/check_trace.py" agreement "$build/bin/hetopt" "$build/bin/loop_wkr" 3 \
        -- --size 4K --iters 20000 | tee "$out/trace_agreement.txt"
      ;;
    decompose)
      step "decompose: recording cost per call, fixed costs, the shim's view of the driver"
      "$build/bin/record_cost" | tee "$out/record_cost.txt"
      cat /sys/devices/system/clocksource/clocksource0/current_clocksource
      for iters in ${DECOMPOSE_ITERS:-1 20000}; do
        "$root/scripts/bench/trace_variants.sh" "$build" "${ROUNDS:-7}" "loop_wkr:--size 4K --iters $iters" |
          tee "$out/trace_variants_$iters.txt"
      done
      for sample in 0 64; do  # recording's own time in the program's thread (HETOPT_DEBUG prints it)
        HETOPT_DEBUG=1 HETOPT_TIME_SAMPLE=$sample "$build/bin/hetopt" trace --no-analyze -o "$build/self.trace" -- \
          "$build/bin/loop_wkr" --size 4K --iters 20000 2>&1 | grep 'recording after' | sed "s/^/TIME_SAMPLE=$sample: /"
      done
      LD_PRELOAD=$build/lib/libhetopt_shim.so HETOPT_MODE=count HETOPT_REPORT_FILE=$out/count_report.txt \
        "$build/bin/loop_wkr" --size 4K --iters 20000 >/dev/null
      head -n 40 "$out/count_report.txt"
      ;;
    recording)
      # What recording costs in each program's threads, as the trace itself reports it (format 3).
      step "recording cost per app (hetopt trace summary)"
      for c in 'loop_wkr:--size 4K --iters 20000' 'loop_wkr:--size 64M --iters 20' \
        'selective_alloc:--size 64M --iters 8' 'vector_new:--size 64M --iters 20' \
        'calloc_realloc:--size 64M --iters 40' 'host_ptr_buffers:--size 64M --iters 20' \
        'rect_map:--size 64M --iters 20' 'async_events:--size 64M --iters 20' \
        'two_threads:--size 64M --iters 20' 'static_mmap:--size 64M --iters 20' \
        'compute_bound:--size 4M --iters 100'; do
        read -r -a a <<<"${c#*:}"
        line=$("$build/bin/hetopt" trace --no-analyze -o "$build/rc.trace" -- "$build/bin/${c%%:*}" "${a[@]}" 2>&1 >/dev/null |
          grep -E 'recording \(|calls [0-9]' | tr -s ' ' | tr '\n' ' ')
        echo "${c%%:*} ${a[*]}: $line"
      done | tee "$out/recording_cost.txt"
      ;;
    register)
      step register
      bash "$root/tests/integration/register_inplace.sh" "$build/bin/hetopt" \
        "$build/lib/libhetopt_shim.so" "$build/bin/static_mmap" "$build/bin/remap_app" 2>&1 |
        tail -n 20 | tee "$out/register_inplace.txt"
      "$build/bin/hetopt" trace -o "$build/static_mmap.trace" -- "$build/bin/static_mmap" --size 64M --iters 20 >/dev/null 2>&1
      "$build/bin/hetopt" run --stats -- "$build/bin/static_mmap" --size 64M --iters 20 2>&1 |
        grep -E "elapsed_ms|stats|registered|hetopt" | tee -a "$out/register_inplace.txt"
      ;;
    apps)
      step "apps_speedup ${APPS:-all}"
      [[ -f $HETOPT_DB ]] || { echo "apps: characterize first" >&2; exit 1; }
      "$root/scripts/bench/apps_speedup.sh" "$build" "$runs" "$out" | tee "$out/apps_speedup.txt"
      ;;
    loop100)
      step "apps_speedup loop_wkr x100"
      mkdir -p "$out/loop100"
      APPS=loop_wkr ARGS="--size 64M --iters 100" "$root/scripts/bench/apps_speedup.sh" "$build" "$runs" \
        "$out/loop100" | tee "$out/loop100/apps_speedup.txt"
      ;;
    ocl-icd)
      step "apps_speedup dlopen_app on ocl-icd's loader"
      mkdir -p "$out/ocl-icd"
      # The carried ocl-icd finds NVIDIA only through a vendors directory (here it ignored
      # OCL_ICD_FILENAMES and listed PoCL alone: every run failed to find the GPU).
      vendors=$build/ocl-icd-vendors
      mkdir -p "$vendors" && echo "$OCL_ICD_FILENAMES" >"$vendors/nvidia.icd"
      OCL_ICD_VENDORS=$vendors LD_LIBRARY_PATH=$root/.carry/ocl-icd${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} APPS=dlopen_app \
        "$root/scripts/bench/apps_speedup.sh" "$build" "$runs" "$out/ocl-icd" | tee "$out/ocl-icd/apps_speedup.txt"
      ;;
    tests)
      step "ctest twin_queues, shim.optimize, fork"
      ctest --test-dir "$build" -R 'twin_queues|shim\.optimize|fork' --output-on-failure --timeout 120 2>&1 |
        tail -n 45 | tee "$out/ctest.txt"
      ;;
    context)
      step "pool context: program vs own"
      APPS=${CONTEXT_APPS:-loop_wkr calloc_realloc} "$root/scripts/bench/pool_context.sh" "$build" "$runs" |
        tee "$out/pool_context.txt"
      ;;
    realprogs)
      # $OUT takes 8 files (2 folders deep) back: the log, table, .dat and chart (5 files), and the
      # per-run outputs, diffs, build states and platforms in runs.tar.gz; run this step without
      # other steps that write to $OUT in the same call.
      step "real programs ${SELECT:-all} (MAX_EST ${MAX_EST:-30} s)"
      [[ -f $HETOPT_DB ]] || { echo "realprogs: characterize first" >&2; exit 1; }
      [[ -d $root/.carry/shoc && -d $root/.carry/polybench ]] ||
        { echo "realprogs: carry .carry/shoc and .carry/polybench (see the step's comment)" >&2; exit 1; }
      rp=$build/realprogs-out
      rpo=$out/${RP_OUT:-realprogs}  # RP_OUT: another folder, for a second realprogs step in one call
      rm -rf "$rp" && mkdir -p "$rp" "$rpo"
      { POLYBENCH_DEVICE=GPU "$root/scripts/realprogs/build.sh" "$root/.carry/shoc" "$root/.carry/polybench" \
          "$build/realprogs" 2>&1 | grep -v '^    '
        # SHOC and PolyBench take platform 0 (SHOC's -p default, PolyBench's clGetPlatformIDs(1, ...)):
        # env.sh's OCL_ICD_FILENAMES puts NVIDIA first; stop here if it did not.
        "$build/bin/hetopt" devices >"$rp/platforms.txt" 2>&1
        grep -E '^platform|\*' "$rp/platforms.txt"
        sed -n '/^platform 0:/,/^platform 1:/p' "$rp/platforms.txt" | grep -qi "${EXPECT_DEVICE:-NVIDIA}" ||
          { echo "realprogs: platform 0 is not ${EXPECT_DEVICE:-NVIDIA}: the programs would not run there" >&2; exit 1; }
        EXPECT_DEVICE=${EXPECT_DEVICE:-NVIDIA} MAX_EST=${MAX_EST:-30} CHAR_DB=$HETOPT_DB \
          "$root/scripts/bench/real_programs.sh" "$build" "$build/realprogs" "${ROUNDS:-7}" "$rp"
      } 2>&1 | tee "$rpo/realprogs.log"
      status=$?
      cp "$rp"/real_programs.{txt,dat,png,svg} "$rpo/" 2>/dev/null
      cp "$build/realprogs/build.txt" "$rp/" 2>/dev/null
      # shellcheck disable=SC2046
      tar -czf "$rpo/runs.tar.gz" -C "$rp" $(cd "$rp" && ls -d runs build.txt platforms.txt 2>/dev/null)
      ((status == 0)) || { echo "realprogs: failed (see $rpo/realprogs.log)" >&2; exit 1; }
      ;;
    *)
      echo "unknown step '$s'" >&2
      exit 2
      ;;
  esac
done
step done
