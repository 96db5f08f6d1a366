// SPDX-License-Identifier: MIT
/**
 * @file The thesis's motivating pattern: one host segment written to the device, transformed by a
 * kernel and read back, N times (write -> kernel -> read). --size is the segment size in bytes.
 * --sweep: iteration i moves only the first size / 4^(i mod 6) bytes (at least 4 KiB), as bus
 * benchmarks do: one call site whose transfers span three orders of magnitude.
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

static const char* kSource = R"CL(
__kernel void axpb(__global float* x, float a, float b, uint n) {
  size_t i = get_global_id(0);
  if (i < n) x[i] = a * x[i] + b;
}
)CL";

int main(int argc, char** argv) {
  Options opt = parseOptions(argc, argv, 1 << 20, 10);
  const bool sweep =
      std::find(opt.rest.begin(), opt.rest.end(), std::string("--sweep")) != opt.rest.end();
  const size_t n = opt.sizeBytes / sizeof(float);
  // Elements moved and transformed in iteration `it`.
  auto countOf = [&](int it) {
    return sweep ? std::min(n, std::max<size_t>(1024, n >> (2 * (it % 6)))) : n;
  };
  ClEnv env;
  cl_program prog = env.build(kSource);  // compilation is the same in every variant: not timed
  cl_kernel k = env.kernel(prog, "axpb");
  // The host reference is verification, not the app's work: made before the timed region.
  std::vector<float> expect(n);  // hetopt:host-only
  fillPattern(expect.data(), n, 1);
  double start = nowMs();  // from here: host allocation (pinned or not), transfers, kernels

  PinnedHostMemory* pinned = opt.pinned ? new PinnedHostMemory(env, n * sizeof(float)) : nullptr;
  float* host = pinned ? pinned->as<float>()
                       : static_cast<float*>(malloc(n * sizeof(float)));  // hetopt:transfer
  APP_CHECK(host != nullptr);
  fillPattern(host, n, 1);

  cl_int err = CL_SUCCESS;
  cl_mem dev = clCreateBuffer(env.context(), CL_MEM_READ_WRITE, n * sizeof(float), nullptr, &err);
  APP_CL(err);
  const float a = 0.5f, b = 1.0f;
  cl_uint count = static_cast<cl_uint>(n);
  APP_CL(clSetKernelArg(k, 0, sizeof(cl_mem), &dev));
  APP_CL(clSetKernelArg(k, 1, sizeof(float), &a));
  APP_CL(clSetKernelArg(k, 2, sizeof(float), &b));
  APP_CL(clSetKernelArg(k, 3, sizeof(cl_uint), &count));
  size_t global = (n + 255) / 256 * 256;

  for (int it = 0; it < opt.iters; ++it) {
    const size_t c = countOf(it);
    if (sweep) {
      count = static_cast<cl_uint>(c);
      APP_CL(clSetKernelArg(k, 3, sizeof(cl_uint), &count));
    }
    APP_CL(clEnqueueWriteBuffer(env.queue(), dev, CL_TRUE, 0, c * sizeof(float), host, 0, nullptr,
                                nullptr));
    APP_CL(
        clEnqueueNDRangeKernel(env.queue(), k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
    APP_CL(clEnqueueReadBuffer(env.queue(), dev, CL_TRUE, 0, c * sizeof(float), host, 0, nullptr,
                               nullptr));
  }
  APP_CL(clFinish(env.queue()));
  reportElapsed(start);  // the host reference below is verification, not the app's work

  for (int it = 0; it < opt.iters; ++it)
    for (size_t i = 0, c = countOf(it); i < c; ++i) expect[i] = a * expect[i] + b;
  APP_CHECK(nearlyEqual(host, expect.data(), n));
  printf("result: n=%zu iters=%d checksum=%016llx\n", n, opt.iters,
         static_cast<unsigned long long>(checksum(host, n * sizeof(float))));

  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseMemObject(dev);
  if (pinned)
    delete pinned;
  else
    free(host);
  return 0;
}
