// SPDX-License-Identifier: MIT
/**
 * @file What interposition costs a program in pass-through mode, and in optimize mode for what its
 * plan does not take. The same binary runs natively and with the shim preloaded
 * (scripts/bench/interpose_overhead.sh alternates them and takes medians); the difference is the
 * shim's added cost per malloc/free pair and per OpenCL call.
 */
#include <CL/cl.h>
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "common/cl_select.h"

namespace {

void BM_MallocFree(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = malloc(size);
    benchmark::DoNotOptimize(p);
    free(p);
  }
}
// 64 KiB: above HETOPT_MIN_TRACKED_SIZE, so optimize mode looks at it (a size its plan takes
// would cost an unwind; one it does not take must not).
BENCHMARK(BM_MallocFree)->Arg(16)->Arg(64)->Arg(1024)->Arg(64 << 10);

void BM_NewDelete(benchmark::State& state) {
  for (auto _ : state) {
    auto* p = new int[8];
    benchmark::DoNotOptimize(p);
    delete[] p;
  }
}
BENCHMARK(BM_NewDelete);

// A cheap OpenCL call that does no device work: what the wrapper adds is the difference.
void BM_ClGetDeviceInfo(benchmark::State& state) {
  hetopt::ClDevice dev;
  std::string error;
  if (!hetopt::selectClDevice("", &dev, &error)) {
    state.SkipWithError(error.c_str());
    return;
  }
  for (auto _ : state) {
    cl_uint units = 0;
    cl_int st =
        clGetDeviceInfo(dev.device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr);
    benchmark::DoNotOptimize(st);
    benchmark::DoNotOptimize(units);
  }
}
BENCHMARK(BM_ClGetDeviceInfo);

// A call that also creates and releases an object: a user event.
void BM_ClUserEventCreateRelease(benchmark::State& state) {
  hetopt::ClDevice dev;
  std::string error;
  if (!hetopt::selectClDevice("", &dev, &error)) {
    state.SkipWithError(error.c_str());
    return;
  }
  cl_int err = CL_SUCCESS;
  cl_context ctx = clCreateContext(nullptr, 1, &dev.device, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) {
    state.SkipWithError("clCreateContext failed");
    return;
  }
  for (auto _ : state) {
    cl_event e = clCreateUserEvent(ctx, &err);
    clSetUserEventStatus(e, CL_COMPLETE);
    clReleaseEvent(e);
  }
  state.SetItemsProcessed(state.iterations() * 3);  // three OpenCL calls per iteration
  clReleaseContext(ctx);
}
BENCHMARK(BM_ClUserEventCreateRelease);

}  // namespace

BENCHMARK_MAIN();
