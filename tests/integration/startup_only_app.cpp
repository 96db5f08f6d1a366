// SPDX-License-Identifier: MIT
/**
 * @file A program whose only OpenCL cost worth saving is its start-up: it computes on the host
 * first (`--rounds N` passes over 4 MiB, never sent to the device), then makes one context, builds
 * one kernel from source and moves 256 bytes each way, too little for any allocation site to be
 * worth pinning. It checks every number the device gives back (exit 1 otherwise) and prints them
 * (integration/startup_only.sh).
 */
#include <CL/cl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

[[noreturn]] void die(const char* what, cl_int err) {
  fprintf(stderr, "startup_only_app: %s failed (%d)\n", what, err);
  exit(1);
}

/// The host work before any OpenCL call, as real programs read and prepare their input.
uint32_t hostWork(unsigned rounds) {
  std::vector<uint32_t> data(size_t{1} << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint32_t>(i * 2654435761u);
  uint32_t sum = 0;
  for (unsigned r = 0; r < rounds; ++r)
    for (uint32_t& x : data) sum += (x = x * 1664525u + 1013904223u) >> 16;
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  unsigned rounds = 200;
  if (argc == 3 && !strcmp(argv[1], "--rounds")) {
    rounds = static_cast<unsigned>(atoi(argv[2]));
  } else if (argc != 1) {
    fprintf(stderr, "usage: %s [--rounds N]\n", argv[0]);
    return 2;
  }
  const uint32_t checksum = hostWork(rounds);
  const int offset = static_cast<int>(checksum % 1000);

  cl_platform_id platform;
  cl_device_id device;
  cl_int err = clGetPlatformIDs(1, &platform, nullptr);
  if (err != CL_SUCCESS) die("clGetPlatformIDs", err);
  if ((err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_DEFAULT, 1, &device, nullptr)) != CL_SUCCESS)
    die("clGetDeviceIDs", err);
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) die("clCreateContext", err);
  cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, nullptr, &err);
  if (err != CL_SUCCESS) die("clCreateCommandQueueWithProperties", err);
  const char* source =
      "__kernel void advance(__global int* x, int offset) {\n"
      "  x[get_global_id(0)] = 3 * x[get_global_id(0)] + offset;\n"
      "}\n";
  cl_program program = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
  if (err != CL_SUCCESS) die("clCreateProgramWithSource", err);
  if ((err = clBuildProgram(program, 1, &device, "", nullptr, nullptr)) != CL_SUCCESS)
    die("clBuildProgram", err);
  cl_kernel kernel = clCreateKernel(program, "advance", &err);
  if (err != CL_SUCCESS) die("clCreateKernel", err);

  const size_t n = 64;  // 256 bytes each way: nothing worth pinning
  int values[n];
  for (size_t i = 0; i < n; ++i) values[i] = static_cast<int>(i);
  cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof values,
                                 values, &err);
  if (err != CL_SUCCESS) die("clCreateBuffer", err);
  clSetKernelArg(kernel, 0, sizeof buffer, &buffer);
  clSetKernelArg(kernel, 1, sizeof offset, &offset);
  if ((err = clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &n, nullptr, 0, nullptr, nullptr)) !=
      CL_SUCCESS)
    die("clEnqueueNDRangeKernel", err);
  int out[n];
  if ((err = clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, sizeof out, out, 0, nullptr,
                                 nullptr)) != CL_SUCCESS)
    die("clEnqueueReadBuffer", err);
  long long sum = 0;
  for (size_t i = 0; i < n; ++i) {
    if (out[i] != 3 * values[i] + offset) {
      fprintf(stderr, "startup_only_app: x[%zu] = %d, expected %d\n", i, out[i],
              3 * values[i] + offset);
      return 1;
    }
    sum += out[i];
  }
  printf("host checksum %u; %zu values stepped on the device, offset %d; sum %lld\n", checksum, n,
         offset, sum);
  clReleaseMemObject(buffer);
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return 0;
}
