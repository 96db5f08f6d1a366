// SPDX-License-Identifier: MIT
/**
 * @file A fault-injecting OpenCL layer for the tests (not part of hetopt): loaded through
 * OPENCL_LAYERS, it forwards every call to the next layer or driver and makes the calls named in
 * FAULTCL fail the way a driver out of resources would. FAULTCL is a comma-separated list of:
 *   host_buffer  clCreateBuffer with CL_MEM_ALLOC_HOST_PTR or CL_MEM_USE_HOST_PTR:
 * CL_OUT_OF_RESOURCES map          clEnqueueMapBuffer: CL_MAP_FAILURE context      clCreateContext
 * and clCreateContextFromType: CL_OUT_OF_HOST_MEMORY Each injected failure prints one "faultcl:
 * <call> -> <error>" line on stderr, so a test can count them: the program's own failures plus
 * those of whoever else calls (hetopt's pool).
 *
 * A discrete GPU's costs, for the closed loop's tests on PoCL (where pinning changes nothing):
 *   FAULTCL_PAGEABLE_US_PER_MIB=<us>  clEnqueueReadBuffer/WriteBuffer from host memory no live
 *                                     CL_MEM_USE_HOST_PTR buffer covers (pageable) first sleep
 *                                     that long per MiB moved
 *   FAULTCL_REGISTER_US_PER_MIB=<us>  clCreateBuffer(CL_MEM_USE_HOST_PTR) sleeps that long per MiB
 *   FAULTCL=host_buffer_crash         the first clCreateBuffer with CL_MEM_ALLOC_HOST_PTR or
 *                                     CL_MEM_USE_HOST_PTR kills the process (SIGKILL): a program
 *                                     that makes none natively dies only where hetopt pins
 *
 * FAULTCL_TIMER=<ns> adds what PoCL lacks instead: clGetDeviceAndHostTimer and clGetHostTimer
 * (OpenCL 2.1). The device time is PoCL's profiling clock (CLOCK_MONOTONIC_RAW, as its
 * CL_PROFILING_COMMAND_* stamps); the host time is CLOCK_MONOTONIC plus <ns>, a clock that is
 * neither the device's nor a caller's own, so a caller must place it by reading it between two of
 * its own clock reads (tests/analyzer/check_timeline.py, timer mode).
 */
#include <CL/cl.h>
#include <CL/cl_icd.h>
#include <CL/cl_layer.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <vector>

