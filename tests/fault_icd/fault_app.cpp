// SPDX-License-Identifier: MIT
/**
 * @file The program of the injected-OpenCL-error tests (opencl_faults.sh), run under
 * fault_layer: it prints on stdout what each of its OpenCL calls returned, so a run under hetopt
 * must print exactly what the same run without hetopt prints (hetopt neither hides nor changes the
 * driver's errors). It transfers two malloc'd 1 MiB blocks 5 times (the allocation sites a plan
 * names), then asks for an ALLOC_HOST_PTR buffer, maps it, and a USE_HOST_PTR buffer. Exit status
 * 3 when it ran to the end (also with errors it reported), 1 on a wrong result.
 */
#include <CL/cl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/cl_select.h"
#include "tests/apps/app_util.h"

using namespace hetopt;

int main() {
  ClDevice device;
  std::string error;
  if (!selectClDevice("", &device, &error)) {
    fprintf(stderr, "no OpenCL device: %s\n", error.c_str());
    return 2;
  }
  apps::printDevice(device);
  // Allocated first: under a plan they wait for the pool's outcome, so hetopt's own calls have met
  // a fault before this program can end at its own failed clCreateContext.
  const size_t n = (1 << 20) / sizeof(unsigned);
  auto* src = static_cast<unsigned*>(malloc(n * sizeof(unsigned)));  // hetopt:transfer
  auto* dst = static_cast<unsigned*>(malloc(n * sizeof(unsigned)));  // hetopt:transfer
  APP_CHECK(src && dst);
  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(device.platform), 0};
  cl_context context = clCreateContext(props, 1, &device.device, nullptr, nullptr, &err);
  printf("result: clCreateContext %d%s\n", err, context ? "" : " (null)");
  if (err != CL_SUCCESS) {  // a program that reports its error and ends
    free(src);
    free(dst);
    return 3;
  }
  cl_command_queue queue =
      clCreateCommandQueueWithProperties(context, device.device, nullptr, &err);
  APP_CL(err);

  cl_mem dev = clCreateBuffer(context, CL_MEM_READ_WRITE, n * sizeof(unsigned), nullptr, &err);
  APP_CL(err);
  unsigned long long sum = 0;
  for (unsigned it = 0; it < 5; ++it) {
    for (size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned>(i * 2654435761u + it);
    APP_CL(clEnqueueWriteBuffer(queue, dev, CL_TRUE, 0, n * sizeof(unsigned), src, 0, nullptr,
                                nullptr));
    APP_CL(clEnqueueReadBuffer(queue, dev, CL_TRUE, 0, n * sizeof(unsigned), dst, 0, nullptr,
                               nullptr));
    APP_CHECK(memcmp(src, dst, n * sizeof(unsigned)) == 0);
    for (size_t i = 0; i < n; ++i) sum += dst[i] ^ i;
  }
  printf("result: checksum %llu\n", sum);

  // Host-memory buffers, the calls a pinned pool makes too.
  const size_t small = 64 << 10;
  cl_mem alloc = clCreateBuffer(context, CL_MEM_ALLOC_HOST_PTR, small, nullptr, &err);
  printf("result: clCreateBuffer(ALLOC_HOST_PTR) %d%s\n", err, alloc ? "" : " (null)");
  if (alloc) {
    void* p = clEnqueueMapBuffer(queue, alloc, CL_TRUE, CL_MAP_WRITE, 0, small, 0, nullptr, nullptr,
                                 &err);
    printf("result: clEnqueueMapBuffer %d%s\n", err, p ? "" : " (null)");
    if (p) {
      memset(p, 0x5a, small);
      APP_CL(clEnqueueUnmapMemObject(queue, alloc, p, 0, nullptr, nullptr));
      APP_CL(clEnqueueReadBuffer(queue, alloc, CL_TRUE, 0, small, dst, 0, nullptr, nullptr));
      for (size_t i = 0; i < small / sizeof(unsigned); ++i) APP_CHECK(dst[i] == 0x5a5a5a5au);
    }
    clReleaseMemObject(alloc);
  }
  cl_mem use = clCreateBuffer(context, CL_MEM_USE_HOST_PTR, small, src, &err);
  printf("result: clCreateBuffer(USE_HOST_PTR) %d%s\n", err, use ? "" : " (null)");
  if (use) clReleaseMemObject(use);

  clReleaseMemObject(dev);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  free(src);
  free(dst);
  return 3;
}
