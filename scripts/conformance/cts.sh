#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Khronos' OpenCL conformance tests (OpenCL-CTS: what drivers are certified with), suites api,
# basic, buffers, events and profiling, natively and under hetopt: every test must end the same
# way (pass, fail, skip, crash, timeout) under hetopt as natively.
#
#   scripts/conformance/cts.sh build CTS_SRC BIN_DIR [CL_HEADERS SPIRV_HEADERS]
#       configures and builds the five suites out of tree (in BIN_DIR/build, with `nice` and
#       JOBS=2 jobs) from a checkout of github.com/KhronosGroup/OpenCL-CTS, linked against the
#       system's ICD loader (-lOpenCL), and puts them stripped into BIN_DIR (test_api ...,
#       about 4 MiB together). CTS builds against the current OpenCL and SPIR-V headers
#       (github.com/KhronosGroup/OpenCL-Headers, KhronosGroup/SPIRV-Headers): CL_HEADERS is the
#       folder holding CL/, SPIRV_HEADERS the one holding include/spirv (defaults: /usr/include;
#       Debian 12's OpenCL headers are of 2023, so pass both: tried with those of 2026-08).
#   scripts/conformance/cts.sh run BIN_DIR HETOPT_BUILD OUT
#       runs the suites' tests in BIN_DIR (prebuilt: the binaries need glibc and the ICD loader,
#       nothing of the build) with HETOPT_BUILD/bin/hetopt; writes OUT/cts.txt (the table, also
#       printed), OUT/results.json (every test's result per mode) and OUT/logs.tar.xz (every
#       run's output). Exit status 1 when a test ended differently from natively.
#
# Each test runs as its own process (`test_SUITE TEST`, the harness's results written as JSON
# through CL_CONFORMANCE_RESULTS_FILENAME), so that a crash or a hang costs one test, not its
# suite, and each traced test has its own profile for the optimized modes. Modes (MODES, default
# all four): native; trace (`hetopt trace`); pool (`hetopt run --force --policy opencl` with the
# test's traced profile: its candidate sites served from a pool); register (`hetopt run --force
# --policy register`: each candidate block, static array and mapping registered in place);
# passthrough (`hetopt run --passthrough`) when named. --verify=off: every run is optimized.
#
# Bounds, so that the whole run fits one 10-minute command on the GPU machine: TEST_TIMEOUT
# seconds per test run (default 60; a timeout is a result like any other); BUDGET seconds for the
# whole run (default 480: a test started at its end may still run TEST_TIMEOUT), shared by the
# suites as their numbers of tests and evenly by the modes: the tests not started within their
# share count as "notrun" and are left out of the comparison (the table says how many), as are,
# in the hetopt modes, the tests that timed out or did not run natively. JOBS tests at a time
# (default half the cores, at most 8). SUITES="api events ..." runs some suites only (one command
# each, when the budget is too small for all). Which tests: every test of each suite in wimpy mode
# (-w: the harness's quick subsets of its long sweeps) but those of TESTS_SKIP, a regular
# expression on SUITE/TEST (default: api/kernel_attributes, api/kernel_arg_multi_setup_random and
# basic/astype, which compile hundreds of kernels and took over 100 s each natively on PoCL here;
# '^$' skips none). SELECT=REGEX keeps only the SUITE/TEST names matching it. The harness picks
# platform 0's default device: CL_DEVICE_TYPE=gpu (and CL_PLATFORM_INDEX) choose another.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
suites=(api basic buffers events profiling)
usage() { sed -n '7,18p' "$0" >&2; exit 2; }

cmd=${1:-}
case $cmd in
  build)
    src=${2:?$(usage)} bin=${3:?$(usage)}
    clh=${4:-/usr/include} spv=${5:-/usr/include}
    [[ -f $src/test_conformance/CMakeLists.txt ]] || { echo "cts.sh: $src is not an OpenCL-CTS checkout" >&2; exit 2; }
    [[ -f $clh/CL/cl.h ]] || { echo "cts.sh: no CL/cl.h under $clh" >&2; exit 2; }
    [[ -d $spv/include/spirv ]] || { echo "cts.sh: no include/spirv under $spv (SPIRV-Headers)" >&2; exit 2; }
    mkdir -p "$bin/build" || exit 2
    bin=$(cd "$bin" && pwd)
    gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    nice -n 10 cmake -S "$src" -B "$bin/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCL_INCLUDE_DIR="$clh" -DCL_LIB_DIR="$(dirname "$(gcc -print-file-name=libOpenCL.so)")" \
      -DOPENCL_LIBRARIES=OpenCL -DSPIRV_INCLUDE_DIR="$spv" >"$bin/build/configure.log" 2>&1 ||
      { tail -n 30 "$bin/build/configure.log"; echo "cts.sh: configure failed ($bin/build/configure.log)" >&2; exit 1; }
    targets=()
    for s in "${suites[@]}"; do targets+=("test_$s"); done
    nice -n 10 cmake --build "$bin/build" -j "${JOBS:-2}" --target "${targets[@]}" >"$bin/build/build.log" 2>&1 ||
      { tail -n 30 "$bin/build/build.log"; echo "cts.sh: build failed ($bin/build/build.log)" >&2; exit 1; }
    for s in "${suites[@]}"; do
      strip -o "$bin/test_$s" "$bin/build/test_conformance/$s/test_$s" || exit 1
    done
    echo "cts.sh: built $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo "$src") into $bin:"
    ls -l "${suites[@]/#/$bin/test_}"
    ;;
  run)
    bin=${2:?$(usage)} build=${3:?$(usage)} out=${4:?$(usage)}
    exec python3 "$here/cts_run.py" "$bin" "$build" "$out"
    ;;
  *) usage ;;
esac