namespace {

_cl_icd_dispatch g_next;   // the layer (or driver) below this one
_cl_icd_dispatch g_table;  // what the loader calls: g_next with the faulty entries replaced

bool faulty(const char* what) {
  const char* list = getenv("FAULTCL");
  if (!list) return false;
  size_t n = strlen(what);
  for (const char* p = list; *p;) {
    const char* end = strchr(p, ',');
    size_t len = end ? static_cast<size_t>(end - p) : strlen(p);
    if (len == n && strncmp(p, what, n) == 0) return true;
    if (!end) break;
    p = end + 1;
  }
  return false;
}

template <typename T>
T inject(const char* call, cl_int error, cl_int* errcodeRet, T failed) {
  fprintf(stderr, "faultcl: %s -> %d\n", call, error);
  if (errcodeRet) *errcodeRet = error;
  return failed;
}

// ---- a discrete GPU's costs ----

uint64_t g_pageableUsPerMiB, g_registerUsPerMiB;

struct HostBuffer {
  cl_mem mem;
  uintptr_t begin, end;
};
std::mutex g_hostBuffersMutex;
std::vector<HostBuffer> g_hostBuffers;  // live CL_MEM_USE_HOST_PTR buffers

void sleepFor(uint64_t usPerMiB, size_t bytes) {
  const uint64_t us =
      static_cast<uint64_t>(static_cast<double>(usPerMiB) * static_cast<double>(bytes) / (1 << 20));
  if (us) usleep(static_cast<useconds_t>(us));
}

bool covered(const void* ptr, size_t size) {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(g_hostBuffersMutex);
  for (const HostBuffer& b : g_hostBuffers)
    if (p >= b.begin && p + size <= b.end) return true;
  return false;
}

cl_mem CL_API_CALL createBuffer(cl_context context, cl_mem_flags flags, size_t size, void* hostPtr,
                                cl_int* errcodeRet) {
  if ((flags & (CL_MEM_ALLOC_HOST_PTR | CL_MEM_USE_HOST_PTR)) && faulty("host_buffer"))
    return inject("clCreateBuffer", CL_OUT_OF_RESOURCES, errcodeRet, cl_mem{});
  if ((flags & (CL_MEM_ALLOC_HOST_PTR | CL_MEM_USE_HOST_PTR)) && faulty("host_buffer_crash")) {
    // SIGKILL: the drivers' own crash handlers (LLVM's in PoCL) cannot keep the process alive.
    fprintf(stderr, "faultcl: clCreateBuffer -> SIGKILL\n");
    kill(getpid(), SIGKILL);
    for (;;) pause();
  }
  if (flags & CL_MEM_USE_HOST_PTR) sleepFor(g_registerUsPerMiB, size);
  cl_int err = CL_SUCCESS;
  cl_mem mem = g_next.clCreateBuffer(context, flags, size, hostPtr, &err);
  if (errcodeRet) *errcodeRet = err;
  if (mem && (flags & CL_MEM_USE_HOST_PTR) && g_pageableUsPerMiB) {
    const auto begin = reinterpret_cast<uintptr_t>(hostPtr);
    std::lock_guard<std::mutex> lock(g_hostBuffersMutex);
    g_hostBuffers.push_back({mem, begin, begin + size});
  }
  return mem;
}

cl_int CL_API_CALL releaseMemObject(cl_mem mem) {
  cl_uint refs = 0;
  if (g_pageableUsPerMiB &&
      g_next.clGetMemObjectInfo(mem, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, nullptr) ==
          CL_SUCCESS &&
      refs <= 1) {
    std::lock_guard<std::mutex> lock(g_hostBuffersMutex);
    g_hostBuffers.erase(std::remove_if(g_hostBuffers.begin(), g_hostBuffers.end(),
                                       [&](const HostBuffer& b) { return b.mem == mem; }),
                        g_hostBuffers.end());
  }
  return g_next.clReleaseMemObject(mem);
}

cl_int CL_API_CALL enqueueWriteBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                                      size_t offset, size_t size, const void* ptr,
                                      cl_uint numEvents, const cl_event* waitList,
                                      cl_event* event) {
  if (!covered(ptr, size)) sleepFor(g_pageableUsPerMiB, size);
  return g_next.clEnqueueWriteBuffer(queue, buffer, blocking, offset, size, ptr, numEvents,
                                     waitList, event);
}

cl_int CL_API_CALL enqueueReadBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                                     size_t offset, size_t size, void* ptr, cl_uint numEvents,
                                     const cl_event* waitList, cl_event* event) {
  if (!covered(ptr, size)) sleepFor(g_pageableUsPerMiB, size);
  return g_next.clEnqueueReadBuffer(queue, buffer, blocking, offset, size, ptr, numEvents, waitList,
                                    event);
}

void* CL_API_CALL enqueueMapBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                                   cl_map_flags flags, size_t offset, size_t size,
                                   cl_uint numEvents, const cl_event* waitList, cl_event* event,
                                   cl_int* errcodeRet) {
  if (faulty("map")) return inject("clEnqueueMapBuffer", CL_MAP_FAILURE, errcodeRet, nullptr);
  return g_next.clEnqueueMapBuffer(queue, buffer, blocking, flags, offset, size, numEvents,
                                   waitList, event, errcodeRet);
}

cl_context CL_API_CALL createContext(const cl_context_properties* props, cl_uint numDevices,
                                     const cl_device_id* devices,
                                     void(CL_CALLBACK* notify)(const char*, const void*, size_t,
                                                               void*),
                                     void* userData, cl_int* errcodeRet) {
  if (faulty("context"))
    return inject("clCreateContext", CL_OUT_OF_HOST_MEMORY, errcodeRet, cl_context{});
  return g_next.clCreateContext(props, numDevices, devices, notify, userData, errcodeRet);
}

