// SPDX-License-Identifier: MIT
/**
 * @file A fake OpenCL behind the shim's OpenCL lookup (g_below->nextFunction, shim/core/below.h),
 * as the ICD loader's tests run against test/driver_stub: one platform with one GPU, contexts,
 * queues, and host-pointer buffers whose maps hand out ordinary memory. It counts what the shim
 * asked of it, can be told to fail a context, and keeps the last context's error callback so a
 * test can fire it. Optimize mode's parts run against it without a driver.
 */
#pragma once
#include <CL/cl.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "api_table.h"
#include "shim/core/below.h"

namespace hetopt::shim::testing {

class FakeOpenCL {
 public:
  static inline const auto kPlatform = reinterpret_cast<cl_platform_id>(0x1000);
  static inline const auto kDevice = reinterpret_cast<cl_device_id>(0x2000);
  static inline const auto kOtherDevice = reinterpret_cast<cl_device_id>(0x2001);
  static constexpr cl_ulong kMaxAlloc = 1ull << 30;

  /// Installs the fake as what lies below (and resets its counters) for the object's lifetime.
  FakeOpenCL() {
    reset();
    s_below = *g_below;
    s_below.nextFunction = &lookup;
    m_saved = g_below;
    g_below = &s_below;
  }
  ~FakeOpenCL() { g_below = m_saved; }
  FakeOpenCL(const FakeOpenCL&) = delete;
  FakeOpenCL& operator=(const FakeOpenCL&) = delete;

  // What the shim asked, and knobs.
  static inline std::atomic<int> contextsMade{0}, retains{0}, releases{0}, queuesMade{0};
  static inline std::atomic<int> buffersLive{0};
  static inline std::atomic<bool> failContexts{false};
  static inline std::atomic<cl_device_type> deviceType{CL_DEVICE_TYPE_GPU};
  /// The error callback and its data of the last context made.
  static inline std::atomic<void(CL_CALLBACK*)(const char*, const void*, size_t, void*)> lastNotify{
      nullptr};
  static inline std::atomic<void*> lastNotifyData{nullptr};

  // Programs: made from source or a binary, built (taking buildMs, failing with failBuilds),
  // retained and released; the options of the last build.
  static inline std::atomic<int> programsMade{0}, programBuilds{0}, programRetains{0},
      programReleases{0};
  static inline std::atomic<int> buildMs{0};
  static inline std::atomic<bool> failBuilds{false};
  static inline std::string lastBuildOptions;  ///< under s_mutex

  /// A context handle as the program would have one from the driver.
  static cl_context programContext(int i) {
    return reinterpret_cast<cl_context>(&s_contexts[32 + i]);
  }

  static void reset() {
    contextsMade = retains = releases = queuesMade = 0;
    programsMade = programBuilds = programRetains = programReleases = buildMs = 0;
    failBuilds = false;
    failContexts = false;
    deviceType = CL_DEVICE_TYPE_GPU;
    lastNotify = nullptr;
    lastNotifyData = nullptr;
  }

 private:
  // No default member initializers: the static array of them below is defined inside the class,
  // where GCC cannot use them yet; `= {}` zeroes every field.
  struct Buffer {
    bool used;
    size_t size;
    void* host;  ///< USE_HOST_PTR's pointer, or memory for ALLOC_HOST_PTR's map
    bool owned;
  };

