// SPDX-License-Identifier: MIT
/**
 * @file HETOPT_MODE=trace: records every OpenCL call and every tracked host allocation into a
 * compressed, SSA-versioned trace (trace/recorder.h) with host and device timings.
 *
 * Argument meaning comes from the generated API table (roles, references between parameters);
 * hand code exists only for the calls that need it: queue creation, twin queues (below),
 * clGetCommandQueueInfo, clGetEventInfo and clGetEventProfilingInfo (the application still sees
 * its own queues, properties and error codes), event injection for device timings,
 * clSetKernelArg (which buffers a launch writes), map/unmap.
 *
 * Device timings: the thread's sampler (trace/time_sampler.h, HETOPT_TIME_SAMPLE) picks which
 * enqueues on profiled queues are timed; the others are only counted. A picked call that passed
 * no event gets one injected; it (or the application's own, retained) waits in a pending list and
 * is read lazily, without blocking, at sync points
 * (clFinish, clWaitForEvents, blocking calls, queue/context release) or when many are pending, then
 * released. Nothing is read at exit: the OpenCL runtime may already be gone by then.
 *
 * Where the timestamps come from (HETOPT_TIME_QUEUE): a profiling-enabled queue costs some drivers
 * several microseconds on every command, timed or not (NVIDIA: ~4.8 us), so by default ("twin")
 * the program's queues stay as it made them and a timed device command is sent instead to a
 * profiling twin of its queue (same context and device, made at the first timed command), fenced
 * so that the program's order holds: a marker on the program's queue (flushed) joins the command's
 * wait list, and a barrier (a marker on out-of-order queues) on the program's queue waits for the
 * command, so later commands, clFinish and barriers still cover it. The fence is not recorded; the
 * call is recorded as the program made it, and events of twin commands answer the program's queue
 * and CL_PROFILING_INFO_NOT_AVAILABLE. "profiled" switches profiling on on every queue instead.
 * Queues the program itself made with profiling are timed directly either way.
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
  /// The fork protocol (state.cpp): the recorder's mutex is held across fork(); a forked child
  /// then starts its own trace file.
  void forkPrepare() override;
  void forkParent() override;
  void forkChild() override;

  /// A thread that recorded something ended.
  void threadExit(uint32_t thread, uint32_t generation);

 private:
  struct QueueInfo {
    bool addedProfiling = false;  ///< we switched profiling on; the application did not ask
    cl_command_queue_properties properties = 0;          ///< what the application asked for
    std::vector<cl_queue_properties> propertiesArray;     ///< ... as an array (with its 0)
    bool hadArray = false;
    bool twin = false;  ///< timed through a twin queue: the application's queue is unprofiled
    cl_context context = nullptr;
    cl_device_id device = nullptr;
    cl_command_queue twinQueue = nullptr;  ///< made at the first timed command
    bool twinFailed = false;               ///< the driver refused it: the queue stays untimed
    uint32_t appRefs = 1;                  ///< the program's references (its retains and releases)
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
  /// Redirects a timed command to its queue's twin, fenced; false (nothing changed) when it cannot.
  bool beginTwin(CallRecord& call, uint64_t queue, int eventArg);
  /// Restores the call as the application made it and closes the fence behind the command.
  void endTwin(CallRecord& call, int eventArg);
  /// The twin of `queue` (made on first use), or null.
  cl_command_queue twinOf(uint64_t queue);
  /// Before the application releases `queue`: at its last reference, its twin goes too.
  void releaseTwin(uint64_t queue);
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
  /// Bumped (under the lock) when m_queues changes what callBegin reads; starts from a number no
  /// other interceptor of this process used, so a thread's view of an earlier one never matches.
  std::atomic<uint64_t> m_queuesVersion{nextVersionBase()};
  static uint64_t nextVersionBase() {
    static std::atomic<uint64_t> base{0};
    return (base.fetch_add(1, std::memory_order_relaxed) + 1) << 32;
  }
  std::map<uint64_t, uint64_t> m_twinToApp;  ///< twin queue -> the application's queue; recorder lock
  std::map<trace::ObjectId, std::vector<trace::ObjectId>> m_kernelArgs;  ///< bound objects
  std::vector<Pending> m_pending;  ///< recorder lock
  size_t m_resolveAt = 64;
  static constexpr uint32_t kSelfTimePeriod = 64;  ///< recording timed on about one call in this many
  bool m_measureSelf = false;  ///< HETOPT_DEBUG: time the recording after every call
  std::atomic<uint64_t> m_selfNs{0}, m_selfCalls{0};
  /// The Startup record: ns since tracing started at the first OpenCL call and at the first
  /// context creation (0: not yet).
  std::atomic<uint64_t> m_firstCallNs{0}, m_firstContextNs{0};
  void noteStartup(api::ApiId id);
  std::atomic<bool> m_active{true};  ///< false after exit or a failed restart; read lock-free by free()
};

}  // namespace hetopt::shim
