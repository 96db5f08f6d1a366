// SPDX-License-Identifier: MIT
/**
 * @file A compute-bound app: a small buffer (--size bytes) goes to the device once, --iters kernel
 * launches each run kRounds rounds of integer hashing and float accumulation per element, and the
 * buffer comes back once. Its communication/computation ratio is far below the 0.1 eligibility
 * threshold, so the analysis must leave it alone (pinning cannot pay here). Per-element work is
 * independent and exact to mirror on the host; the host re-checks up to kMaxSamples evenly spaced
 * elements so the check stays cheap while the device work scales.
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

namespace {

// FP_CONTRACT OFF: no fused multiply-add, so the host's separate * and + round the same way.
const char* kSource = R"CL(
#pragma OPENCL FP_CONTRACT OFF
__kernel void churn(__global float* x, uint n, uint rounds) {
  uint i = get_global_id(0);
  if (i >= n) return;
  float v = x[i];
  uint h = as_uint(v) ^ (i * 2654435761u);
  for (uint r = 0; r < rounds; ++r) {
    h = h * 1664525u + 1013904223u;
    h ^= h >> 13;
    v = v * 0.875f + (float)(h & 1023u) * (1.0f / 1024.0f);
  }
  x[i] = v;
}
)CL";

constexpr uint32_t kRounds = 4096;
constexpr size_t kMaxSamples = 1024;

/// Host mirror of one work-item of one launch.
float churn(float v, uint32_t i, uint32_t rounds) {
  uint32_t h;
  memcpy(&h, &v, sizeof(h));
  h ^= i * 2654435761u;
  for (uint32_t r = 0; r < rounds; ++r) {
    h = h * 1664525u + 1013904223u;
    h ^= h >> 13;
    v = v * 0.875f + static_cast<float>(h & 1023u) * (1.0f / 1024.0f);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parseOptions(argc, argv, 64 << 10, 4);
  const size_t n = std::max<size_t>(opt.sizeBytes / sizeof(float), 1);
  const size_t bytes = n * sizeof(float);
  ClEnv env;
  double start = nowMs();

  auto pinned = pinnedIf(opt.pinned, env, bytes);
  float* host =
      pinned ? pinned->as<float>() : static_cast<float*>(malloc(bytes));  // hetopt:transfer
  APP_CHECK(host != nullptr);
  fillPattern(host, n, 81);
  const size_t stride = (n + kMaxSamples - 1) / kMaxSamples;
  float initial[kMaxSamples];
  for (size_t s = 0; s * stride < n; ++s) initial[s] = host[s * stride];

  cl_mem dev = env.buffer(CL_MEM_READ_WRITE, bytes);
  cl_program prog = env.build(kSource);
  cl_kernel k = env.kernel(prog, "churn");
  setKernelArgs(k, dev, static_cast<cl_uint>(n), static_cast<cl_uint>(kRounds));
  APP_CL(clEnqueueWriteBuffer(env.queue(), dev, CL_FALSE, 0, bytes, host, 0, nullptr, nullptr));
  for (int it = 0; it < opt.iters; ++it) enqueue1D(env.queue(), k, n);
  APP_CL(clEnqueueReadBuffer(env.queue(), dev, CL_TRUE, 0, bytes, host, 0, nullptr, nullptr));
  reportElapsed(start);

  for (size_t s = 0; s * stride < n; ++s) {
    const size_t i = s * stride;
    float want = initial[s];
    for (int it = 0; it < opt.iters; ++it) want = churn(want, static_cast<uint32_t>(i), kRounds);
    APP_CHECK(nearlyEqual(&host[i], &want, 1));
  }
  printResult("x", n, host, bytes);

  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseMemObject(dev);
  if (!pinned) free(host);
  return 0;
}
