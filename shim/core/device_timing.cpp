// SPDX-License-Identifier: MIT
/** @file Trace mode's device timings; see device_timing.h.
 * A sampler per thread, sampler keys, injected events, the pending list and queue clocks. */
#include "shim/core/device_timing.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "shim/core/state.h"

namespace hetopt::shim {
namespace {

using api::ApiId;
using api::ArgClass;
using EventFn = cl_int(CL_API_CALL*)(cl_event);

/// This thread's device-timing sampler (made at its first enqueue on a timed queue).
HETOPT_TLS trace::TimeSampler* t_sampler = nullptr;
pthread_key_t s_samplerKey;
pthread_once_t s_samplerKeyOnce = PTHREAD_ONCE_INIT;

void deleteSampler(void* p) { delete static_cast<trace::TimeSampler*>(p); }
void makeSamplerKey() { pthread_key_create(&s_samplerKey, deleteSampler); }

trace::TimeSampler& threadSampler(uint64_t period) {
  if (HETOPT_UNLIKELY(!t_sampler)) {
    // Seeded per thread so that threads running the same loop do not time the same positions.
    const auto seed =
        static_cast<uint64_t>(syscall(SYS_gettid)) * 0x9e3779b97f4a7c15ull ^ trace::monotonicNs();
    t_sampler = new trace::TimeSampler(period, seed);
    pthread_once(&s_samplerKeyOnce, makeSamplerKey);
    pthread_setspecific(s_samplerKey, t_sampler);
  }
  return *t_sampler;
}

/// Size classes of a transfer in the sampler's key: a factor of 4 each.
unsigned sizeClass(uint64_t bytes) {
  unsigned c = 0;
  while (bytes >= 4) bytes >>= 2, ++c;
  return c;
}

}  // namespace

/// The sampler's key of an enqueue: what the compressor folds on, the function and the OpenCL
/// objects it names (queue, buffers, kernel, ...), and for a buffer transfer its size class. Host
/// memory is left out: a loop that writes one buffer from two host blocks is two leaves of one key,
/// and random positions sample both. The size class keeps a bus benchmark's 1 KiB and 512 MiB
/// copies in separate censuses: one sampled 512 MiB copy standing for a hundred small ones (weight
/// = the period) put a 2.7 s run's copies at 7 s.
uint64_t DeviceTiming::sampleKey(const CallRecord& call) {
  const api::ApiInfo& info = api::apiInfo(call.id);
  uint64_t key = trace::TimeSampler::combine(0, static_cast<uint64_t>(call.id));
  for (unsigned i = 0; i < info.numArgs; ++i) {
    const api::ArgInfo& arg = info.args[i];
    switch (arg.cls) {
      case ArgClass::Queue:
      case ArgClass::Mem:
      case ArgClass::Kernel:
      case ArgClass::Sampler:
        key = trace::TimeSampler::combine(key, call.args[i]);
        break;
      default:
        break;
    }
    if ((arg.role == api::ArgRole::HostRead || arg.role == api::ArgRole::HostWrite) &&
        arg.numRefs == 1 && arg.refs[0] >= 0 && static_cast<unsigned>(arg.refs[0]) < call.numArgs)
      key = trace::TimeSampler::combine(key, 0x5a5a0000u + sizeClass(call.args[arg.refs[0]]));
  }
  return key;
}

uint64_t DeviceTiming::sample(const CallRecord& call, CallState& state) {
  state.timeable = true;
  return threadSampler(m_period).weight(sampleKey(call));
}

void DeviceTiming::timeCommand(CallRecord& call, CallState& state, uint64_t weight) {
  state.timed = true;
  state.weight = static_cast<uint32_t>(std::min<uint64_t>(weight, UINT32_MAX));
  const int eventArg = api::apiInfo(call.id).eventArg;
  if (call.args[eventArg] == 0) {
    state.injected = nullptr;
    call.args[eventArg] = reinterpret_cast<uintptr_t>(&state.injected);
    state.injectedEvent = true;
  }
}

cl_event DeviceTiming::commandEvent(const CallRecord& call, const CallState& state) const {
  if (state.injectedEvent) return state.injected;
  const int eventArg = api::apiInfo(call.id).eventArg;
  return eventArg >= 0 && call.args[eventArg] ? *reinterpret_cast<cl_event*>(call.args[eventArg])
                                              : nullptr;
}

cl_event DeviceTiming::take(CallRecord& call, const CallState& state, bool ok) {
  const int eventArg = api::apiInfo(call.id).eventArg;
  if (eventArg < 0) return nullptr;
  cl_event produced = nullptr;
  if (state.injectedEvent) {
    produced = state.injected;
    call.args[eventArg] = 0;  // recorded as the application passed it
    if (!ok && produced) {
      release(produced);
      produced = nullptr;
    }
  } else if (ok && call.args[eventArg] && state.timed) {
    // The application's own event on a timed queue, chosen by the sampler.
    produced = *reinterpret_cast<cl_event*>(call.args[eventArg]);
    if (produced) {
      auto retain = realClFunction<EventFn>(ApiId::clRetainEvent);
      if (!retain || retain(produced) != CL_SUCCESS) produced = nullptr;
    }
  }
  return produced;
}

size_t DeviceTiming::addPending(cl_event event, uint64_t timingId, const CallState& state,
                                uint64_t queue, uint64_t hostStart, uint64_t hostEnd) {
  const uint64_t weight = state.weight ? state.weight : 1;
  std::lock_guard<std::mutex> lock(m_mutex);
  m_pending.push_back(Pending{event, timingId, m_generation, static_cast<uint32_t>(weight), queue,
                              hostStart, hostEnd});
  m_count.store(m_pending.size(), std::memory_order_relaxed);
  return m_pending.size();
}

DeviceTiming::QueueClock* DeviceTiming::clockOf(uint64_t queue) {
  for (QueueClock& c : m_clocks)
    if (c.queue == queue) return &c;
  return nullptr;
}

bool DeviceTiming::measureTimer(uint64_t queue, int64_t* offsetNs, uint64_t* uncertaintyNs) const {
  using QueueInfoFn =
      cl_int(CL_API_CALL*)(cl_command_queue, cl_command_queue_info, size_t, void*, size_t*);
  using BothFn = cl_int(CL_API_CALL*)(cl_device_id, cl_ulong*, cl_ulong*);
  using HostFn = cl_int(CL_API_CALL*)(cl_device_id, cl_ulong*);
  auto queueInfo = realClFunction<QueueInfoFn>(ApiId::clGetCommandQueueInfo);
  auto both = realClFunction<BothFn>(ApiId::clGetDeviceAndHostTimer);
  auto host = realClFunction<HostFn>(ApiId::clGetHostTimer);
  cl_device_id device = nullptr;
  if (!queueInfo || !both || !host ||
      queueInfo(reinterpret_cast<cl_command_queue>(queue), CL_QUEUE_DEVICE, sizeof device, &device,
                nullptr) != CL_SUCCESS ||
      !device)
    return false;
  cl_ulong deviceNs = 0, hostTimerNs = 0;
  if (both(device, &deviceNs, &hostTimerNs) != CL_SUCCESS || deviceNs == 0) return false;
  // The host timer's clock is the driver's choice: it is read between two of ours, the narrowest
  // of a few tries, to place it on the trace's clock.
  uint64_t best = UINT64_MAX, mid = 0;
  cl_ulong hostAtMid = 0;
  for (int i = 0; i < 3; ++i) {
    cl_ulong h = 0;
    const uint64_t before = m_recorder.elapsedNs();
    if (host(device, &h) != CL_SUCCESS) return false;
    const uint64_t after = m_recorder.elapsedNs();
    if (after - before < best) {
      best = after - before;
      mid = before + best / 2;
      hostAtMid = h;
    }
  }
  *offsetNs = static_cast<int64_t>(hostTimerNs - deviceNs) + static_cast<int64_t>(mid - hostAtMid);
  *uncertaintyNs = best / 2;
  return true;
}

void DeviceTiming::noteQueued(const Pending& p, uint64_t queued) {
  QueueClock* c = clockOf(p.queue);
  if (!c) {
    m_clocks.push_back(QueueClock{p.queue, false, {}});
    c = &m_clocks.back();
  }
  if (!c->timer && c->estimate.add(p.hostStart, p.hostEnd, queued))
    m_sink.clock(p.queue, trace::ClockMethod::Estimated, c->estimate.offsetNs(),
                 c->estimate.uncertaintyNs());
}

void DeviceTiming::afterCall(bool sync, size_t pending) {
  if (pending && (sync || pending >= m_resolveAt.load(std::memory_order_relaxed)))
    resolve(pending > kMaxPending);
}

void DeviceTiming::release(cl_event event) {
  if (auto rel = realClFunction<EventFn>(ApiId::clReleaseEvent)) rel(event);
}

void DeviceTiming::resolve(bool all) {
  std::vector<Pending> work;
  std::vector<uint64_t> unclocked;  // queues whose device clock was never asked
  uint32_t gen;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    work.swap(m_pending);
    m_count.store(0, std::memory_order_relaxed);
    gen = m_generation;
    for (const Pending& p : work)
      if (!clockOf(p.queue) &&
          std::find(unclocked.begin(), unclocked.end(), p.queue) == unclocked.end())
        unclocked.push_back(p.queue);
  }
  if (work.empty()) return;
  struct Timer {
    uint64_t queue;
    bool ok;
    int64_t offset;
    uint64_t uncertainty;
  };
  std::vector<Timer> timers;
  for (uint64_t q : unclocked) {
    Timer t{q, false, 0, 0};
    t.ok = measureTimer(q, &t.offset, &t.uncertainty);
    timers.push_back(t);
  }
  using InfoFn = cl_int(CL_API_CALL*)(cl_event, cl_event_info, size_t, void*, size_t*);
  using ProfFn = cl_int(CL_API_CALL*)(cl_event, cl_profiling_info, size_t, void*, size_t*);
  auto info = realClFunction<InfoFn>(ApiId::clGetEventInfo);
  auto prof = realClFunction<ProfFn>(ApiId::clGetEventProfilingInfo);
  struct Done {
    Pending p;
    bool timed;
    trace::DeviceAgg d;
    uint64_t queued, start, end;  ///< device clock
  };
  std::vector<Done> done;
  std::vector<Pending> keep;
  for (const Pending& p : work) {
    if (p.generation != gen) continue;
    // The end time is there once the command completed: one call settles the common case; the
    // status is asked only when it is not (still running, failed, or no profiling after all).
    cl_ulong t[4] = {};
    bool okAll =
        prof && prof(p.event, CL_PROFILING_COMMAND_END, sizeof t[3], &t[3], nullptr) == CL_SUCCESS;
    if (!okAll) {
      cl_int st = -1;
      if (!info ||
          info(p.event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr) != CL_SUCCESS)
        st = -1;
      if (st != CL_COMPLETE && st >= 0 && !all) {
        keep.push_back(p);
        continue;
      }
    }
    Done d{p, false, {}, 0, 0, 0};
    const cl_profiling_info which[3] = {CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
                                        CL_PROFILING_COMMAND_START};
    for (int k = 0; okAll && k < 3; ++k)
      okAll = prof(p.event, which[k], sizeof t[k], &t[k], nullptr) == CL_SUCCESS;
    if (okAll && t[3] >= t[2]) {
      d.timed = true;
      d.queued = t[0];
      d.start = t[2];
      d.end = t[3];
      d.d = trace::DeviceAgg::command(t[3] - t[2], t[1] >= t[0] ? t[1] - t[0] : 0,
                                      t[2] >= t[1] ? t[2] - t[1] : 0, p.weight);
    }
    release(p.event);
    done.push_back(d);
  }
  // Queued after the calls' own records (their ids were handed out before): in stream order.
  std::lock_guard<std::mutex> lock(m_mutex);
  for (const Timer& t : timers) {
    if (!t.ok || clockOf(t.queue) || gen != m_generation) continue;
    m_clocks.push_back(QueueClock{t.queue, true, {}});
    m_sink.clock(t.queue, trace::ClockMethod::Timer, t.offset, t.uncertainty);
  }
  for (const Done& d : done) {
    if (d.p.generation != m_generation) continue;
    m_sink.timed(d.p.timingId, d.timed ? &d.d : nullptr, d.start, d.end);
    if (d.timed) noteQueued(d.p, d.queued);
  }
  m_pending.insert(m_pending.end(), keep.begin(), keep.end());
  m_count.store(m_pending.size(), std::memory_order_relaxed);
  m_resolveAt.store(std::max<size_t>(64, 2 * m_pending.size()), std::memory_order_relaxed);
}

void DeviceTiming::abandonAll() {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_pending.clear();
  m_count.store(0, std::memory_order_relaxed);
}

}  // namespace hetopt::shim
