// SPDX-License-Identifier: MIT
/** @file Which context optimize mode pins in; see context_choice.h.
 * The early context and its hand-out, the program's context offered, the choice awaited. */
#include "shim/core/context_choice.h"

#include "common/clock.h"
#include "common/log.h"

namespace hetopt::shim {

PolicyEnv policyEnvIn(cl_context context) {
  PolicyEnv env;
  env.cl = {realClFunction<decltype(&clCreateBuffer)>(api::ApiId::clCreateBuffer),
            realClFunction<decltype(&clReleaseMemObject)>(api::ApiId::clReleaseMemObject),
            realClFunction<decltype(&clEnqueueMapBuffer)>(api::ApiId::clEnqueueMapBuffer),
            realClFunction<decltype(&clEnqueueUnmapMemObject)>(api::ApiId::clEnqueueUnmapMemObject),
            realClFunction<decltype(&clFinish)>(api::ApiId::clFinish)};
  env.context = context;
  return env;
}

void ContextChoice::configure(bool ownOnly, bool early) {
  m_ownOnly = ownOnly;
  m_early = early ? Early::Making : Early::Failed;  // Failed: nothing to wait for
}

bool ContextChoice::earlyWanted() {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_early == Early::Making;
}

void ContextChoice::setDevice(cl_platform_id platform, cl_device_id device) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_platform = platform;
  m_device = device;
}

// ---- the early context ----------------------------------------------------------------------

void CL_CALLBACK ContextChoice::earlyNotify(const char* info, const void* data, size_t size,
                                            void* self) {
  auto* me = static_cast<ContextChoice*>(self);
  if (auto fn = me->m_programNotify.load(std::memory_order_acquire))
    fn(info, data, size, me->m_programNotifyData.load(std::memory_order_acquire));
}

cl_context ContextChoice::makeEarly(decltype(&clCreateContext) createContext) {
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(m_platform), 0};
  cl_int err = CL_SUCCESS;
  // The program's error callback, once it has the context, through our own.
  cl_context context = createContext(props, 1, &m_device, &ContextChoice::earlyNotify, this, &err);
  auto retain = realClFunction<decltype(&clRetainContext)>(api::ApiId::clRetainContext);
  // Our reference beside the program's: the pinned memory lives as long as the process.
  const bool made = err == CL_SUCCESS && context && retain && retain(context) == CL_SUCCESS;
  if (!made)
    debug("early context not made (OpenCL status %d); pinning waits for the program's", err);
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_early = made ? Early::Made : Early::Failed;
    if (made) {
      m_earlyContext = context;
      if (!m_programContext) m_programContext = context;
    }
  }
  m_changed.notify_all();
  return made ? context : nullptr;
}

void ContextChoice::abandonEarly() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_early != Early::Making) return;
    m_early = Early::Failed;
  }
  m_changed.notify_all();
}

bool ContextChoice::propertiesMatch(const cl_context_properties* props, bool nullOk) const {
  if (!props) return nullOk;
  bool platform = false;
  for (const cl_context_properties* p = props; *p; p += 2) {
    if (p[0] != CL_CONTEXT_PLATFORM || platform) return false;  // anything else: not ours to give
    if (reinterpret_cast<cl_platform_id>(p[1]) != m_platform) return false;
    platform = true;
  }
  return platform;
}

