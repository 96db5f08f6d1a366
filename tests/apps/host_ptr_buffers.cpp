// SPDX-License-Identifier: MIT
/**
 * @file Host memory handed to clCreateBuffer instead of to read/write calls.
 *  - `coeff`: malloc'd, filled, given to a CL_MEM_COPY_HOST_PTR buffer and freed at once (the
 *    buffer owns a copy from then on; the freed memory may be reused by the allocator).
 *  - `state`: malloc'd, filled, wrapped by a CL_MEM_USE_HOST_PTR buffer. Each iteration a kernel
 *    updates it in place (state = 0.5 * state + coeff); the host then maps it, checks that the map
 *    returns the app's own pointer (the spec says so for USE_HOST_PTR), updates every third element
 *    through the mapping and unmaps it.
 *  - `result`: malloc'd, read into from the USE_HOST_PTR buffer at the end.
 * The --pinned variant copies from hand-pinned memory and replaces the USE_HOST_PTR buffer with the
 * vendors' zero-copy recipe, a CL_MEM_ALLOC_HOST_PTR buffer filled through a mapping.
 * --size is the size of each of the three.
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

namespace {

const char* kSource = R"CL(
#pragma OPENCL FP_CONTRACT OFF
__kernel void relax(__global float* state, __global const float* coeff, uint n) {
  size_t i = get_global_id(0);
  if (i < n) state[i] = 0.5f * state[i] + coeff[i];
}
)CL";

/// Host work done through the mapping after every kernel.
void nudge(float* state, size_t n, int it) {
  const float delta = 0.125f * static_cast<float>(it + 1);
  for (size_t i = 0; i < n; i += 3) state[i] += delta;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parseOptions(argc, argv, 1 << 20, 10);
  const size_t n = std::max<size_t>(opt.sizeBytes / sizeof(float), 1);
  const size_t bytes = n * sizeof(float);
  ClEnv env;
  cl_command_queue q = env.queue();
  double start = nowMs();

  // COPY_HOST_PTR: the host memory only has to live until clCreateBuffer returns.
  std::vector<float> refCoeff(n);  // hetopt:host-only
  cl_mem dCoeff = nullptr;
  {
    auto pinCoeff = pinnedIf(opt.pinned, env, bytes);
    float* coeff =
        pinCoeff ? pinCoeff->as<float>() : static_cast<float*>(malloc(bytes));  // hetopt:transfer
    APP_CHECK(coeff != nullptr);
    fillPattern(coeff, n, 21);
    refCoeff.assign(coeff, coeff + n);
    dCoeff = env.buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, coeff);
    if (!pinCoeff) free(coeff);
  }

  // USE_HOST_PTR over the app's own memory (ALLOC_HOST_PTR in the --pinned variant).
  float* state = nullptr;
  cl_mem dState = nullptr;
  if (opt.pinned) {
    dState = env.buffer(CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes);
    cl_int err = CL_SUCCESS;
    auto* init = static_cast<float*>(clEnqueueMapBuffer(
        q, dState, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, bytes, 0, nullptr, nullptr, &err));
    APP_CL(err);
    fillPattern(init, n, 22);
    APP_CL(clEnqueueUnmapMemObject(q, dState, init, 0, nullptr, nullptr));
  } else {
    state = static_cast<float*>(malloc(bytes));  // hetopt:transfer
    APP_CHECK(state != nullptr);
    fillPattern(state, n, 22);
    dState = env.buffer(CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, state);
  }
  std::vector<float> refState(n);  // hetopt:host-only
  fillPattern(refState.data(), n, 22);

  cl_program prog = env.build(kSource);
  cl_kernel k = env.kernel(prog, "relax");
  setKernelArgs(k, dState, dCoeff, static_cast<cl_uint>(n));
  for (int it = 0; it < opt.iters; ++it) {
    enqueue1D(q, k, n);
    cl_int err = CL_SUCCESS;
    auto* mapped = static_cast<float*>(clEnqueueMapBuffer(
        q, dState, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, nullptr, nullptr, &err));
    APP_CL(err);
    if (state) APP_CHECK(mapped == state);
    nudge(mapped, n, it);
    APP_CL(clEnqueueUnmapMemObject(q, dState, mapped, 0, nullptr, nullptr));
  }

  auto pinResult = pinnedIf(opt.pinned, env, bytes);
  float* result =
      pinResult ? pinResult->as<float>() : static_cast<float*>(malloc(bytes));  // hetopt:transfer
  APP_CHECK(result != nullptr);
  APP_CL(clEnqueueReadBuffer(q, dState, CL_TRUE, 0, bytes, result, 0, nullptr, nullptr));
  reportElapsed(start);

  for (int it = 0; it < opt.iters; ++it) {
    for (size_t i = 0; i < n; ++i) refState[i] = 0.5f * refState[i] + refCoeff[i];
    nudge(refState.data(), n, it);
  }
  APP_CHECK(nearlyEqual(result, refState.data(), n));
  printResult("state", n, result, bytes);

  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseMemObject(dCoeff);
  clReleaseMemObject(dState);  // before freeing the memory a USE_HOST_PTR buffer wraps
  APP_CL(clFinish(q));
  free(state);
  if (!pinResult) free(result);
  return 0;
}
