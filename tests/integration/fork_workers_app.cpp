// SPDX-License-Identifier: MIT
/**
 * @file The job-runner shape (tests/integration/fork_workers.sh): the parent mallocs and fills the
 * data and makes no OpenCL call; it forks WORKERS workers, each makes a context of its own, copies
 * its slices to the device, scales them there, copies them back and checks them; the parent waits
 * and checks that every worker exited 0. With WORKERS 0 the parent does every slice itself (the
 * same program, not forking). A forked worker cannot use a driver its parent initialized (PoCL's
 * hangs, NVIDIA's calls fail): under hetopt the parent's driver must stay the program's.
 *   fork_workers_app WORKERS [SLICES] [HOST_MS]
 * HOST_MS: the parent computes that long before it forks (the input a real program reads first).
 * Built twice (fork_process.h): `fork_workers_app` imports fork, `fork_workers_app_dlsym` does not.
 * stdout: the workers' "device:" lines and "result: workers=W slices=S checksum=X"; exits 1 when a
 * slice came back wrong or a worker failed.
 */
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tests/apps/app_common.h"
#include "tests/integration/fork_process.h"

using namespace hetopt::apps;

namespace {

constexpr size_t kSliceFloats = 256 << 10;  // 1 MiB per slice

const char* kSource = R"CL(
__kernel void scale(__global float* x) { size_t i = get_global_id(0); x[i] = 2.0f * x[i] + 1.0f; }
)CL";

/// The one allocation site of the data: every slice of it crosses to the device and back.
__attribute__((noinline)) float* newData(size_t floats) {
  return static_cast<float*>(malloc(floats * sizeof(float)));  // hetopt:transfer
}

/// Slices first, first + step, ... of `data`: to the device, scaled, back, checked. True when all
/// came back right.
bool processSlices(float* data, int slices, int first, int step) {
  ClEnv env;
  cl_program program = env.build(kSource);
  cl_kernel kernel = env.kernel(program, "scale");
  cl_mem dev = env.buffer(CL_MEM_READ_WRITE, kSliceFloats * sizeof(float));
  APP_CL(clSetKernelArg(kernel, 0, sizeof dev, &dev));
  std::vector<float> want(kSliceFloats);
  bool ok = true;
  for (int s = first; s < slices; s += step) {
    float* slice = data + static_cast<size_t>(s) * kSliceFloats;
    for (size_t i = 0; i < kSliceFloats; ++i) want[i] = 2.0f * slice[i] + 1.0f;
    const size_t bytes = kSliceFloats * sizeof(float), global = kSliceFloats;
    APP_CL(clEnqueueWriteBuffer(env.queue(), dev, CL_TRUE, 0, bytes, slice, 0, nullptr, nullptr));
    APP_CL(clEnqueueNDRangeKernel(env.queue(), kernel, 1, nullptr, &global, nullptr, 0, nullptr,
                                  nullptr));
    APP_CL(clEnqueueReadBuffer(env.queue(), dev, CL_TRUE, 0, bytes, slice, 0, nullptr, nullptr));
    ok = ok && nearlyEqual(slice, want.data(), kSliceFloats);
  }
  clReleaseMemObject(dev);
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  return ok;
}

/// Host work of about `ms` milliseconds on the data (kept: its sum goes nowhere but must be made).
void computeFor(const float* data, size_t floats, double ms) {
  volatile float sink = 0;
  const double until = nowMs() + ms;
  while (nowMs() < until)
    for (size_t i = 0; i < floats; i += 4096) sink = sink + data[i];
}

}  // namespace

int main(int argc, char** argv) {
  const int workers = argc > 1 ? atoi(argv[1]) : -1;
  const int slices = argc > 2 ? atoi(argv[2]) : 8;
  const double hostMs = argc > 3 ? atof(argv[3]) : 0;
  if (argc < 2 || workers < 0 || slices < 1 || hostMs < 0) {
    fprintf(stderr, "usage: fork_workers_app WORKERS [SLICES] [HOST_MS]\n");
    return 2;
  }
  const size_t floats = static_cast<size_t>(slices) * kSliceFloats;
  float* data = newData(floats);
  APP_CHECK(data != nullptr);
  fillPattern(data, floats, 7);
  computeFor(data, floats, hostMs);
  const double start = nowMs();
  if (workers == 0) {
    APP_CHECK(processSlices(data, slices, 0, 1));
  } else {
    std::vector<pid_t> pids;
    fflush(nullptr);  // a worker's exit() must not write the parent's buffered output again
    for (int w = 0; w < workers; ++w) {
      const pid_t pid = forkProcess();
      if (pid == 0) exit(processSlices(data, slices, w, workers) ? 0 : 1);
      APP_CHECK(pid > 0);
      pids.push_back(pid);
    }
    int failed = 0;
    for (pid_t pid : pids) {
      int status = 0;
      if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "fork_workers_app: worker %d failed (status 0x%x)\n", static_cast<int>(pid),
                status);
        ++failed;
      }
    }
    APP_CHECK(failed == 0);
    // The workers' results stay theirs: the parent's data is as it filled it.
    for (size_t i = 0; i < floats; ++i) data[i] = 2.0f * data[i] + 1.0f;
  }
  reportElapsed(start);
  printf("result: workers=%d slices=%d checksum=%016llx\n", workers, slices,
         static_cast<unsigned long long>(checksum(data, floats * sizeof(float))));
  free(data);
  return 0;
}
