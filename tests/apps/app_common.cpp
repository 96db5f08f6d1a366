// SPDX-License-Identifier: MIT
/** @file Test-app harness; see app_common.h for the contract. */
#include "tests/apps/app_common.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hetopt::apps {

void failCl(cl_int status, const char* expr, const char* file, int line) {
  fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", file, line, expr, clErrorName(status), status);
  exit(2);
}

void failCheck(const char* what, const char* file, int line) {
  fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
  exit(1);
}

size_t parseSize(const std::string& s) {
  if (s.empty()) return 0;
  char* end = nullptr;
  unsigned long long v = strtoull(s.c_str(), &end, 10);
  if (end == s.c_str()) return 0;
  switch (*end) {
    case 'k': case 'K': v <<= 10; ++end; break;
    case 'm': case 'M': v <<= 20; ++end; break;
    case 'g': case 'G': v <<= 30; ++end; break;
    default: break;
  }
  if (*end == 'i') ++end;  // accept KiB/MiB spelled "Ki"/"Mi"
  if (*end == 'B' || *end == 'b') ++end;
  return *end == '\0' ? static_cast<size_t>(v) : 0;
}

Options parseOptions(int argc, char** argv, size_t defaultSize, int defaultIters) {
  Options o;
  o.sizeBytes = defaultSize;
  o.iters = defaultIters;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> std::string {
      if (i + 1 >= argc) {
        fprintf(stderr, "%s needs a value\n", name);
        exit(2);
      }
      return argv[++i];
    };
    if (a == "--size") {
      o.sizeBytes = parseSize(value("--size"));
      if (o.sizeBytes == 0) {
        fprintf(stderr, "bad --size\n");
        exit(2);
      }
    } else if (a == "--iters") {
      o.iters = atoi(value("--iters").c_str());
      if (o.iters <= 0) {
        fprintf(stderr, "bad --iters\n");
        exit(2);
      }
    } else if (a == "--pinned") {
      o.pinned = true;
    } else if (a == "--help" || a == "-h") {
      printf("usage: %s [--size BYTES[K|M|G]] [--iters N] [--pinned]\n", argv[0]);
      exit(0);
    } else {
      o.rest.push_back(a);
    }
  }
  return o;
}

ClEnv::ClEnv(int numQueues, cl_command_queue_properties props) {
  std::string error;
  if (!selectClDevice("", &m_device, &error)) {
    fprintf(stderr, "no OpenCL device: %s\n", error.c_str());
    exit(2);
  }
  printf("device: %s / %s\n", m_device.platformName.c_str(), m_device.deviceName.c_str());
  fflush(stdout);
  cl_int err = CL_SUCCESS;
  cl_context_properties cprops[] = {CL_CONTEXT_PLATFORM,
                                    reinterpret_cast<cl_context_properties>(m_device.platform), 0};
  m_context = clCreateContext(cprops, 1, &m_device.device, nullptr, nullptr, &err);
  APP_CL(err);
  for (int i = 0; i < numQueues; ++i) {
    cl_queue_properties qprops[] = {CL_QUEUE_PROPERTIES, props, 0};
    cl_command_queue q =
        clCreateCommandQueueWithProperties(m_context, m_device.device, props ? qprops : nullptr, &err);
    APP_CL(err);
    m_queues.push_back(q);
  }
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

PinnedHostMemory::PinnedHostMemory(const ClEnv& env, size_t bytes) : m_env(env), m_bytes(bytes) {
  cl_int err = CL_SUCCESS;
  m_buffer = clCreateBuffer(env.context(), CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, bytes,
                            nullptr, &err);
  APP_CL(err);
  m_ptr = clEnqueueMapBuffer(env.queue(0), m_buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes,
                             0, nullptr, nullptr, &err);
  APP_CL(err);
}

PinnedHostMemory::~PinnedHostMemory() {
  cl_event done = nullptr;
  clEnqueueUnmapMemObject(m_env.queue(0), m_buffer, m_ptr, 0, nullptr, &done);
  if (done) {
    clWaitForEvents(1, &done);
    clReleaseEvent(done);
  }
  clReleaseMemObject(m_buffer);
}

void fillPattern(float* data, size_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    data[i] = static_cast<float>((x >> 8) % 2000) / 100.0f - 10.0f + 0.25f;  // [-9.75, 10.24]
  }
}

void fillPattern(int32_t* data, size_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 777u;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    data[i] = static_cast<int32_t>((x >> 4) % 100000) - 50000 + 1;
  }
}

uint64_t checksum(const void* data, size_t bytes) {
  // FNV-1a over the bytes: order-sensitive and identical wherever the data is identical.
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

bool nearlyEqual(const float* got, const float* want, size_t n, float relTol) {
  for (size_t i = 0; i < n; ++i) {
    float d = std::fabs(got[i] - want[i]);
    float scale = std::fmax(1.0f, std::fabs(want[i]));
    if (!(d <= relTol * scale)) {
      fprintf(stderr, "mismatch at %zu: got %.8g want %.8g\n", i, got[i], want[i]);
      return false;
    }
  }
  return true;
}

double nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

void reportElapsed(double startMs) { fprintf(stderr, "elapsed_ms=%.3f\n", nowMs() - startMs); }

}  // namespace hetopt::apps
