// SPDX-License-Identifier: MIT
/**
 * @file A program whose timeline is known (tests/analyzer/check_timeline.py): a loop of write ->
 * kernel -> read (blocking transfers) on one in-order queue, then clFlush, a sleep of --sleep-ms,
 * clFlush again. The sleep must show as a gap of at least that long between the two flushes.
 *
 *   timeline_app [--size BYTES] [--iters N] [--sleep-ms MS]
 */
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

static const char* kSource = R"CL(
__kernel void twice(__global float* x) { x[get_global_id(0)] *= 2.0f; }
)CL";

int main(int argc, char** argv) {
  Options opt = parseOptions(argc, argv, 64 << 10, 40);
  long sleepMs = 300;
  for (size_t i = 0; i + 1 < opt.rest.size(); ++i)
    if (opt.rest[i] == "--sleep-ms") sleepMs = strtol(opt.rest[i + 1].c_str(), nullptr, 10);
  const size_t n = opt.sizeBytes / sizeof(float);
  ClEnv env;
  cl_program prog = env.build(kSource);
  cl_kernel k = env.kernel(prog, "twice");
  auto* host = static_cast<float*>(malloc(n * sizeof(float)));
  APP_CHECK(host != nullptr);
  fillPattern(host, n, 3);
  std::vector<float> expect(host, host + n);
  cl_int err = CL_SUCCESS;
  cl_mem dev = clCreateBuffer(env.context(), CL_MEM_READ_WRITE, n * sizeof(float), nullptr, &err);
  APP_CL(err);
  APP_CL(clSetKernelArg(k, 0, sizeof(cl_mem), &dev));
  for (int it = 0; it < opt.iters; ++it) {
    APP_CL(clEnqueueWriteBuffer(env.queue(), dev, CL_TRUE, 0, n * sizeof(float), host, 0, nullptr,
                                nullptr));
    APP_CL(clEnqueueNDRangeKernel(env.queue(), k, 1, nullptr, &n, nullptr, 0, nullptr, nullptr));
    APP_CL(clEnqueueReadBuffer(env.queue(), dev, CL_TRUE, 0, n * sizeof(float), host, 0, nullptr,
                               nullptr));
    for (size_t i = 0; i < n; ++i) expect[i] *= 2.0f;
  }
  APP_CL(clFlush(env.queue()));
  const timespec pause{sleepMs / 1000, (sleepMs % 1000) * 1000000};
  nanosleep(&pause, nullptr);
  APP_CL(clFlush(env.queue()));
  APP_CL(clFinish(env.queue()));
  APP_CHECK(nearlyEqual(host, expect.data(), n));
  printf("result: n=%zu iters=%d checksum=%016llx\n", n, opt.iters,
         static_cast<unsigned long long>(checksum(host, n * sizeof(float))));
  clReleaseMemObject(dev);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  free(host);
  return 0;
}
