// SPDX-License-Identifier: MIT
/**
 * @file Trace mode's device timings: which commands are timed, the events read for them, and
 * the timings' way back into the recorder's leaves.
 *
 * Each thread's sampler (trace/time_sampler.h, HETOPT_TIME_SAMPLE) picks which enqueues on timed
 * queues get their timestamps read; the others are only counted. A picked call that passed no
 * event gets one injected; it (or the application's own, retained) waits in a pending list and is
 * read lazily, without blocking, at sync points (clFinish, clWaitForEvents, blocking calls,
 * queue/context release) or when many are pending, then released. Nothing is read at exit: the
 * OpenCL runtime may already be gone by then.
 *
 * Each timed command's start and end also go to its call's times for the timeline, when the leaf
 * keeps them, and every queue gets a clock: how its device's profiling clock maps to the trace's,
 * from clGetDeviceAndHostTimer where the device has it (OpenCL 2.1), else estimated from the
 * commands' QUEUED timestamps (trace/device_clock.h); the recorder writes it as a Clock record.
 *
 * The pending list and the clocks are guarded by the recorder's mutex (the fork protocol holds
 * it); no OpenCL call is made under it.
 */
#pragma once
#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "shim/core/interceptor.h"
#include "trace/device_clock.h"
#include "trace/recorder.h"
#include "trace/time_sampler.h"

namespace hetopt::shim {

class DeviceTiming {
 public:
  /// What one call carries from callBegin to callEnd.
  struct CallState {
    cl_event injected;   ///< the event we passed where the program passed none
    bool injectedEvent;  ///< `injected` is ours
    bool timeable;       ///< an enqueue on a queue we time: a device command we could time
    bool timed;          ///< ... chosen by the sampler: its timestamps are read
    bool sampled;        ///< ... as the sample of its block (weight: the period), not in the census
  };

  explicit DeviceTiming(trace::Recorder& recorder) : m_recorder(recorder) {}
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
  static bool unsampled(const CallState& state, bool ok) { return ok && state.timeable && !state.timed; }

  /// Recorder lock held: `event` times the leaf in `slot` of `thread`; the command was enqueued
  /// on `queue` by a call that ran [hostStart, hostEnd] (ns since tracing started).
  void addPending(cl_event event, uint32_t thread, uint32_t slot, const CallState& state, uint64_t queue,
                  uint64_t hostStart, uint64_t hostEnd);
  /// Recorder lock held: how many events wait.
  size_t pending() const { return m_pending.size(); }
  /// After a call was recorded, with `pending` events waiting: reads what finished at sync
  /// points or when many wait.
  void afterCall(bool sync, size_t pending);
  /// Reads what finished among the pending events. Never blocks; `all` also gives up on the
  /// ones still running (they are counted as missing).
  void resolve(bool all);
  void release(cl_event event);

  /// Recorder lock held: at exit, every pending command counts as missing (no OpenCL calls then).
  void abandonAll();
  /// Recorder lock held, in a forked child: the parent reads and releases its events.
  void forkChild() { m_pending.clear(); }

 private:
  struct Pending {
    cl_event event;
    uint32_t thread;
    uint32_t slot;
    uint32_t generation;
    uint32_t weight;  ///< sampling weight of the command (trace/time_sampler.h)
    uint64_t queue;   ///< the program's queue
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
  /// Recorder lock held: a timed command's QUEUED timestamp narrows its queue's estimate.
  void noteQueued(const Pending& p, uint64_t queued);
  static constexpr size_t kMaxPending = 8192;  ///< device timings waiting before we give up on the oldest

  trace::Recorder& m_recorder;
  uint64_t m_period = trace::TimeSampler::kDefaultPeriod;
  std::vector<Pending> m_pending;  ///< recorder lock
  std::vector<QueueClock> m_clocks;  ///< recorder lock
  size_t m_resolveAt = 64;
};

}  // namespace hetopt::shim
