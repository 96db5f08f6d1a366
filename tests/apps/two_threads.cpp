// SPDX-License-Identifier: MIT
/**
 * @file Two host threads transferring concurrently, each with its own queue of one context, its
 * own kernel object (clSetKernelArg is not thread-safe on a shared kernel) and its own host buffer
 * allocated on that thread. Each runs the write -> kernel -> read loop with its own parameters;
 * the main thread verifies both against host references computed on the worker threads and prints
 * the results in thread order, so stdout does not depend on scheduling. --size is the size of
 * each thread's buffer.
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

namespace {

const char* kSource = R"CL(
#pragma OPENCL FP_CONTRACT OFF
__kernel void ramp(__global float* x, float a, float b, uint n) {
  size_t i = get_global_id(0);
  if (i < n) x[i] = a * x[i] + b * (float)(i % 16);
}
)CL";

constexpr int kThreads = 2;

struct WorkerResult {
  double loopDoneMs = 0;  ///< end of the timed part, before the host reference
  bool matches = false;
  uint64_t checksum = 0;
};

/// One thread's whole life: allocate, loop write -> kernel -> read on its own queue, check.
void worker(const ClEnv& env, cl_program prog, int t, const Options& opt, WorkerResult* out) {
  const size_t n = std::max<size_t>(opt.sizeBytes / sizeof(float), 1);
  const size_t bytes = n * sizeof(float);
  const float a = t == 0 ? 0.5f : 0.75f;
  const float b = t == 0 ? 1.0f : -0.125f;
  cl_command_queue q = env.queue(t);

  auto pinned = pinnedIf(opt.pinned, env, bytes, t);
  float* host =
      pinned ? pinned->as<float>() : static_cast<float*>(malloc(bytes));  // hetopt:transfer
  APP_CHECK(host != nullptr);
  fillPattern(host, n, 60 + t);
  std::vector<float> ref(host, host + n);  // hetopt:host-only

  cl_mem dev = env.buffer(CL_MEM_READ_WRITE, bytes);
  cl_kernel k = env.kernel(prog, "ramp");
  setKernelArgs(k, dev, a, b, static_cast<cl_uint>(n));
  for (int it = 0; it < opt.iters; ++it) {
    APP_CL(clEnqueueWriteBuffer(q, dev, CL_FALSE, 0, bytes, host, 0, nullptr, nullptr));
    enqueue1D(q, k, n);
    APP_CL(clEnqueueReadBuffer(q, dev, CL_TRUE, 0, bytes, host, 0, nullptr, nullptr));
  }
  out->loopDoneMs = nowMs();

  for (int it = 0; it < opt.iters; ++it)
    for (size_t i = 0; i < n; ++i) ref[i] = a * ref[i] + b * static_cast<float>(i % 16);
  out->matches = nearlyEqual(host, ref.data(), n);
  out->checksum = checksum(host, bytes);

  APP_CL(clReleaseKernel(k));
  APP_CL(clReleaseMemObject(dev));
  if (!pinned) free(host);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parseOptions(argc, argv, 1 << 20, 10);
  ClEnv env(kThreads);
  double start = nowMs();
  cl_program prog = env.build(kSource);

  WorkerResult results[kThreads];
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back(worker, std::cref(env), prog, t, std::cref(opt), &results[t]);
  for (std::thread& th : threads) th.join();
  reportElapsed(start, std::max(results[0].loopDoneMs, results[1].loopDoneMs));

  const size_t n = std::max<size_t>(opt.sizeBytes / sizeof(float), 1);
  for (int t = 0; t < kThreads; ++t) {
    APP_CHECK(results[t].matches);
    printf("result: thread=%d n=%zu checksum=%016llx\n", t, n,
           static_cast<unsigned long long>(results[t].checksum));
  }
  clReleaseProgram(prog);
  return 0;
}