cl_context CL_API_CALL createContextFromType(const cl_context_properties* props,
                                             cl_device_type type,
                                             void(CL_CALLBACK* notify)(const char*, const void*,
                                                                       size_t, void*),
                                             void* userData, cl_int* errcodeRet) {
  if (faulty("context"))
    return inject("clCreateContextFromType", CL_OUT_OF_HOST_MEMORY, errcodeRet, cl_context{});
  return g_next.clCreateContextFromType(props, type, notify, userData, errcodeRet);
}

uint64_t g_hostTimerOffset;  // FAULTCL_TIMER

cl_ulong clockNs(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<cl_ulong>(ts.tv_sec) * 1000000000u + static_cast<cl_ulong>(ts.tv_nsec);
}

cl_int CL_API_CALL hostTimer(cl_device_id device, cl_ulong* hostNs) {
  if (!device) return CL_INVALID_DEVICE;
  if (!hostNs) return CL_INVALID_VALUE;
  *hostNs = clockNs(CLOCK_MONOTONIC) + g_hostTimerOffset;
  return CL_SUCCESS;
}

cl_int CL_API_CALL deviceAndHostTimer(cl_device_id device, cl_ulong* deviceNs, cl_ulong* hostNs) {
  if (!device) return CL_INVALID_DEVICE;
  if (!deviceNs || !hostNs) return CL_INVALID_VALUE;
  *deviceNs = clockNs(CLOCK_MONOTONIC_RAW);
  return hostTimer(device, hostNs);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) cl_int CL_API_CALL
clGetLayerInfo(cl_layer_info param, size_t size, void* value, size_t* sizeRet) {
  if (param != CL_LAYER_API_VERSION) return CL_INVALID_VALUE;
  cl_layer_api_version version = CL_LAYER_API_VERSION_100;
  if (value) {
    if (size < sizeof version) return CL_INVALID_VALUE;
    memcpy(value, &version, sizeof version);
  }
  if (sizeRet) *sizeRet = sizeof version;
  return CL_SUCCESS;
}

extern "C" __attribute__((visibility("default"))) cl_int CL_API_CALL
clInitLayer(cl_uint numEntries, const _cl_icd_dispatch* target, cl_uint* numEntriesRet,
            const _cl_icd_dispatch** layerDispatch) {
  constexpr cl_uint kEntries = sizeof(_cl_icd_dispatch) / sizeof(void*);
  if (!target || !numEntriesRet || !layerDispatch) return CL_INVALID_VALUE;
  memcpy(&g_next, target, std::min(numEntries, kEntries) * sizeof(void*));
  g_table = g_next;
  g_table.clCreateBuffer = createBuffer;
  g_table.clEnqueueMapBuffer = enqueueMapBuffer;
  g_table.clCreateContext = createContext;
  g_table.clCreateContextFromType = createContextFromType;
  if (const char* us = getenv("FAULTCL_PAGEABLE_US_PER_MIB")) {
    g_pageableUsPerMiB = strtoull(us, nullptr, 10);
    g_table.clReleaseMemObject = releaseMemObject;
    g_table.clEnqueueWriteBuffer = enqueueWriteBuffer;
    g_table.clEnqueueReadBuffer = enqueueReadBuffer;
  }
  if (const char* us = getenv("FAULTCL_REGISTER_US_PER_MIB"))
    g_registerUsPerMiB = strtoull(us, nullptr, 10);
  if (const char* offset = getenv("FAULTCL_TIMER")) {
    g_hostTimerOffset = strtoull(offset, nullptr, 10);
    g_table.clGetDeviceAndHostTimer = deviceAndHostTimer;
    g_table.clGetHostTimer = hostTimer;
  }
  *layerDispatch = &g_table;
  *numEntriesRet = kEntries;
  return CL_SUCCESS;
}
