// SPDX-License-Identifier: MIT
/** @file Trace mode's queues and their profiling twins; see twin_queues.h.
 * Sections: the program's queues, a timed command through a twin, what the program sees. */
#include "shim/core/twin_queues.h"

#include <CL/cl_ext.h>

#include <cstring>

#include "common/log.h"
#include "shim/core/state.h"

namespace hetopt::shim {

using api::ApiId;

namespace {
using QueueFn = cl_int(CL_API_CALL*)(cl_command_queue);
using EventFn = cl_int(CL_API_CALL*)(cl_event);
using MarkerFn = cl_int(CL_API_CALL*)(cl_command_queue, cl_uint, const cl_event*, cl_event*);
using CreateWithProps = cl_command_queue(CL_API_CALL*)(cl_context, cl_device_id,
                                                       const cl_queue_properties*, cl_int*);
using CreatePlain = cl_command_queue(CL_API_CALL*)(cl_context, cl_device_id,
                                                   cl_command_queue_properties, cl_int*);

void releaseEvent(cl_event e) {
  if (auto rel = realClFunction<EventFn>(ApiId::clReleaseEvent)) rel(e);
}
}  // namespace

struct TwinQueues::Creation {
  std::vector<cl_queue_properties> array;  ///< what we pass instead of the application's
  uint64_t originalArg = 0;                ///< the application's properties argument
  bool modified = false;
};

struct TwinQueues::TwinCall {
  uint64_t appQueue;
  uint64_t numEvents, eventList;  ///< the application's wait list
  cl_event fence;                 ///< the marker on the application's queue the command waits for
  bool outOfOrder;
  std::vector<cl_event> list;  ///< the application's wait list + the fence
};

uint64_t TwinQueues::nextVersionBase() {
  static std::atomic<uint64_t> base{0};
  return (base.fetch_add(1, std::memory_order_relaxed) + 1) << 32;
}

// ---- the program's queues -----------------------------------------------------------------------

void TwinQueues::beginCreation(CallRecord& call, CallState& state) {
  auto* qc = new Creation();
  state.creation = qc;
  qc->originalArg = call.args[2];
  // Twin mode: the queue is made as asked; the list is still read (device-side queues stay out).
  const bool addProfiling = !m_twinMode;
  if (call.id == ApiId::clCreateCommandQueue) {
    if (addProfiling && !(call.args[2] & CL_QUEUE_PROFILING_ENABLE)) {
      call.args[2] |= CL_QUEUE_PROFILING_ENABLE;
      qc->modified = true;
    }
    return;
  }
  // clCreateCommandQueueWithProperties[KHR]: a 0-terminated key/value list.
  const auto* props = reinterpret_cast<const cl_queue_properties*>(call.args[2]);
  bool found = false;
  size_t n = 0;
  if (props) {
    for (; props[n] != 0 && n < 64; n += 2) {
      qc->array.push_back(props[n]);
      cl_queue_properties v = props[n + 1];
      if (props[n] == CL_QUEUE_PROPERTIES) {
        found = true;
        if (v & CL_QUEUE_ON_DEVICE) {  // device-side queues are left alone
          delete qc;
          state.creation = nullptr;
          return;
        }
        if (addProfiling && !(v & CL_QUEUE_PROFILING_ENABLE)) {
          v |= CL_QUEUE_PROFILING_ENABLE;
          qc->modified = true;
        }
      }
      qc->array.push_back(v);
    }
    if (n >= 64) {  // not a list we understand: pass it through untouched
      delete qc;
      state.creation = nullptr;
      return;
    }
  }
  if (!found && addProfiling) {
    qc->array.push_back(CL_QUEUE_PROPERTIES);
    qc->array.push_back(CL_QUEUE_PROFILING_ENABLE);
    qc->modified = true;
  }
  qc->array.push_back(0);
  if (qc->modified) call.args[2] = reinterpret_cast<uintptr_t>(qc->array.data());
}

void TwinQueues::endCreation(CallRecord& call, CallState& state) {
  Creation* qc = state.creation;
  if (!qc) return;
  state.creation = nullptr;
  if (qc->modified && call.result == 0) {
    // A driver that refuses profiling: create the queue as asked, untimed.
    call.args[2] = qc->originalArg;
    auto* errcode = reinterpret_cast<cl_int*>(call.args[3]);
    auto context = reinterpret_cast<cl_context>(call.args[0]);
    auto device = reinterpret_cast<cl_device_id>(call.args[1]);
    if (call.id == ApiId::clCreateCommandQueue) {
      if (auto fn = realClFunction<CreatePlain>(call.id))
        call.result = reinterpret_cast<uintptr_t>(fn(context, device, qc->originalArg, errcode));
    } else if (call.id == ApiId::clCreateCommandQueueWithProperties) {
      if (auto fn = realClFunction<CreateWithProps>(call.id))
        call.result = reinterpret_cast<uintptr_t>(
            fn(context, device, reinterpret_cast<const cl_queue_properties*>(qc->originalArg),
               errcode));
    }
    delete qc;
    return;  // untimed: not in m_queues, so no events are injected on it
  }
  if (call.result) {
    QueueInfo info;
    info.addedProfiling = qc->modified;
    if (call.id == ApiId::clCreateCommandQueue) {
      info.properties = qc->originalArg;
    } else {
      const auto* props = reinterpret_cast<const cl_queue_properties*>(qc->originalArg);
      info.hadArray = props != nullptr;
      for (size_t n = 0; props && props[n] != 0; n += 2) {
        info.propertiesArray.push_back(props[n]);
        info.propertiesArray.push_back(props[n + 1]);
        if (props[n] == CL_QUEUE_PROPERTIES) info.properties = props[n + 1];
      }
      if (props) info.propertiesArray.push_back(0);
    }
    info.twin = m_twinMode && !(info.properties & CL_QUEUE_PROFILING_ENABLE);
    info.context = reinterpret_cast<cl_context>(call.args[0]);
    info.device = reinterpret_cast<cl_device_id>(call.args[1]);
    auto held = lock();
    m_queues[call.result] = std::move(info);
    changed();
  }
  delete qc;
}

void TwinQueues::retained(uint64_t queue) {
  auto held = lock();
  auto it = m_queues.find(queue);
  if (it != m_queues.end()) ++it->second.appRefs;
}

cl_command_queue TwinQueues::released(uint64_t queue) {
  auto held = lock();
  auto it = m_queues.find(queue);
  // The program's own count (CL_QUEUE_REFERENCE_COUNT includes the driver's references, which
  // in-flight commands and events hold on some drivers).
  if (it == m_queues.end() || !it->second.twin || --it->second.appRefs > 0) return nullptr;
  cl_command_queue twin = it->second.twinQueue;
  if (twin) m_twinToApp.erase(reinterpret_cast<uintptr_t>(twin));
  m_queues.erase(it);
  changed();
  return twin;
}

// The program's last reference: its twin goes now, its commands' timings read first. Waiting
// costs nothing where the program finished its queue before releasing it, as programs do.
void TwinQueues::finish(cl_command_queue twin) {
  if (auto fn = realClFunction<QueueFn>(ApiId::clFinish)) fn(twin);
}
void TwinQueues::destroy(cl_command_queue twin) {
  if (auto fn = realClFunction<QueueFn>(ApiId::clReleaseCommandQueue)) fn(twin);
}

TwinQueues::Route TwinQueues::route(const CallRecord& call) {
  // What this thread last saw of the queue, good while no queue was added, failed or dropped
  // since (m_version): most enqueues then take no lock here.
  struct View {
    const TwinQueues* owner = nullptr;
    uint64_t version = 0, queue = 0;
    bool known = false, twin = false, twinFailed = false;
  };
  static HETOPT_TLS View t_view;  // initial-exec: no TLS lookup call per enqueue in the shim
  if (t_view.owner != this || t_view.queue != call.args[0] ||
      t_view.version != m_version.load(std::memory_order_acquire)) {
    auto held = lock();
    auto it = m_queues.find(call.args[0]);
    t_view.owner = this;
    t_view.queue = call.args[0];
    t_view.version = m_version.load(std::memory_order_relaxed);
    t_view.known = it != m_queues.end();
    t_view.twin = t_view.known && it->second.twin;
    t_view.twinFailed = t_view.known && it->second.twinFailed;
  }
  if (!t_view.known) return Route::Untimed;
  if (!t_view.twin) return Route::Direct;
  // A command of an unprofiled queue that no twin may run stays there, untimed.
  return t_view.twinFailed || !api::apiInfo(call.id).twinnable ? Route::Untimed : Route::Twin;
}

// ---- a timed command through a twin -------------------------------------------------------------

cl_command_queue TwinQueues::twinOf(uint64_t queue) {
  cl_context context;
  cl_device_id device;
  cl_command_queue_properties props;
  {
    auto held = lock();
    auto it = m_queues.find(queue);
    if (it == m_queues.end() || it->second.twinFailed) return nullptr;
    if (it->second.twinQueue) return it->second.twinQueue;
    context = it->second.context;
    device = it->second.device;
    props = CL_QUEUE_PROFILING_ENABLE |
            (it->second.properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  }
  // Made outside the lock: a driver thread may allocate (and so reach the recorder) meanwhile.
  cl_command_queue twin = nullptr;
  cl_int err = CL_INVALID_OPERATION;
  if (auto fn = realClFunction<CreateWithProps>(ApiId::clCreateCommandQueueWithProperties)) {
    const cl_queue_properties list[] = {CL_QUEUE_PROPERTIES, props, 0};
    twin = fn(context, device, list, &err);
  }
  if (!twin) {
    if (auto fn = realClFunction<CreatePlain>(ApiId::clCreateCommandQueue))
      twin = fn(context, device, props, &err);
  }
  auto held = lock();
  auto it = m_queues.find(queue);
  if (it != m_queues.end() && !it->second.twinQueue && !it->second.twinFailed) {
    if (twin) {
      it->second.twinQueue = twin;
      m_twinToApp[reinterpret_cast<uintptr_t>(twin)] = queue;
      return twin;
    }
    it->second.twinFailed = true;
    changed();
    warn(
        "trace mode: no profiling queue beside the program's (error %d); its commands stay untimed",
        err);
    return nullptr;
  }
  // Another thread made one meanwhile (or the queue went): keep that one.
  cl_command_queue kept = it != m_queues.end() ? it->second.twinQueue : nullptr;
  if (twin) destroy(twin);
  return kept;
}

bool TwinQueues::beginTwin(CallRecord& call, CallState& state) {
  const api::ApiInfo& info = api::apiInfo(call.id);
  const int waitArg = info.waitArg;
  if (waitArg < 0 || info.eventArg < 0 || info.args[waitArg].refs[0] < 0) return false;
  const uint64_t queue = call.args[0];
  const uint64_t numEvents = call.args[info.args[waitArg].refs[0]];
  const uint64_t eventList = call.args[waitArg];
  // A wait list the driver will refuse: the application's queue gives its own error.
  if ((numEvents == 0) != (eventList == 0) || numEvents > 4096) return false;
  cl_command_queue twin = twinOf(queue);
  if (!twin) return false;
  auto marker = realClFunction<MarkerFn>(ApiId::clEnqueueMarkerWithWaitList);
  auto flush = realClFunction<QueueFn>(ApiId::clFlush);
  if (!marker || !flush) return false;
  auto app = reinterpret_cast<cl_command_queue>(queue);
  // The fence: the command starts after everything the program enqueued before it. Flushed, so
  // that the twin (and a blocking command on it) never waits for a marker nobody submitted.
  cl_event fence = nullptr;
  if (marker(app, 0, nullptr, &fence) != CL_SUCCESS || !fence) return false;
  if (flush(app) != CL_SUCCESS) {
    releaseEvent(fence);
    return false;
  }
  auto* tc = new TwinCall{queue, numEvents, eventList, fence, false, {}};
  {
    auto held = lock();
    auto it = m_queues.find(queue);
    tc->outOfOrder =
        it != m_queues.end() && (it->second.properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  }
  const auto* list = reinterpret_cast<const cl_event*>(eventList);
  tc->list.assign(list, list + numEvents);
  tc->list.push_back(fence);
  state.twin = tc;
  call.args[0] = reinterpret_cast<uintptr_t>(twin);
  call.args[info.args[waitArg].refs[0]] = tc->list.size();
  call.args[waitArg] = reinterpret_cast<uintptr_t>(tc->list.data());
  return true;
}

void TwinQueues::endTwin(CallRecord& call, CallState& state, cl_event done) {
  TwinCall* tc = state.twin;
  state.twin = nullptr;
  if (!tc) return;
  const api::ApiInfo& info = api::apiInfo(call.id);
  const uint64_t twin = call.args[0];
  call.args[0] = tc->appQueue;
  call.args[info.args[info.waitArg].refs[0]] = tc->numEvents;
  call.args[info.waitArg] = tc->eventList;
  releaseEvent(tc->fence);
  const bool enqueued = done && (info.returnClass == api::ArgClass::Scalar
                                     ? static_cast<cl_int>(call.result) == CL_SUCCESS
                                     : call.result != 0);
  if (enqueued) {
    // Later commands of the program's queue (and its clFinish) wait for the command. In an
    // out-of-order queue a marker does that without ordering the commands around it.
    using WaitFn = cl_int(CL_API_CALL*)(cl_uint, const cl_event*);
    auto app = reinterpret_cast<cl_command_queue>(tc->appQueue);
    auto fence = realClFunction<MarkerFn>(tc->outOfOrder ? ApiId::clEnqueueMarkerWithWaitList
                                                         : ApiId::clEnqueueBarrierWithWaitList);
    if (auto flush = realClFunction<QueueFn>(ApiId::clFlush))
      flush(reinterpret_cast<cl_command_queue>(twin));
    if (!fence || fence(app, 1, &done, nullptr) != CL_SUCCESS) {
      // Nothing on the program's queue can stand for the command: it completes here instead.
      if (auto wait = realClFunction<WaitFn>(ApiId::clWaitForEvents)) wait(1, &done);
    }
  }
  delete tc;
}

// ---- what the program sees ----------------------------------------------------------------------

void TwinQueues::beginProfilingInfo(CallRecord& call, CallState& state) {
  // Events of queues where only we asked for profiling answer as if profiling were off.
  using Fn = cl_int(CL_API_CALL*)(cl_event, cl_event_info, size_t, void*, size_t*);
  auto fn = realClFunction<Fn>(ApiId::clGetEventInfo);
  cl_command_queue q = nullptr;
  if (!fn ||
      fn(reinterpret_cast<cl_event>(call.args[0]), CL_EVENT_COMMAND_QUEUE, sizeof q, &q, nullptr) !=
          CL_SUCCESS ||
      !q)
    return;
  auto held = lock();
  auto it = m_queues.find(reinterpret_cast<uintptr_t>(q));
  if ((it != m_queues.end() && it->second.addedProfiling) ||
      m_twinToApp.count(reinterpret_cast<uintptr_t>(q))) {
    state.hideProfiling = true;
    call.args[3] = 0;  // nothing is written to the application's memory
    call.args[4] = 0;
  }
}

void TwinQueues::endProfilingInfo(CallRecord& call, const CallState& state) {
  if (!state.hideProfiling) return;
  const auto status = static_cast<cl_int>(call.result);
  if (status == CL_SUCCESS || status == CL_PROFILING_INFO_NOT_AVAILABLE ||
      status == CL_INVALID_VALUE)
    call.result = static_cast<uint32_t>(CL_PROFILING_INFO_NOT_AVAILABLE);
}

void TwinQueues::endQueueInfo(CallRecord& call) {
  const auto param = static_cast<cl_command_queue_info>(call.args[1]);
  if (param != CL_QUEUE_PROPERTIES && param != CL_QUEUE_PROPERTIES_ARRAY) return;
  QueueInfo info;
  {
    auto held = lock();
    auto it = m_queues.find(call.args[0]);
    if (it == m_queues.end() || !it->second.addedProfiling) return;
    info = it->second;
  }
  auto* value = reinterpret_cast<void*>(call.args[3]);
  auto* sizeRet = reinterpret_cast<size_t*>(call.args[4]);
  const size_t size = call.args[2];
  const auto status = static_cast<cl_int>(call.result);
  if (param == CL_QUEUE_PROPERTIES) {
    if (status == CL_SUCCESS && value && size >= sizeof(cl_command_queue_properties))
      *static_cast<cl_command_queue_properties*>(value) &=
          ~cl_command_queue_properties{CL_QUEUE_PROFILING_ENABLE};
    return;
  }
  // CL_QUEUE_PROPERTIES_ARRAY: answer with the application's own array, as the driver would have.
  if (status != CL_SUCCESS && status != CL_INVALID_VALUE) return;
  const size_t bytes =
      info.hadArray ? info.propertiesArray.size() * sizeof(cl_queue_properties) : 0;
  if (value && size < bytes) {
    call.result = static_cast<uint32_t>(CL_INVALID_VALUE);
    return;
  }
  if (value && bytes) memcpy(value, info.propertiesArray.data(), bytes);
  if (sizeRet) *sizeRet = bytes;
  call.result = CL_SUCCESS;
}

void TwinQueues::endEventInfo(CallRecord& call) {
  // An event of a twin command: its queue is the application's.
  if (call.args[1] != CL_EVENT_COMMAND_QUEUE || static_cast<cl_int>(call.result) != CL_SUCCESS ||
      !call.args[3] || call.args[2] < sizeof(cl_command_queue))
    return;
  auto* q = reinterpret_cast<cl_command_queue*>(call.args[3]);
  auto held = lock();
  auto it = m_twinToApp.find(reinterpret_cast<uintptr_t>(*q));
  if (it != m_twinToApp.end()) *q = reinterpret_cast<cl_command_queue>(it->second);
}

}  // namespace hetopt::shim