  static cl_int CL_API_CALL getPlatformIDs(cl_uint n, cl_platform_id* out, cl_uint* count) {
    if (out && n) out[0] = kPlatform;
    if (count) *count = 1;
    return CL_SUCCESS;
  }
  static cl_int info(const void* value, size_t bytes, size_t size, void* out, size_t* ret) {
    if (ret) *ret = bytes;
    if (out) {
      if (size < bytes) return CL_INVALID_VALUE;
      memcpy(out, value, bytes);
    }
    return CL_SUCCESS;
  }
  static cl_int CL_API_CALL getPlatformInfo(cl_platform_id, cl_platform_info p, size_t size,
                                            void* out, size_t* ret) {
    const char* s = p == CL_PLATFORM_NAME ? "Fake Platform" : "OpenCL 3.0 fake";
    return info(s, strlen(s) + 1, size, out, ret);
  }
  static cl_int CL_API_CALL getDeviceIDs(cl_platform_id, cl_device_type type, cl_uint n,
                                         cl_device_id* out, cl_uint* count) {
    const bool match =
        type == CL_DEVICE_TYPE_ALL || (type & deviceType.load()) || type == CL_DEVICE_TYPE_DEFAULT;
    if (!match) return CL_DEVICE_NOT_FOUND;
    if (out && n) out[0] = kDevice;
    if (count) *count = 1;
    return CL_SUCCESS;
  }
  static cl_int CL_API_CALL getDeviceInfo(cl_device_id, cl_device_info p, size_t size, void* out,
                                          size_t* ret) {
    switch (p) {
      case CL_DEVICE_NAME:
        return info("Fake GPU", 9, size, out, ret);
      case CL_DEVICE_VENDOR:
        return info("hetopt", 7, size, out, ret);
      case CL_DRIVER_VERSION:
        return info("1.0", 4, size, out, ret);
      case CL_DEVICE_TYPE: {
        const cl_device_type t = deviceType.load();
        return info(&t, sizeof t, size, out, ret);
      }
      case CL_DEVICE_GLOBAL_MEM_SIZE:
      case CL_DEVICE_MAX_MEM_ALLOC_SIZE:
        return info(&kMaxAlloc, sizeof kMaxAlloc, size, out, ret);
      case CL_DEVICE_HOST_UNIFIED_MEMORY: {
        const cl_bool no = CL_FALSE;
        return info(&no, sizeof no, size, out, ret);
      }
    }
    return CL_INVALID_VALUE;
  }
  static cl_context CL_API_CALL createContext(
      const cl_context_properties*, cl_uint n, const cl_device_id* devices,
      void(CL_CALLBACK* notify)(const char*, const void*, size_t, void*), void* data, cl_int* err) {
    if (failContexts || n != 1 || devices[0] != kDevice) {
      if (err) *err = CL_DEVICE_NOT_AVAILABLE;
      return nullptr;
    }
    lastNotify = notify;
    lastNotifyData = data;
    const int i = contextsMade.fetch_add(1);
    if (err) *err = CL_SUCCESS;
    return reinterpret_cast<cl_context>(&s_contexts[i % 32]);
  }
  static cl_int CL_API_CALL retainContext(cl_context) {
    ++retains;
    return CL_SUCCESS;
  }
  static cl_int CL_API_CALL releaseContext(cl_context) {
    ++releases;
    return CL_SUCCESS;
  }
  static cl_int CL_API_CALL getContextInfo(cl_context, cl_context_info p, size_t size, void* out,
                                           size_t* ret) {
    if (p != CL_CONTEXT_DEVICES) return CL_INVALID_VALUE;
    return info(&kDevice, sizeof kDevice, size, out, ret);
  }
  static cl_command_queue CL_API_CALL createQueue(cl_context, cl_device_id,
                                                  const cl_queue_properties*, cl_int* err) {
    ++queuesMade;
    if (err) *err = CL_SUCCESS;
    return reinterpret_cast<cl_command_queue>(0x3000);
  }
  static cl_int CL_API_CALL releaseQueue(cl_command_queue) { return CL_SUCCESS; }
  static cl_mem CL_API_CALL createBuffer(cl_context, cl_mem_flags flags, size_t size, void* host,
                                         cl_int* err) {
    std::lock_guard<std::mutex> lock(s_mutex);
    for (Buffer& b : s_buffers) {
      if (b.used) continue;
      b.used = true;
      b.size = size;
      b.owned = !(flags & CL_MEM_USE_HOST_PTR);
      b.host = b.owned ? std::aligned_alloc(4096, (size + 4095) & ~size_t{4095}) : host;
      ++buffersLive;
      if (err) *err = CL_SUCCESS;
      return reinterpret_cast<cl_mem>(&b);
    }
    if (err) *err = CL_OUT_OF_RESOURCES;
    return nullptr;
  }
  static cl_int CL_API_CALL releaseMem(cl_mem m) {
    std::lock_guard<std::mutex> lock(s_mutex);
    auto* b = reinterpret_cast<Buffer*>(m);
    if (b->owned) std::free(b->host);
    *b = Buffer{};
    --buffersLive;
    return CL_SUCCESS;
  }
  static void* CL_API_CALL mapBuffer(cl_command_queue, cl_mem m, cl_bool, cl_map_flags,
                                     size_t offset, size_t, cl_uint, const cl_event*, cl_event*,
                                     cl_int* err) {
    if (err) *err = CL_SUCCESS;
    return static_cast<char*>(reinterpret_cast<Buffer*>(m)->host) + offset;
  }
  static cl_int CL_API_CALL unmap(cl_command_queue, cl_mem, void*, cl_uint, const cl_event*,
                                  cl_event*) {
    return CL_SUCCESS;
  }
  static cl_int CL_API_CALL finish(cl_command_queue) { return CL_SUCCESS; }

