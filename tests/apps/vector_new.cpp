// SPDX-License-Identifier: MIT
/**
 * @file C++ allocations feeding transfers: two std::vector<float> written from .data() and a
 * new float[] read into, in a loop where the host updates one vector between iterations
 * (z = x * y - 0.5 * z on the device). The host reference lives in a vector and a new[] array that
 * never cross. --size is the size of each of x, y and z.
 */
#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

namespace {

const char* kSource = R"CL(
#pragma OPENCL FP_CONTRACT OFF
__kernel void mulSub(__global const float* x, __global const float* y, __global float* z,
                     uint n) {
  size_t i = get_global_id(0);
  if (i < n) z[i] = x[i] * y[i] * 0.125f - 0.5f * z[i];
}
)CL";

/// The host's share of each iteration: x drifts towards 1 so every iteration writes new data.
void updateX(float* x, size_t n, int it) {
  const float step = 0.25f + 0.01f * static_cast<float>(it);
  for (size_t i = 0; i < n; ++i) x[i] = x[i] * 0.75f + step;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parseOptions(argc, argv, 1 << 20, 10);
  const size_t n = std::max<size_t>(opt.sizeBytes / sizeof(float), 1);
  const size_t bytes = n * sizeof(float);
  ClEnv env;
  double start = nowMs();

  // The vectors stay empty in the --pinned variant, which uses hand-pinned memory instead.
  auto pinX = pinnedIf(opt.pinned, env, bytes);
  auto pinY = pinnedIf(opt.pinned, env, bytes);
  auto pinZ = pinnedIf(opt.pinned, env, bytes);
  std::vector<float> xVec(opt.pinned ? 0 : n);        // hetopt:transfer
  std::vector<float> yVec(opt.pinned ? 0 : n);        // hetopt:transfer
  float* zNew = opt.pinned ? nullptr : new float[n];  // hetopt:transfer
  float* x = pinX ? pinX->as<float>() : xVec.data();
  float* y = pinY ? pinY->as<float>() : yVec.data();
  float* z = pinZ ? pinZ->as<float>() : zNew;
  fillPattern(x, n, 11);
  fillPattern(y, n, 12);

  std::vector<float> refX(x, x + n);            // hetopt:host-only
  std::unique_ptr<float[]> refZ(new float[n]);  // hetopt:host-only
  std::fill(refZ.get(), refZ.get() + n, 0.0f);

  cl_mem dX = env.buffer(CL_MEM_READ_ONLY, bytes);
  cl_mem dY = env.buffer(CL_MEM_READ_ONLY, bytes);
  cl_mem dZ = env.buffer(CL_MEM_READ_WRITE, bytes);
  const float zero = 0.0f;
  APP_CL(clEnqueueFillBuffer(env.queue(), dZ, &zero, sizeof(zero), 0, bytes, 0, nullptr, nullptr));
  cl_program prog = env.build(kSource);
  cl_kernel k = env.kernel(prog, "mulSub");
  setKernelArgs(k, dX, dY, dZ, static_cast<cl_uint>(n));

  APP_CL(clEnqueueWriteBuffer(env.queue(), dY, CL_FALSE, 0, bytes, y, 0, nullptr, nullptr));
  for (int it = 0; it < opt.iters; ++it) {
    APP_CL(clEnqueueWriteBuffer(env.queue(), dX, CL_TRUE, 0, bytes, x, 0, nullptr, nullptr));
    enqueue1D(env.queue(), k, n);
    APP_CL(clEnqueueReadBuffer(env.queue(), dZ, CL_TRUE, 0, bytes, z, 0, nullptr, nullptr));
    updateX(x, n, it);
  }
  reportElapsed(start);

  // The reference replays the loop on the host, outside the timed part.
  for (int it = 0; it < opt.iters; ++it) {
    for (size_t i = 0; i < n; ++i) refZ[i] = refX[i] * y[i] * 0.125f - 0.5f * refZ[i];
    updateX(refX.data(), n, it);
  }

  APP_CHECK(nearlyEqual(z, refZ.get(), n));
  APP_CHECK(nearlyEqual(x, refX.data(), n));
  printResult("z", n, z, bytes);

  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseMemObject(dX);
  clReleaseMemObject(dY);
  clReleaseMemObject(dZ);
  delete[] zNew;
  return 0;
}
