// SPDX-License-Identifier: MIT
/**
 * @file Trace mode's device timings: which commands are timed, the events read for them, and
 * the timings' way back into the recorder's leaves. Events are read lazily, without blocking, at
 * sync points or when many are pending, and never at exit: the OpenCL runtime may already be
 * gone by then. The pending list and the clocks are guarded by the mutex passed in (the twin
 * queues' too; the fork protocol holds it); no OpenCL call is made under it.
 */
#pragma once
#include <CL/cl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "shim/core/interceptor.h"
#include "trace/device_clock.h"
#include "trace/recorder.h"
#include "trace/time_sampler.h"

namespace hetopt::shim {

/// Each thread's sampler (trace/time_sampler.h, HETOPT_TIME_SAMPLE) picks which enqueues on timed
/// queues get their timestamps read; the others are only counted. A picked call that passed no
/// event gets one injected; it (or the application's own, retained) waits in a pending list and is
/// read at sync points (clFinish, clWaitForEvents, blocking calls, queue/context release) or when
/// many are pending, then released. Each timed command's start and end also go to its call's
/// times for the timeline, when the leaf keeps them, and every queue gets a clock: how its
/// device's profiling clock maps to the trace's, from clGetDeviceAndHostTimer where the device has
/// it (OpenCL 2.1), else estimated from the commands' QUEUED timestamps (trace/device_clock.h); the
/// recorder writes it as a Clock record.
class DeviceTiming {
 public:
  /// What one call carries from callBegin to callEnd.
  struct CallState {
    cl_event injected;   ///< the event we passed where the program passed none
    bool injectedEvent;  ///< `injected` is ours
    bool timeable;       ///< an enqueue on a queue we time: a device command we could time
    bool timed;          ///< ... chosen by the sampler: its timestamps are read
    uint32_t weight;     ///< ... its sampling weight: 1 in the census, its block's length after
  };

  /// Where timings and clocks go: records of the trace's stream, after the record of the call
  /// they time; each timed call gets an id that its timing comes back with.
  class Sink {
   public:
    virtual ~Sink() = default;
    /// The timing of the call with `timingId` (null: missing).
    virtual void timed(uint64_t timingId, const trace::DeviceAgg* timing, uint64_t deviceStart,
                       uint64_t deviceEnd) = 0;
    virtual void clock(uint64_t queue, trace::ClockMethod method, int64_t offsetNs,
                       uint64_t uncertaintyNs) = 0;
  };

  /// `recorder`: its clock only (elapsedNs, no lock).
  DeviceTiming(const trace::Recorder& recorder, std::mutex& mutex, Sink& sink)
      : m_recorder(recorder), m_mutex(mutex), m_sink(sink) {}
  /// HETOPT_TIME_SAMPLE: 1 times every command, N about one in N after the first ones per key,
  /// 0 none at all (queues then stay as the program made them).
  void setPeriod(uint64_t period) { m_period = period; }
  uint64_t period() const { return m_period; }
  bool enabled() const { return m_period != 0; }

  /// A device command on a timed queue (marks it timeable): asks this thread's sampler. Its
  /// sampling weight when it is to be timed, else 0.
  uint64_t sample(const CallRecord& call, CallState& state);
  /// The sampler's key of an enqueue (the function, its OpenCL objects, a transfer's size class).
  static uint64_t sampleKey(const CallRecord& call);
  /// The command is timed with `weight`: passes an event of ours where the program asked for none.
  void timeCommand(CallRecord& call, CallState& state, uint64_t weight);
  /// The event of the command now (ours or the program's), null when there is none.
  cl_event commandEvent(const CallRecord& call, const CallState& state) const;
  /// At the call's end, before it is recorded: restores the event argument as the program passed
  /// it and returns the event whose timings are to be read (retaining the program's), or null;
  /// `ok`: the command was enqueued.
  cl_event take(CallRecord& call, const CallState& state, bool ok);
  /// The leaf of a command the sampler left untimed (the analysis extrapolates its leaf's timed
  /// mean to it).
  static bool unsampled(const CallState& state, bool ok) {
    return ok && state.timeable && !state.timed;
  }

  /// `event` times the call with `timingId` (its record is queued); the command was enqueued on
  /// `queue` by a call that ran [hostStart, hostEnd] (ns since tracing started). Returns how many
  /// events wait.
  size_t addPending(cl_event event, uint64_t timingId, const CallState& state, uint64_t queue,
                    uint64_t hostStart, uint64_t hostEnd);
  /// How many events wait (no lock: a hint).
  size_t pending() const { return m_count.load(std::memory_order_relaxed); }
  /// After a call was recorded, with `pending` events waiting: reads what finished at sync
  /// points or when many wait.
  void afterCall(bool sync, size_t pending);
  /// Reads what finished among the pending events. Never blocks; `all` also gives up on the
  /// ones still running (they are counted as missing).
  void resolve(bool all);
  void release(cl_event event);

  /// At exit: drops the pending events (no OpenCL calls then); the recorder counts their
  /// commands as missing.
  void abandonAll();
  /// Mutex held, in a forked child: the parent reads and releases its events.
  void forkChild() {
    m_pending.clear();
    m_count.store(0, std::memory_order_relaxed);
    ++m_generation;
  }

 private:
  struct Pending {
    cl_event event;
    uint64_t timingId;
    uint32_t generation;
    uint32_t weight;              ///< sampling weight of the command (trace/time_sampler.h)
    uint64_t queue;               ///< the program's queue
    uint64_t hostStart, hostEnd;  ///< the enqueue call, ns since tracing started
  };
  /// A queue's device clock against the trace's.
  struct QueueClock {
    uint64_t queue;
    bool timer;  ///< from clGetDeviceAndHostTimer; else `estimate`
    trace::ClockEstimate estimate;
  };
  QueueClock* clockOf(uint64_t queue);
  /// clGetDeviceAndHostTimer of the queue's device against our clock: the offset of trace ns
  /// to device ns. False when the device or the ICD loader cannot tell. No lock held.
  bool measureTimer(uint64_t queue, int64_t* offsetNs, uint64_t* uncertaintyNs) const;
  /// Mutex held: a timed command's QUEUED timestamp narrows its queue's estimate.
  void noteQueued(const Pending& p, uint64_t queued);
  static constexpr size_t kMaxPending =
      8192;  ///< device timings waiting before we give up on the oldest

  const trace::Recorder& m_recorder;
  std::mutex& m_mutex;
  Sink& m_sink;
  uint64_t m_period = trace::TimeSampler::kDefaultPeriod;
  std::vector<Pending> m_pending;       ///< m_mutex
  std::atomic<size_t> m_count{0};       ///< m_pending.size()
  std::vector<QueueClock> m_clocks;     ///< m_mutex
  uint32_t m_generation = 1;            ///< m_mutex; changes in a forked child
  std::atomic<size_t> m_resolveAt{64};  ///< read lock-free by afterCall
};

}  // namespace hetopt::shim
