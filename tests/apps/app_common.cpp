// SPDX-License-Identifier: MIT
/** @file Test-app harness; see app_common.h for the contract. */
#include "tests/apps/app_common.h"

#include <cstdio>
#include <cstdlib>

namespace hetopt::apps {

namespace {
// Start-up and exit phases, for the benchmarks' split of whole-process time
// (scripts/bench/measure_lib.sh sets APP_PHASES=1): when OpenCL set-up began (Unix ms; the script
// knows when it started the process), how long it took, and when the program began to exit (the
// rest is the exit handlers' and the kernel's teardown).
bool reportPhases() {
  static const bool on = getenv("APP_PHASES") && *getenv("APP_PHASES") == '1';
  return on;
}
void reportExitStart() { fprintf(stderr, "exit_unix_ms=%.3f\n", unixMs()); }
}  // namespace

ClEnv::ClEnv(int numQueues, cl_command_queue_properties props) {
  const double setupStart = nowMs();
  if (reportPhases()) fprintf(stderr, "setup_unix_ms=%.3f\n", unixMs());
  std::string error;
  if (!selectClDevice("", &m_device, &error)) {
    fprintf(stderr, "no OpenCL device: %s\n", error.c_str());
    exit(2);
  }
  printDevice(m_device);
  cl_int err = CL_SUCCESS;
  cl_context_properties cprops[] = {CL_CONTEXT_PLATFORM,
                                    reinterpret_cast<cl_context_properties>(m_device.platform), 0};
  m_context = clCreateContext(cprops, 1, &m_device.device, nullptr, nullptr, &err);
  APP_CL(err);
  for (int i = 0; i < numQueues; ++i) {
    cl_queue_properties qprops[] = {CL_QUEUE_PROPERTIES, props, 0};
    cl_command_queue q = clCreateCommandQueueWithProperties(m_context, m_device.device,
                                                            props ? qprops : nullptr, &err);
    APP_CL(err);
    m_queues.push_back(q);
  }
  if (!reportPhases()) return;
  fprintf(stderr, "setup_ms=%.3f\n", nowMs() - setupStart);
  static bool atExitSet = false;  // registered after the shim's: runs before its teardown
  if (!atExitSet) atExitSet = atexit(reportExitStart) == 0;
}

ClEnv::~ClEnv() {
  for (cl_command_queue q : m_queues) {
    clFinish(q);
    clReleaseCommandQueue(q);
  }
  if (m_context) clReleaseContext(m_context);
}

cl_program ClEnv::build(const char* source, const char* options) const {
  cl_int err = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(m_context, 1, &source, nullptr, &err);
  APP_CL(err);
  err = clBuildProgram(p, 1, &m_device.device, options, nullptr, nullptr);
  if (err != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(p, m_device.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string log(n, '\0');
    clGetProgramBuildInfo(p, m_device.device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
    fprintf(stderr, "build failed: %s\n%s\n", clErrorName(err), log.c_str());
    exit(2);
  }
  return p;
}

cl_kernel ClEnv::kernel(cl_program program, const char* name) const {
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(program, name, &err);
  APP_CL(err);
  return k;
}

cl_mem ClEnv::buffer(cl_mem_flags flags, size_t bytes, void* hostPtr) const {
  cl_int err = CL_SUCCESS;
  cl_mem b = clCreateBuffer(m_context, flags, bytes, hostPtr, &err);
  APP_CL(err);
  return b;
}

PinnedHostMemory::PinnedHostMemory(const ClEnv& env, size_t bytes, int queueIndex)
    : m_queue(env.queue(queueIndex)), m_bytes(bytes) {
  cl_int err = CL_SUCCESS;
  m_buffer = clCreateBuffer(env.context(), CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, bytes,
                            nullptr, &err);
  APP_CL(err);
  m_ptr = clEnqueueMapBuffer(m_queue, m_buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0,
                             nullptr, nullptr, &err);
  APP_CL(err);
}

PinnedHostMemory::~PinnedHostMemory() {
  cl_event done = nullptr;
  clEnqueueUnmapMemObject(m_queue, m_buffer, m_ptr, 0, nullptr, &done);
  if (done) {
    clWaitForEvents(1, &done);
    clReleaseEvent(done);
  }
  clReleaseMemObject(m_buffer);
}

std::unique_ptr<PinnedHostMemory> pinnedIf(bool pinned, const ClEnv& env, size_t bytes,
                                           int queueIndex) {
  if (!pinned) return nullptr;
  return std::make_unique<PinnedHostMemory>(env, bytes, queueIndex);
}

void enqueue1D(cl_command_queue queue, cl_kernel kernel, size_t n, cl_uint numWait,
               const cl_event* waitList, cl_event* done) {
  size_t global = roundUp(n, 64);
  APP_CL(
      clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, numWait, waitList, done));
}

}  // namespace hetopt::apps
