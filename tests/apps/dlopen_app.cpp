// SPDX-License-Identifier: MIT
/**
 * @file An app that does not link libOpenCL: it dlopen()s "libOpenCL.so.1" and dlsym()s every
 * entry point it uses, as plugin hosts and language bindings do. Symbol interposition by
 * LD_PRELOAD does not see these calls (dlsym on the loader's handle returns the loader's own
 * functions), so the shim has to catch them another way. The computation is a write -> kernel ->
 * read loop over a malloc'd state written and read each iteration and a new[] weight array
 * written once. Device selection goes through hetopt::selectClDevice with the dlsym'd query
 * functions. Links hetopt_app_util only (no ClEnv: that references the loader's symbols); a ctest
 * checks with readelf that libOpenCL is not NEEDED. --size is the size of each array.
 */
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/apps/app_util.h"

using namespace hetopt::apps;

namespace {

const char* kSource = R"CL(
#pragma OPENCL FP_CONTRACT OFF
__kernel void blend(__global float* x, __global const float* w, uint n) {
  size_t i = get_global_id(0);
  if (i < n) x[i] = x[i] * 0.5f + w[i] * 0.25f;
}
)CL";

// Every OpenCL function this app calls; each becomes a member of ClApi resolved by dlsym.
// One function per X(), as many to a line as fit (clang-format breaks such lists badly).
// clang-format off
#define DLOPEN_APP_CL_FUNCTIONS(X)                                                                 \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo) X(clCreateContext) \
  X(clReleaseContext) X(clCreateCommandQueueWithProperties) X(clReleaseCommandQueue)               \
  X(clCreateBuffer) X(clReleaseMemObject) X(clCreateProgramWithSource) X(clBuildProgram)           \
  X(clGetProgramBuildInfo) X(clReleaseProgram) X(clCreateKernel) X(clReleaseKernel)                \
  X(clSetKernelArg) X(clEnqueueWriteBuffer) X(clEnqueueReadBuffer) X(clEnqueueNDRangeKernel)       \
  X(clEnqueueMapBuffer) X(clEnqueueUnmapMemObject) X(clFinish)
// clang-format on

struct ClApi {
#define DLOPEN_APP_MEMBER(name) decltype(&::name) name = nullptr;
  DLOPEN_APP_CL_FUNCTIONS(DLOPEN_APP_MEMBER)
#undef DLOPEN_APP_MEMBER
};

/// Loads the ICD loader by its soname and resolves every function; exits 2 when one is missing.
ClApi loadOpenCl() {
  void* lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen(libOpenCL.so.1) failed: %s\n", dlerror());
    exit(2);
  }
  ClApi api;
