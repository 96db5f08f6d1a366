#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sanitizer builds and a CI-sized test subset (.ci/run runs the tsan kind; docs/results.md "Sanitizers"
# has its findings and duration).
#
#   scripts/sanitize.sh [asan|tsan|asan-shim]...      default: asan tsan
#
# asan: build-asan with -fsanitize=address,undefined (any UB report fails the test), running the
#   unit tests (labels unit, policies, trace, analyzer, characterize) and the hetopt binary on the
#   committed golden traces and bad input. Excluded, on purpose: every test that preloads the shim
#   into a program (trace.<app>.matches, the ground-truth, kill, fork and torture tests). The shim
#   interposes malloc and so does the ASan runtime, which must come first in the library list:
#   the program's malloc calls then reach ASan and never the shim's entry points, so such a run
#   would not test the shim as it is used, and reversing the order makes ASan refuse to start
#   unless told not to check (verify_asan_link_order=0): that is what asan-shim does.
#   The shim's logic is covered by shim_unit_tests and the pool tests, which link it directly.
#   Also excluded: policies.policy, which checks that mlock locks pages: ASan's mlock interceptor
#   only returns 0 (nothing locked), so it fails there for ASan's reason, not ours.
# asan-shim: the preloaded shim itself under ASan+UBSan, as programs use it
#   (scripts/asan_shim_run.sh): build-asan's libhetopt_shim.so with libasan.so preloaded after it
#   (ASAN_OPTIONS=verify_asan_link_order=0), so that the program's malloc calls reach the shim first
#   and the shim's own code runs instrumented; the test apps and hetopt come from the ordinary
#   build (BUILD_DIR, default build, built beforehand). preload.cpp (the malloc entry points) is
#   compiled uninstrumented: ASan's initialization calls them before its shadow memory exists.
#   use_sigaltstack=0: PoCL's LLVM installs a malloc'd alternate signal stack in the shim's pool
#   thread, which ASan then tries to munmap at thread exit (a CHECK failure, ASan's and LLVM's).
# tsan: build-tsan with -fsanitize=thread, the tests labelled tsan (hetopt_discover_tests in
#   tests/CMakeLists.txt; a new suite in those binaries is in by its label): the multi-threaded
#   code that can be linked into a test binary: the pinned pool, the block table and the direct
#   (no pool) allocator (stress tests with several threads), the trace library (also at
#   HETOPT_DEBUG_LEVEL 3, where the record ring validates itself beside its producers) and the shim
#   core's unit tests (conformance, in-place registry, heap-block registration, optimize mode's
#   preparation, context choice and the mode on a fake OpenCL), and the fork protocol on all of
#   them (ForkProtocol: fork() while other threads hold or use their locks) (same
#   malloc-interposition reason as above for the preloaded shim).
#   Excluded: ModuleMap.FindsTheTestExecutableAndSkipsLibc, which takes &abort as a libc address:
#   under TSan that is the runtime's interceptor in libtsan.so.
#
# BUILD_JOBS (default 2) limits the build.
set -u
cd "$(dirname "$0")/.."
jobs=${BUILD_JOBS:-2}
kinds=("$@")
[[ ${#kinds[@]} -eq 0 ]] && kinds=(asan tsan)
status=0

configure() {  # configure DIR SANITIZERS
  [[ -f $1/build.ninja ]] && return 0
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHETOPT_SANITIZE="$2" \
    -DHETOPT_BUILD_BENCH=OFF >"$1.configure.log" 2>&1 || { cat "$1.configure.log"; return 1; }
}

for kind in "${kinds[@]}"; do
  start=$(date +%s)
  case $kind in
    asan)
      configure build-asan address,undefined || { status=1; continue; }
      cmake --build build-asan -j"$jobs" || { status=1; continue; }
      # Leaks are not checked: the trace recorder keeps its thread states and old address tables
      # on purpose (threads may outlive it; lock-free readers may still probe an old table), and
      # every LeakSanitizer report here is one of those two.
      ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 \
      UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        ctest --test-dir build-asan -j"$jobs" --output-on-failure --timeout 300 \
          -L 'unit|policies|trace|analyzer|characterize' \
          -E '\.matches$|ground_truth|trip_count_invariant|sigkill|fork_exec|alloc_torture|reader_fuzz|^policies\.policy$' ||
        status=1
      ;;
    tsan)
      configure build-tsan thread || { status=1; continue; }
      cmake --build build-tsan -j"$jobs" --target pool_test pool_test_release direct_test \
        block_table_test trace_unit_tests trace_unit_tests_checked shim_unit_tests fork_protocol_test \
        trace_stream_test || { status=1; continue; }
      # halt_on_error: a data race fails the test instead of only printing.
      # The suppressions: threads optimize mode keeps for the process's life (tests/shim/tsan.supp).
      TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/shim/tsan.supp \
        ctest --test-dir build-tsan -j"$jobs" --output-on-failure --timeout 300 \
          -L '^tsan$' \
          -E '^ModuleMap\.FindsTheTestExecutableAndSkipsLibc$' ||
        status=1
      ;;
    asan-shim)
      configure build-asan address,undefined || { status=1; continue; }
      cmake --build build-asan -j"$jobs" --target hetopt_shim || { status=1; continue; }
      bash scripts/asan_shim_run.sh build-asan/lib/libhetopt_shim.so "${BUILD_DIR:-build}" ||
        status=1
      ;;
    *) echo "sanitize.sh: unknown kind '$kind' (asan, tsan, asan-shim)" >&2; exit 2 ;;
  esac
  echo "sanitize.sh: $kind took $(($(date +%s) - start)) s"
done
exit $status