void ContextChoice::handOut(CallRecord& call) {
  {
    std::unique_lock<std::mutex> lock(m_mutex);
    if (m_earlyHandedOut) return;
    if (m_early == Early::Making) {
      const double start = monotonicMs();
      m_changed.wait(lock, [this] { return m_early != Early::Making; });
      m_handOutWaitMs.store(monotonicMs() - start, std::memory_order_relaxed);
    }
    if (m_early != Early::Made) return;
  }
  // The very context the program asks for: this device alone, this platform, nothing more.
  const auto* props =
      reinterpret_cast<const cl_context_properties*>(static_cast<uintptr_t>(call.args[0]));
  bool match = false;
  uint64_t notify = 0, data = 0;
  if (call.id == api::ApiId::clCreateContext) {
    const auto* devices =
        reinterpret_cast<const cl_device_id*>(static_cast<uintptr_t>(call.args[2]));
    match = call.args[1] == 1 && devices && devices[0] == m_device && propertiesMatch(props, true);
    notify = call.args[3], data = call.args[4];
  } else if (auto ids = realClFunction<decltype(&clGetDeviceIDs)>(api::ApiId::clGetDeviceIDs)) {
    cl_device_id found[2] = {};
    cl_uint n = 0;
    match =
        propertiesMatch(props, false) &&
        ids(m_platform, static_cast<cl_device_type>(call.args[1]), 2, found, &n) == CL_SUCCESS &&
        n == 1 && found[0] == m_device;
    notify = call.args[2], data = call.args[3];
  }
  if (!match) return;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_earlyHandedOut) return;  // another thread's call took it meanwhile
    m_earlyHandedOut = true;
  }
  m_programNotifyData.store(reinterpret_cast<void*>(static_cast<uintptr_t>(data)),
                            std::memory_order_release);
  m_programNotify.store(reinterpret_cast<Notify>(static_cast<uintptr_t>(notify)),
                        std::memory_order_release);
  call.result = reinterpret_cast<uintptr_t>(m_earlyContext);
  call.skip = true;
  if (auto* err = reinterpret_cast<cl_int*>(static_cast<uintptr_t>(call.args[call.numArgs - 1])))
    *err = CL_SUCCESS;
  debug("%s answered with the early context", api::apiInfo(call.id).name);
}

// ---- the program's context and the choice -----------------------------------------------------

cl_context ContextChoice::offer(const CallRecord& call) {
  const auto context = reinterpret_cast<cl_context>(static_cast<uintptr_t>(call.result));
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_ownOnly || m_chosen || m_programContext || !m_device) return nullptr;
  }
  // Does it hold the plan's device? clCreateContext names its devices; FromType is asked.
  bool holds = false;
  if (call.id == api::ApiId::clCreateContext) {
    const auto* devices =
        reinterpret_cast<const cl_device_id*>(static_cast<uintptr_t>(call.args[2]));
    for (uint64_t i = 0; devices && i < call.args[1] && !holds; ++i) holds = devices[i] == m_device;
  } else if (auto info =
                 realClFunction<decltype(&clGetContextInfo)>(api::ApiId::clGetContextInfo)) {
    cl_device_id devices[16];
    size_t bytes = 0;
    if (info(context, CL_CONTEXT_DEVICES, sizeof devices, devices, &bytes) == CL_SUCCESS)
      for (size_t i = 0; i < bytes / sizeof devices[0] && !holds; ++i)
        holds = devices[i] == m_device;
  }
  auto retain = realClFunction<decltype(&clRetainContext)>(api::ApiId::clRetainContext);
  auto release = realClFunction<decltype(&clReleaseContext)>(api::ApiId::clReleaseContext);
  // Retained before the lock is taken (no driver call under it), given back if it lost the race.
  if (!holds || !retain || !release || retain(context) != CL_SUCCESS) return nullptr;
  bool taken = false;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    taken = !m_chosen && !m_programContext;  // else another thread's context came first
    if (taken) m_programContext = context;   // kept for the pool's life, the process's
  }
  if (!taken) {
    release(context);
    return nullptr;
  }
  m_changed.notify_all();
  return context;
}

void ContextChoice::requestOwn() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_chosen || m_programContext || m_ownWanted) return;
    m_ownWanted = true;
  }
  m_changed.notify_all();
}

cl_context ContextChoice::await() {
  std::unique_lock<std::mutex> lock(m_mutex);
  if (!m_ownOnly) m_changed.wait(lock, [this] { return m_programContext || m_ownWanted; });
  m_chosen = true;
  return m_programContext;
}

bool ContextChoice::exists() {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_chosen || m_programContext;
}

bool ContextChoice::earlyHandedOut() {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_earlyHandedOut && m_earlyContext && m_programContext == m_earlyContext;
}

const char* ContextChoice::origin() {
  std::lock_guard<std::mutex> lock(m_mutex);
  if (!m_programContext) return m_chosen ? "its own context" : "no context yet";
  if (m_programContext != m_earlyContext) return "the program's context";
  return m_earlyHandedOut ? "the early context (the program's)"
                          : "the early context (not the program's)";
}

void ContextChoice::forkChild() {
  m_earlyHandedOut = true;
  m_early = Early::Failed;
  m_chosen = true;  // a context the child creates is not offered
}

}  // namespace hetopt::shim