#define DLOPEN_APP_RESOLVE(name)                                     \
  api.name = reinterpret_cast<decltype(&::name)>(dlsym(lib, #name)); \
  if (!api.name) {                                                   \
    fprintf(stderr, "dlsym(%s) failed: %s\n", #name, dlerror());     \
    exit(2);                                                         \
  }
  DLOPEN_APP_CL_FUNCTIONS(DLOPEN_APP_RESOLVE)
#undef DLOPEN_APP_RESOLVE
  return api;  // the handle stays open for the life of the process, like a plugin's
}

/// The --pinned variant's host memory: a mapped CL_MEM_ALLOC_HOST_PTR buffer, through the api.
class DlPinned {
 public:
  DlPinned(const ClApi& api, cl_context ctx, cl_command_queue q, size_t bytes)
      : m_api(api), m_queue(q) {
    cl_int err = CL_SUCCESS;
    m_buffer =
        api.clCreateBuffer(ctx, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, bytes, nullptr, &err);
    APP_CL(err);
    m_ptr = static_cast<float*>(api.clEnqueueMapBuffer(
        q, m_buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, nullptr, nullptr, &err));
    APP_CL(err);
  }
  ~DlPinned() {
    APP_CL(m_api.clEnqueueUnmapMemObject(m_queue, m_buffer, m_ptr, 0, nullptr, nullptr));
    APP_CL(m_api.clFinish(m_queue));
    APP_CL(m_api.clReleaseMemObject(m_buffer));
  }
  DlPinned(const DlPinned&) = delete;
  DlPinned& operator=(const DlPinned&) = delete;
  float* data() const { return m_ptr; }

 private:
  const ClApi& m_api;
  cl_command_queue m_queue;
  cl_mem m_buffer = nullptr;
  float* m_ptr = nullptr;
};

cl_program buildProgram(const ClApi& api, cl_context ctx, cl_device_id dev) {
  cl_int err = CL_SUCCESS;
  cl_program p = api.clCreateProgramWithSource(ctx, 1, &kSource, nullptr, &err);
  APP_CL(err);
  err = api.clBuildProgram(p, 1, &dev, "", nullptr, nullptr);
  if (err != CL_SUCCESS) {
    size_t len = 0;
    api.clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &len);
    std::string log(len, '\0');
    api.clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, len, log.data(), nullptr);
    fprintf(stderr, "build failed:\n%s\n", log.c_str());
    APP_CL(err);
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parseOptions(argc, argv, 1 << 20, 10);
  const size_t n = std::max<size_t>(opt.sizeBytes / sizeof(float), 1);
  const size_t bytes = n * sizeof(float);

  const ClApi api = loadOpenCl();
  hetopt::ClQueryFunctions query{api.clGetPlatformIDs, api.clGetPlatformInfo, api.clGetDeviceIDs,
                                 api.clGetDeviceInfo};
  hetopt::ClDevice device;
  std::string error;
  if (!hetopt::selectClDevice("", &device, &error, query)) {
    fprintf(stderr, "no OpenCL device: %s\n", error.c_str());
    return 2;
  }
  printDevice(device);

  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(device.platform), 0};
  cl_context ctx = api.clCreateContext(props, 1, &device.device, nullptr, nullptr, &err);
  APP_CL(err);
  cl_command_queue q = api.clCreateCommandQueueWithProperties(ctx, device.device, nullptr, &err);
  APP_CL(err);
  double start = nowMs();

  DlPinned* pinX = opt.pinned ? new DlPinned(api, ctx, q, bytes) : nullptr;
  DlPinned* pinW = opt.pinned ? new DlPinned(api, ctx, q, bytes) : nullptr;
  float* x = pinX ? pinX->data() : static_cast<float*>(malloc(bytes));  // hetopt:transfer
  float* wNew = opt.pinned ? nullptr : new float[n];                    // hetopt:transfer
  float* w = pinW ? pinW->data() : wNew;
  APP_CHECK(x != nullptr);
  fillPattern(x, n, 71);
  fillPattern(w, n, 72);
  std::vector<float> ref(x, x + n);  // hetopt:host-only

  cl_mem dX = api.clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  APP_CL(err);
  cl_mem dW = api.clCreateBuffer(ctx, CL_MEM_READ_ONLY, bytes, nullptr, &err);
  APP_CL(err);
  cl_program prog = buildProgram(api, ctx, device.device);
  cl_kernel k = api.clCreateKernel(prog, "blend", &err);
  APP_CL(err);
  const cl_uint count = static_cast<cl_uint>(n);
  APP_CL(api.clSetKernelArg(k, 0, sizeof(cl_mem), &dX));
  APP_CL(api.clSetKernelArg(k, 1, sizeof(cl_mem), &dW));
  APP_CL(api.clSetKernelArg(k, 2, sizeof(cl_uint), &count));
  const size_t global = roundUp(n, 64);

  APP_CL(api.clEnqueueWriteBuffer(q, dW, CL_FALSE, 0, bytes, w, 0, nullptr, nullptr));
  for (int it = 0; it < opt.iters; ++it) {
    APP_CL(api.clEnqueueWriteBuffer(q, dX, CL_FALSE, 0, bytes, x, 0, nullptr, nullptr));
    APP_CL(api.clEnqueueNDRangeKernel(q, k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
    APP_CL(api.clEnqueueReadBuffer(q, dX, CL_TRUE, 0, bytes, x, 0, nullptr, nullptr));
    x[it % n] += 1.0f;  // host work between iterations: every write carries new data
  }
  reportElapsed(start);

  for (int it = 0; it < opt.iters; ++it) {
    for (size_t i = 0; i < n; ++i) ref[i] = ref[i] * 0.5f + w[i] * 0.25f;
    ref[it % n] += 1.0f;
  }
  APP_CHECK(nearlyEqual(x, ref.data(), n));
  printResult("x", n, x, bytes);

  APP_CL(api.clReleaseKernel(k));
  APP_CL(api.clReleaseProgram(prog));
  APP_CL(api.clReleaseMemObject(dX));
  APP_CL(api.clReleaseMemObject(dW));
  delete pinX;
  delete pinW;
  if (!opt.pinned) free(x);
  delete[] wNew;
  APP_CL(api.clReleaseCommandQueue(q));
  APP_CL(api.clReleaseContext(ctx));
  return 0;
}
