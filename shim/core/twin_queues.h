// SPDX-License-Identifier: MIT
/**
 * @file Trace mode's queues: which of the program's command queues are timed and how, their
 * profiling twins, and what the program must keep seeing of them. A profiling-enabled queue costs
 * some drivers several microseconds on every command, timed or not (NVIDIA: ~4.8 us), so by
 * default the program's queues stay as it made them and only timed commands go through a
 * profiling twin. The maps are guarded by the mutex passed in (trace mode's timing mutex, which
 * the device timings share): the fork protocol holds it, and no OpenCL call is made under it.
 */
#pragma once
#include <CL/cl.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "shim/core/interceptor.h"

namespace hetopt::shim {

/// In twin mode (HETOPT_TIME_QUEUE's default) a timed device command (an API-table `call:twin`
/// function) is sent to a profiling twin of its queue: same context and device, out-of-order if
/// the queue is, made at the first timed command. The fence keeps the program's order: a marker on
/// the program's queue (flushed) joins the command's wait list, and a barrier (a marker on
/// out-of-order queues) on the program's queue waits for the command, so later commands, clFinish
/// and barriers still cover it. Events of twin commands answer the program's queue and
/// CL_PROFILING_INFO_NOT_AVAILABLE. Queues the program made with profiling are timed directly
/// either way.
class TwinQueues {
 public:
  struct Creation;  ///< a queue creation in progress
  struct TwinCall;  ///< a command on its way through a twin queue
  /// What one call carries from callBegin to callEnd.
  struct CallState {
    Creation* creation;
    TwinCall* twin;
    bool hideProfiling;  ///< clGetEventProfilingInfo of an event the program cannot time
  };
  /// Where a command on a known queue is timed.
  enum class Route : uint8_t {
    Untimed,  ///< not a queue we time, a failed twin, or a command that stays on the program's
              ///< queue
    Direct,   ///< the queue itself is profiled
    Twin,     ///< through the queue's twin
  };

  /// `mutex` guards the maps.
  explicit TwinQueues(std::mutex& mutex) : m_mutex(mutex) {}
  /// HETOPT_TIME_QUEUE's choice: twins (the default) or profiling on every queue ("profiled",
  /// hidden from clGetCommandQueueInfo).
  void setTwinMode(bool twin) { m_twinMode = twin; }

  // ---- the program's queues ---------------------------------------------------------------------
  /// clCreateCommandQueue[WithProperties[KHR]]: in "profiled" mode, asks for profiling too.
  void beginCreation(CallRecord& call, CallState& state);
  /// ... remembers the queue (or, when the driver refused profiling, makes it as asked, untimed).
  void endCreation(CallRecord& call, CallState& state);
  void retained(uint64_t queue);
  /// Before the program releases `queue`: at its last reference, it is forgotten and its twin
  /// returned, for the caller to finish(), read its timings and destroy(); else null.
  cl_command_queue released(uint64_t queue);
  void finish(cl_command_queue twin);
  void destroy(cl_command_queue twin);

  /// How an enqueue of `call` (its first argument a queue) is timed. Lock-free while no queue was
  /// added, failed or dropped since this thread last looked.
  Route route(const CallRecord& call);

  // ---- a timed command through a twin -----------------------------------------------------------
  /// Redirects the command to its queue's twin, fenced; false (nothing changed) when it cannot.
  bool beginTwin(CallRecord& call, CallState& state);
  /// Restores the call as the program made it and closes the fence behind the command, whose
  /// event is `done` (null: it was not enqueued).
  void endTwin(CallRecord& call, CallState& state, cl_event done);

  // ---- what the program sees --------------------------------------------------------------------
  /// clGetEventProfilingInfo of an event of a twin or of a queue only we profiled: asks nothing
  /// into the program's memory; endProfilingInfo answers CL_PROFILING_INFO_NOT_AVAILABLE.
  void beginProfilingInfo(CallRecord& call, CallState& state);
  void endProfilingInfo(CallRecord& call, const CallState& state);
  /// clGetCommandQueueInfo: the properties the program asked for.
  void endQueueInfo(CallRecord& call);
  /// clGetEventInfo(CL_EVENT_COMMAND_QUEUE) of a twin command: the program's queue.
  void endEventInfo(CallRecord& call);

 private:
  struct QueueInfo {
    bool addedProfiling = false;  ///< we switched profiling on; the application did not ask
    cl_command_queue_properties properties = 0;        ///< what the application asked for
    std::vector<cl_queue_properties> propertiesArray;  ///< ... as an array (with its 0)
    bool hadArray = false;
    bool twin = false;  ///< timed through a twin queue: the application's queue is unprofiled
    cl_context context = nullptr;
    cl_device_id device = nullptr;
    cl_command_queue twinQueue = nullptr;  ///< made at the first timed command
    bool twinFailed = false;               ///< the driver refused it: the queue stays untimed
    uint32_t appRefs = 1;                  ///< the program's references (its retains and releases)
  };
  /// The twin of `queue` (made on first use), or null.
  cl_command_queue twinOf(uint64_t queue);
  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(m_mutex); }
  void changed() { m_version.fetch_add(1, std::memory_order_release); }

  std::mutex& m_mutex;
  bool m_twinMode = true;
  std::map<uint64_t, QueueInfo> m_queues;    ///< by handle
  std::map<uint64_t, uint64_t> m_twinToApp;  ///< twin queue -> the application's queue
  /// Bumped (under the lock) when m_queues changes what route() reads; starts from a number no
  /// other instance of this process used, so a thread's view of an earlier one never matches.
  std::atomic<uint64_t> m_version{nextVersionBase()};
  static uint64_t nextVersionBase();
};

}  // namespace hetopt::shim
