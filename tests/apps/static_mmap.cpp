// SPDX-License-Identifier: MIT
/**
 * @file Transfers from memory that malloc never saw: a static global array (in .bss) and an
 * anonymous mmap'd region. Each iteration the host rescales the static weights and writes them,
 * writes the mmap'd state, runs state = 0.5 * state + 0.25 * weight + 1 and reads the state back
 * into the mmap'd region. Only in-place registration (or hand pinning) can speed these up; a
 * malloc interposer alone cannot. --size is the size of each (the static array caps it at
 * kStaticBytes; larger sizes are clamped to that).
 */
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

namespace {

const char* kSource = R"CL(
#pragma OPENCL FP_CONTRACT OFF
__kernel void relaxTowards(__global float* state, __global const float* weight, uint n) {
  size_t i = get_global_id(0);
  if (i < n) state[i] = 0.5f * state[i] + 0.25f * weight[i] + 1.0f;
}
)CL";

// 64 MiB of .bss: costs nothing until touched, so small runs only fault in what they use.
constexpr size_t kStaticBytes = size_t{64} << 20;
float g_weights[kStaticBytes / sizeof(float)];  // hetopt:transfer

/// Host work on the weights between iterations: every write carries new data.
void rescale(float* w, size_t n, int it) {
  const float f = it % 2 == 0 ? -0.75f : 1.25f;
  for (size_t i = static_cast<size_t>(it) % 4; i < n; i += 4) w[i] *= f;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parseOptions(argc, argv, 1 << 20, 10);
  const size_t n = std::clamp<size_t>(opt.sizeBytes, sizeof(float), kStaticBytes) / sizeof(float);
  const size_t bytes = n * sizeof(float);
  ClEnv env;
  double start = nowMs();

  auto pinW = pinnedIf(opt.pinned, env, bytes);
  auto pinS = pinnedIf(opt.pinned, env, bytes);
  float* weights = pinW ? pinW->as<float>() : g_weights;
  void* region = nullptr;
  if (!opt.pinned) {
    const int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS;
    region = mmap(nullptr, bytes, prot, flags, -1, 0);  // hetopt:transfer
    APP_CHECK(region != MAP_FAILED);
  }
  float* state = pinS ? pinS->as<float>() : static_cast<float*>(region);
  fillPattern(weights, n, 91);
  fillPattern(state, n, 92);
  std::vector<float> refW(weights, weights + n);  // hetopt:host-only
  std::vector<float> refS(state, state + n);      // hetopt:host-only

  cl_mem dW = env.buffer(CL_MEM_READ_ONLY, bytes);
  cl_mem dS = env.buffer(CL_MEM_READ_WRITE, bytes);
  cl_program prog = env.build(kSource);
  cl_kernel k = env.kernel(prog, "relaxTowards");
  setKernelArgs(k, dS, dW, static_cast<cl_uint>(n));
  for (int it = 0; it < opt.iters; ++it) {
    APP_CL(clEnqueueWriteBuffer(env.queue(), dW, CL_FALSE, 0, bytes, weights, 0, nullptr, nullptr));
    APP_CL(clEnqueueWriteBuffer(env.queue(), dS, CL_FALSE, 0, bytes, state, 0, nullptr, nullptr));
    enqueue1D(env.queue(), k, n);
    APP_CL(clEnqueueReadBuffer(env.queue(), dS, CL_TRUE, 0, bytes, state, 0, nullptr, nullptr));
    rescale(weights, n, it);
  }
  reportElapsed(start);

  for (int it = 0; it < opt.iters; ++it) {
    for (size_t i = 0; i < n; ++i) refS[i] = 0.5f * refS[i] + 0.25f * refW[i] + 1.0f;
    rescale(refW.data(), n, it);
  }

  APP_CHECK(nearlyEqual(state, refS.data(), n));
  APP_CHECK(nearlyEqual(weights, refW.data(), n));
  printResult("state", n, state, bytes);
  printResult("weights", n, weights, bytes);

  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseMemObject(dW);
  clReleaseMemObject(dS);
  if (region) APP_CHECK(munmap(region, bytes) == 0);
  return 0;
}