  static cl_program CL_API_CALL createProgram(cl_context, cl_uint count, const char** strings,
                                              const size_t*, cl_int* err) {
    if (!count || !strings) {
      if (err) *err = CL_INVALID_VALUE;
      return nullptr;
    }
    const int i = programsMade.fetch_add(1);
    if (err) *err = CL_SUCCESS;
    return reinterpret_cast<cl_program>(&s_programs[i % 64]);
  }
  static cl_program CL_API_CALL createProgramWithBinary(cl_context, cl_uint n, const cl_device_id*,
                                                        const size_t* lengths,
                                                        const unsigned char** binaries,
                                                        cl_int* status, cl_int* err) {
    if (n != 1 || !lengths || !binaries || !binaries[0] || !lengths[0]) {
      if (err) *err = CL_INVALID_VALUE;
      return nullptr;
    }
    if (status) *status = CL_SUCCESS;
    const int i = programsMade.fetch_add(1);
    if (err) *err = CL_SUCCESS;
    return reinterpret_cast<cl_program>(&s_programs[i % 64]);
  }
  static cl_int CL_API_CALL buildProgram(cl_program, cl_uint, const cl_device_id*,
                                         const char* options,
                                         void(CL_CALLBACK* notify)(cl_program, void*), void*) {
    if (const int ms = buildMs.load()) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    {
      std::lock_guard<std::mutex> lock(s_mutex);
      lastBuildOptions = options ? options : "";
    }
    ++programBuilds;
    (void)notify;
    return failBuilds ? CL_BUILD_PROGRAM_FAILURE : CL_SUCCESS;
  }
  static cl_int CL_API_CALL retainProgram(cl_program) {
    ++programRetains;
    return CL_SUCCESS;
  }
  static cl_int CL_API_CALL releaseProgram(cl_program) {
    ++programReleases;
    return CL_SUCCESS;
  }

  static void* lookup(api::ApiId id) {
    using api::ApiId;
    switch (id) {
      case ApiId::clGetPlatformIDs:
        return reinterpret_cast<void*>(&getPlatformIDs);
      case ApiId::clGetPlatformInfo:
        return reinterpret_cast<void*>(&getPlatformInfo);
      case ApiId::clGetDeviceIDs:
        return reinterpret_cast<void*>(&getDeviceIDs);
      case ApiId::clGetDeviceInfo:
        return reinterpret_cast<void*>(&getDeviceInfo);
      case ApiId::clCreateContext:
        return reinterpret_cast<void*>(&createContext);
      case ApiId::clRetainContext:
        return reinterpret_cast<void*>(&retainContext);
      case ApiId::clReleaseContext:
        return reinterpret_cast<void*>(&releaseContext);
      case ApiId::clGetContextInfo:
        return reinterpret_cast<void*>(&getContextInfo);
      case ApiId::clCreateCommandQueueWithProperties:
        return reinterpret_cast<void*>(&createQueue);
      case ApiId::clReleaseCommandQueue:
        return reinterpret_cast<void*>(&releaseQueue);
      case ApiId::clCreateBuffer:
        return reinterpret_cast<void*>(&createBuffer);
      case ApiId::clReleaseMemObject:
        return reinterpret_cast<void*>(&releaseMem);
      case ApiId::clEnqueueMapBuffer:
        return reinterpret_cast<void*>(&mapBuffer);
      case ApiId::clEnqueueUnmapMemObject:
        return reinterpret_cast<void*>(&unmap);
      case ApiId::clFinish:
        return reinterpret_cast<void*>(&finish);
      case ApiId::clCreateProgramWithSource:
        return reinterpret_cast<void*>(&createProgram);
      case ApiId::clCreateProgramWithBinary:
        return reinterpret_cast<void*>(&createProgramWithBinary);
      case ApiId::clBuildProgram:
        return reinterpret_cast<void*>(&buildProgram);
      case ApiId::clRetainProgram:
        return reinterpret_cast<void*>(&retainProgram);
      case ApiId::clReleaseProgram:
        return reinterpret_cast<void*>(&releaseProgram);
      default:
        return nullptr;
    }
  }

  static inline Below s_below{};
  static inline char s_contexts[64] = {};
  static inline char s_programs[64] = {};
  static inline Buffer s_buffers[64] = {};
  static inline std::mutex s_mutex;
  const Below* m_saved = nullptr;
};

}  // namespace hetopt::shim::testing
