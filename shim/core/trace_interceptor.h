// SPDX-License-Identifier: MIT
/**
 * @file HETOPT_MODE=trace: records every OpenCL call and every tracked host allocation into a
 * compressed, SSA-versioned trace (trace/recorder.h) with host and device timings.
 *
 * Argument meaning comes from the generated API table (roles, references between parameters);
 * hand code exists only for the calls that need it: queue creation (profiling is switched on),
 * clGetCommandQueueInfo and clGetEventProfilingInfo (the application still sees its own queue
 * properties and error codes), event injection for device timings, clSetKernelArg (which buffers
 * a launch writes), map/unmap.
 *
 * Device timings: the thread's sampler (trace/time_sampler.h, HETOPT_TIME_SAMPLE) picks which
 * enqueues on profiled queues are timed; the others are only counted. A picked call that passed
 * no event gets one injected; it (or the application's own, retained) waits in a pending list and
 * is read lazily, without blocking, at sync points
 * (clFinish, clWaitForEvents, blocking calls, queue/context release) or when many are pending, then
 * released. Nothing is read at exit: the OpenCL runtime may already be gone by then.
 *
 * Files: HETOPT_TRACE_FILE (default ./hetopt-<prog>-<pid>.trace); "%p" in it is replaced by the
 * pid. Exec'd children inherit "<file>.%p" and forked children switch to it, so every process
 * writes its own file.
 */
#pragma once
#include <CL/cl.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "shim/core/interceptor.h"
#include "trace/recorder.h"

namespace hetopt::shim {

class TraceInterceptor final : public Interceptor {
 public:
  /// Opens the trace file; null (after one warning) when it cannot be created.
  static TraceInterceptor* create();

  void callBegin(CallRecord& call) override;
  void callEnd(CallRecord& call) override;
  void allocated(const AllocEvent& event) override;
  void freeing(void* ptr) override;
  void processExit() override;

  /// pthread_atfork handlers (registered by create()).
  void forkPrepare();
  void forkParent();
  void forkChildRestart();
  /// A thread that recorded something ended.
  void threadExit(uint32_t thread, uint32_t generation);

 private:
  struct QueueInfo {
    bool addedProfiling = false;  ///< we switched profiling on; the application did not ask
    cl_command_queue_properties properties = 0;          ///< what the application asked for
    std::vector<cl_queue_properties> propertiesArray;     ///< ... as an array (with its 0)
    bool hadArray = false;
  };
  struct Pending {
    cl_event event;
    uint32_t thread;
    uint32_t slot;
    uint32_t generation;
    uint32_t weight;  ///< sampling weight of the command (trace/time_sampler.h)
  };

  TraceInterceptor() = default;
  uint32_t threadIndex();  ///< recorder lock held
  void beginQueueCreation(CallRecord& call);
  void endQueueCreation(CallRecord& call);
  void fixQueueInfo(CallRecord& call);
  void recordCall(CallRecord& call, uint64_t hostNs);
  void hostRef(trace::Leaf* leaf, uint8_t arg, uint64_t ptr, uint64_t bytes, uint64_t span,
               trace::HostAccess access);
  /// Reads what finished among the pending events. Never blocks; `all` also gives up on the
  /// ones still running (they are counted as missing).
  void resolvePending(bool all);
  template <typename Fn>
  Fn real(api::ApiId id) {
    return realClFunction<Fn>(id);
  }

  trace::Recorder m_recorder;
  trace::RecorderConfig m_config;
  std::string m_childPattern;  ///< path for children, with %p
  std::map<uint64_t, QueueInfo> m_queues;                    ///< by handle; recorder lock
  std::map<trace::ObjectId, std::vector<trace::ObjectId>> m_kernelArgs;  ///< bound objects
  std::map<trace::ObjectId, uint64_t> m_mapFlags;  ///< mapped pointer object -> last map flags
  std::vector<Pending> m_pending;  ///< recorder lock
  size_t m_resolveAt = 64;
  std::atomic<bool> m_active{true};  ///< false after exit or a failed restart; read lock-free by free()
};

}  // namespace hetopt::shim
