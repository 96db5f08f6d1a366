// SPDX-License-Identifier: MIT
/** @file Trace mode; see trace_interceptor.h.
 * Sections: creation, fork, calls, allocations; the hooks the call model and recorder use. */
#include "shim/core/trace_interceptor.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "common/options.h"
#include "hetopt/version.h"
#include "shim/core/callsite.h"
#include "shim/core/fatal_signals.h"
#include "shim/core/host_ranges.h"
#include "shim/core/modes.h"
#include "shim/core/self_identity.h"
#include "shim/core/state.h"
#include "shim/core/trace_file_name.h"

namespace hetopt::shim {
namespace {

using api::ApiId;

TraceInterceptor* s_instance = nullptr;
pthread_key_t s_threadKey;
/// (generation << 32) | system thread id of this thread, once announced in the stream; 0 before.
/// Plain initial-exec TLS: still there for the calls some programs make at exit.
HETOPT_TLS uint64_t t_traceThread = 0;
/// Calls of this thread until the next one whose recording is timed, and the random gaps' state
/// (seeded on first use).
constexpr uint32_t kSelfTimePeriod = 64;  ///< recording timed on about one call in this many
HETOPT_TLS uint32_t t_untilSelfTimed = kSelfTimePeriod / 2 - 1;
HETOPT_TLS uint32_t t_gapRandom = 0;

/// What one call carries from callBegin to callEnd (CallRecord::callState).
struct CallState {
  uint64_t startNs;  ///< 0: callBegin did not see the call
  DeviceTiming::CallState timing;
  TwinQueues::CallState queues;
};

bool moduleLookup(uint64_t address, trace::ModuleRecord* out) {
  const Module* m = ModuleMap::instance().find(address);
  if (!m) return false;
  out->start = m->start;
  out->end = m->end;
  out->bias = m->bias;
  out->path = m->path;
  out->buildId = m->buildId;
  return true;
}

/// The call model's hooks: what needs the shim's view of the call or the driver.
bool hostSpanOf(const trace::CallView& view, unsigned arg, trace::HostSpan* out) {
  HostRange r;
  if (!hostRange(*static_cast<const CallRecord*>(view.source), api::apiInfo(view.id), arg, &r))
    return false;
  out->ptr = r.ptr;
  out->bytes = r.bytes;
  out->span = r.span;
  out->access = r.access;
  return true;
}

bool labelOf(trace::ObjectKind kind, uint64_t handle, char* name, size_t size) {
  cl_int rc = CL_INVALID_VALUE;
  if (kind == trace::ObjectKind::Device) {
    using Fn = cl_int(CL_API_CALL*)(cl_device_id, cl_device_info, size_t, void*, size_t*);
    if (auto fn = realClFunction<Fn>(ApiId::clGetDeviceInfo))
      rc = fn(reinterpret_cast<cl_device_id>(handle), CL_DEVICE_NAME, size, name, nullptr);
  } else if (kind == trace::ObjectKind::Platform) {
    using Fn = cl_int(CL_API_CALL*)(cl_platform_id, cl_platform_info, size_t, void*, size_t*);
    if (auto fn = realClFunction<Fn>(ApiId::clGetPlatformInfo))
      rc = fn(reinterpret_cast<cl_platform_id>(handle), CL_PLATFORM_NAME, size, name, nullptr);
  }
  return rc == CL_SUCCESS;
}

void snapshotOnSignal(int) {
  if (s_instance) s_instance->signalSnapshot();
}

void threadKeyDestructor(void* value) {
  auto v = reinterpret_cast<uintptr_t>(value);
  if (s_instance && v) {
    ScopedInternal internal;
    s_instance->threadExit(static_cast<uint32_t>(v & 0xffffffffu), static_cast<uint32_t>(v >> 32));
  }
}

/// [lo, hi) of the calling thread's stack; 0, 0 when unknown.
void stackOf(uint64_t* lo, uint64_t* hi) {
  *lo = *hi = 0;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* base = nullptr;
  size_t size = 0;
  pthread_attr_getstack(&attr, &base, &size);
  pthread_attr_destroy(&attr);
  *lo = reinterpret_cast<uint64_t>(base);
  *hi = *lo + size;
}

/// Waits up to `ns` for `m`; false when it stays taken.
bool lockWithin(std::mutex& m, uint64_t ns) {
  for (uint64_t waited = 0; !m.try_lock(); waited += 1000000) {
    if (waited >= ns) return false;
    const timespec pause{0, 1000000};
    nanosleep(&pause, nullptr);
  }
  return true;
}

}  // namespace

// ---- creation -----------------------------------------------------------------------------------

TraceInterceptor* TraceInterceptor::create() {
  ScopedInternal internal;
  auto* t = new TraceInterceptor();
  std::string exe = selfExePath();
  if (exe.empty()) exe = "?";
  const TraceFileNames names = traceFileNames(exe);
  t->m_config.path = names.path;
  t->m_childPattern = names.childPattern;
  t->m_path = t->m_config.path;
  t->m_pid.store(static_cast<int>(getpid()), std::memory_order_relaxed);
  t->m_measureSelf = debugEnabled();
  t->m_config.modules = moduleLookup;
  for (const Module& m : ModuleMap::instance().modules(nullptr))
    if (m.path == exe)
      t->m_config.programAddress = m.start;  // the trace names the program's build id
  t->m_config.writeFailed = [](const std::string& path, const std::string& error) {
    warn(
        "trace mode: cannot write %s (%s); the trace ends here, marked incomplete, and the "
        "program goes on",
        path.c_str(), error.c_str());
  };
  trace::FileHeader& h = t->m_config.header;
  h.pid = static_cast<uint64_t>(getpid());
  h.parentPid = static_cast<uint64_t>(getppid());
  h.startUnixNs = clockNs(CLOCK_REALTIME);
  h.writerVersion = HETOPT_VERSION_STRING;
  h.program = exe;
  h.arguments = readCommandLine();
  describeScript(&h);
  bool stampsOk = true;
  t->m_config.stampsPerLeaf =
      static_cast<unsigned>(optionUnsigned(Option::TIMELINE_CALLS, 1, 65536, &stampsOk));
  if (!stampsOk)
    warn("trace mode: HETOPT_TIMELINE_CALLS='%s' is not a number in 1..65536; using %s",
         optionString(Option::TIMELINE_CALLS), optionInfo(Option::TIMELINE_CALLS).defaultValue);
  std::string error;
  if (!t->m_recorder.open(t->m_config, &error)) {
    warn("trace mode: %s; running untraced", error.c_str());
    delete t;
    return nullptr;
  }
  bool periodOk = true;
  t->m_timing.setPeriod(optionUnsigned(Option::TIME_SAMPLE, 0, 1u << 20, &periodOk));
  if (!periodOk)
    warn("trace mode: HETOPT_TIME_SAMPLE='%s' is not a number in 0..1048576; using %s",
         optionString(Option::TIME_SAMPLE), optionInfo(Option::TIME_SAMPLE).defaultValue);
  // "auto": every command timed costs more with a fence each than with a profiled queue (H100:
  // +115% vs +60% on a call-bound loop, docs/results.md).
  const bool everyCommand = t->m_timing.period() == 1;
  const std::string timeQueue = optionString(Option::TIME_QUEUE);
  if (timeQueue == "profiled") {
    t->m_queues.setTwinMode(false);
  } else if (timeQueue == "auto") {
    t->m_queues.setTwinMode(!everyCommand);
  } else if (timeQueue != "twin") {
    warn("trace mode: HETOPT_TIME_QUEUE='%s' is not auto, twin or profiled; using auto",
         timeQueue.c_str());
    t->m_queues.setTwinMode(!everyCommand);
  }
  const std::string callClock = optionString(Option::CALL_CLOCK);
  if (callClock != "auto" && callClock != "monotonic")
    warn("trace mode: HETOPT_CALL_CLOCK='%s' is not auto or monotonic; using auto",
         callClock.c_str());
  t->m_tscAllowed = callClock != "monotonic";
  trace::TscClock::start(t->m_tscAllowed);
  s_instance = t;
  pthread_key_create(&s_threadKey, threadKeyDestructor);
  installFatalSignalHandlers(snapshotOnSignal);
  debug("tracing to %s", t->m_config.path.c_str());
  return t;
}

TraceInterceptor::TraceInterceptor()
    : m_applier(m_recorder, m_labels),
      m_stream(m_recorder.mutex(), *this),
      m_queues(m_timingMutex),
      m_timing(m_recorder, m_timingMutex, *this) {}

uint32_t TraceInterceptor::threadId() {
  const uint32_t gen = m_generation.load(std::memory_order_relaxed);
  if (HETOPT_LIKELY(t_traceThread && (t_traceThread >> 32) == gen))
    return static_cast<uint32_t>(t_traceThread);
  return registerThread(gen);
}

uint32_t TraceInterceptor::registerThread(uint32_t generation) {
  ScopedInternal internal;  // pthread_getattr_np allocates
  const auto tid = static_cast<uint32_t>(syscall(SYS_gettid));
  uint64_t lo, hi;
  stackOf(&lo, &hi);
  alignas(8) unsigned char record[64];
  push(record, raw::thread(record, tid, lo, hi));
  t_traceThread = (uint64_t{generation} << 32) | tid;
  pthread_setspecific(s_threadKey, reinterpret_cast<void*>(static_cast<uintptr_t>(t_traceThread)));
  return tid;
}

void TraceInterceptor::threadExit(uint32_t tid, uint32_t generation) {
  if (!m_active.load(std::memory_order_relaxed) ||
      generation != m_generation.load(std::memory_order_relaxed))
    return;
  alignas(8) unsigned char record[64];
  push(record, raw::threadExit(record, tid));
}

void TraceInterceptor::timed(uint64_t timingId, const trace::DeviceAgg* timing,
                             uint64_t deviceStart, uint64_t deviceEnd) {
  alignas(8) unsigned char record[256];
  push(record, raw::timing(record, timingId, timing, deviceStart, deviceEnd));
}

void TraceInterceptor::clock(uint64_t queue, trace::ClockMethod method, int64_t offsetNs,
                             uint64_t uncertaintyNs) {
  alignas(8) unsigned char record[64];
  push(record, raw::clock(record, queue, method, offsetNs, uncertaintyNs));
}

void TraceInterceptor::signalSnapshot() {
  static std::atomic<bool> s_busy{false};
  if (!m_active.load(std::memory_order_relaxed) || s_busy.exchange(true)) return;
  m_signalled.store(true, std::memory_order_relaxed);
  // The recording thread drains what is queued and writes; this one only waits (a bounded wait:
  // the thread may be stuck on a lock the interrupted code holds).
  if (m_stream.flushFromSignal(1000000000ull)) {
    s_busy.store(false);
    return;
  }
  std::mutex& mutex = m_recorder.mutex();
  bool locked = mutex.try_lock();
  for (int i = 0; i < 100 && !locked; ++i) {
    const timespec pause{0, 1000000};
    nanosleep(&pause, nullptr);
    locked = mutex.try_lock();
  }
  if (locked) {
    ++t_depth;
    t_inSignalSnapshot = true;
    if (hetopt_shim_signal_allocations) hetopt_shim_signal_allocations(true);
    if (m_active) {
      try {
        m_recorder.snapshot();
      } catch (...) {  // the reserve ran out: the snapshot on disk stays the last one
      }
    }
    if (hetopt_shim_signal_allocations) hetopt_shim_signal_allocations(false);
    t_inSignalSnapshot = false;
    --t_depth;
    mutex.unlock();
  }
  s_busy.store(false);
}

// ---- fork ---------------------------------------------------------------------------------------

// Lock order: the timing mutex (held while timings are queued), the label table's, the stream's
// (its gate, then the recorder's), the block filter's.
void TraceInterceptor::forkPrepare() {
  m_timingMutex.lock();
  m_labels.mutex().lock();
  m_stream.forkPrepare();
  m_blocksMutex.lock();
  m_programs.lockForFork();
}

void TraceInterceptor::forkParent() {
  m_programs.unlockAfterFork();
  m_blocksMutex.unlock();
  m_stream.forkParent();
  m_labels.mutex().unlock();
  m_timingMutex.unlock();
}

void TraceInterceptor::forkChild() {
  trace::TscClock::start(m_tscAllowed);  // calibrated anew by the child's recording thread
  m_programs.forkChild();
  m_programs.unlockAfterFork();
  m_blocksMutex.unlock();
  m_stream.forkChild();
  m_labels.mutex().unlock();
  m_timing.forkChild();  // the parent's events: the parent reads and releases them
  m_timingMutex.unlock();
  auto lock = m_recorder.lock();
  if (!m_active) return;
  m_pid.store(static_cast<int>(getpid()), std::memory_order_relaxed);
  m_generation.fetch_add(1, std::memory_order_relaxed);  // this thread announces itself again
  m_applier.forkChild();
  m_selfNs = 0;  // the parent's recording cost is in the parent's trace
  m_selfCalls = 0;
  trace::RecorderConfig c = m_config;
  c.path = substitutePid(m_childPattern, getpid());
  c.header.pid = static_cast<uint64_t>(getpid());
  c.header.parentPid = static_cast<uint64_t>(getppid());
  std::string error;
  m_path = c.path;
  if (!m_recorder.restartInChild(c, &error)) {
    warn("trace mode: forked child: %s; the child runs untraced", error.c_str());
    m_active = false;
  }
}

// ---- calls --------------------------------------------------------------------------------------

void TraceInterceptor::noteStartup(api::ApiId id, uint64_t startNs) {
  const uint64_t now = std::max<uint64_t>(m_recorder.sinceStart(startNs), 1);
  uint64_t none = 0;
  m_firstCallNs.compare_exchange_strong(none, now, std::memory_order_relaxed);
  if (id == ApiId::clCreateContext || id == ApiId::clCreateContextFromType) {
    none = 0;
    m_firstContextNs.compare_exchange_strong(none, now, std::memory_order_relaxed);
  }
}

void TraceInterceptor::callBegin(CallRecord& call) {
  if (!m_active) return;
  CallState& st = call.callState<CallState>();
  st.startNs = trace::monotonicNs();
  // The program's start-up as `hetopt run` can overlap it: when its OpenCL use and its first
  // context begin (the Startup record).
  if (HETOPT_UNLIKELY(m_firstContextNs.load(std::memory_order_relaxed) == 0))
    noteStartup(call.id, st.startNs);
  const api::ApiInfo& info = api::apiInfo(call.id);
  switch (call.id) {
    case ApiId::clCreateCommandQueue:
    case ApiId::clCreateCommandQueueWithProperties:
    case ApiId::clCreateCommandQueueWithPropertiesKHR:
      // HETOPT_TIME_SAMPLE=0: no device timing at all; queues stay as the program made them.
      if (m_timing.enabled()) m_queues.beginCreation(call, st.queues);
      return;
    case ApiId::clReleaseCommandQueue:
      m_timing.resolve(false);  // their events may not outlive them on every driver
      if (cl_command_queue twin = m_queues.released(call.args[0])) {
        m_queues.finish(twin);
        m_timing.resolve(false);
        m_queues.destroy(twin);
      }
      return;
    case ApiId::clRetainCommandQueue:
      m_queues.retained(call.args[0]);
      return;
    case ApiId::clReleaseContext:
      m_timing.resolve(false);
      return;
    case ApiId::clGetEventProfilingInfo:
      m_queues.beginProfilingInfo(call, st.queues);
      return;
    default:
      break;
  }
  if (info.kind == api::ApiKind::Query || info.numArgs == 0 ||
      info.args[0].cls != api::ArgClass::Queue || info.eventArg < 0)
    return;
  const TwinQueues::Route route = m_queues.route(call);
  if (route == TwinQueues::Route::Untimed) return;
  // Only sampled commands get an event read (and, where the application passed none, injected).
  const uint64_t weight = m_timing.sample(call, st.timing);
  if (!weight) return;
  if (route == TwinQueues::Route::Twin && !m_queues.beginTwin(call, st.queues))
    return;  // untimed where it was
  m_timing.timeCommand(call, st.timing, weight);
}

void TraceInterceptor::callEnd(CallRecord& call) {
  CallState& st = call.callState<CallState>();
  if (!m_active || !st.startNs) return;
  const uint64_t hostNs = trace::nsSince(st.startNs);
  switch (call.id) {
    case ApiId::clCreateCommandQueue:
    case ApiId::clCreateCommandQueueWithProperties:
    case ApiId::clCreateCommandQueueWithPropertiesKHR:
      m_queues.endCreation(call, st.queues);
      break;
    case ApiId::clGetCommandQueueInfo:
      m_queues.endQueueInfo(call);
      break;
    case ApiId::clGetEventInfo:
      m_queues.endEventInfo(call);
      break;
    case ApiId::clGetEventProfilingInfo:
      m_queues.endProfilingInfo(call, st.queues);
      break;
    default:
      m_programs.callEnd(call);  // the programs built from source (others it ignores)
      break;
  }
  if (st.queues.twin) m_queues.endTwin(call, st.queues, m_timing.commandEvent(call, st.timing));
  // What recording costs the program's own threads, with its driver beside it (bench/record_cost
  // measures it without one): about one call in 64 per thread pays one more clock read to find
  // out (every call with HETOPT_DEBUG=1); the trace keeps it (RecordingCost) for the summary. The
  // gaps are random (32-95 calls), so a loop whose body divides 64 is not always timed at the
  // same call, and the first timed call is never a thread's first, which also registers it.
  const bool timeSelf = m_measureSelf || t_untilSelfTimed-- == 0;
  recordCall(call, hostNs);
  if (timeSelf) {
    if (!m_measureSelf) {
      if (!t_gapRandom)
        t_gapRandom = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(&t_gapRandom) >> 4) | 1u;
      t_gapRandom ^= t_gapRandom << 13;
      t_gapRandom ^= t_gapRandom >> 17;
      t_gapRandom ^= t_gapRandom << 5;
      t_untilSelfTimed = kSelfTimePeriod / 2 + (t_gapRandom % kSelfTimePeriod) - 1;
    }
    m_selfNs.fetch_add(trace::nsSince(st.startNs + hostNs), std::memory_order_relaxed);
    m_selfCalls.fetch_add(1, std::memory_order_relaxed);
  }
}

void TraceInterceptor::recordCall(CallRecord& call, uint64_t hostNs) {
  const CallState& st = call.callState<CallState>();
  const api::ApiInfo& info = api::apiInfo(call.id);
  const trace::CallView view{call.id, call.args, call.result, &call};
  const trace::CallOutcome outcome = trace::CallModel::outcome(view);
  // The event whose timestamps time the command (this restores the call as the program made it).
  cl_event produced = m_timing.take(call, st.timing, outcome.ok);
  const bool blocking = info.blockingArg >= 0 && call.args[info.blockingArg] != 0;
  if (!m_active.load(std::memory_order_relaxed)) {
    if (produced) m_timing.release(produced);  // not recorded (tracing stopped meanwhile)
    return;
  }
  const uint32_t tid = threadId();
  if (HETOPT_UNLIKELY(m_labels.names(call.id))) m_labels.note(view, outcome, labelOf);
  const uint64_t timingId =
      produced ? m_nextTimingId.fetch_add(1, std::memory_order_relaxed) + 1 : 0;
  // Gathered first (the host spans ask the shim), then written straight into the stream.
  raw::CallCopies copies;
  const size_t bytes = copies.gather(view, outcome, hostSpanOf);
  if (HETOPT_LIKELY(bytes <= raw::kMaxRecordBytes)) {
    const trace::RecordRing::Reservation r = m_stream.begin(bytes);
    raw::call(r.data, copies, tid, view, outcome, st.startNs, hostNs,
              DeviceTiming::unsampled(st.timing, outcome.ok), timingId);
    m_stream.end(r);
  }
  size_t pending = m_timing.pending();
  if (produced) {
    const uint64_t hostStart = m_recorder.sinceStart(st.startNs);
    pending = m_timing.addPending(produced, timingId, st.timing, call.args[0], hostStart,
                                  hostStart + hostNs);
  }
  m_timing.afterCall(info.kind == api::ApiKind::Sync || blocking, pending);
}

// ---- allocations --------------------------------------------------------------------------------

void TraceInterceptor::allocated(const AllocEvent& event) {
  if (!m_active.load(std::memory_order_relaxed)) return;
  const bool site = event.site && event.site->depth;
  const auto ptr = reinterpret_cast<uintptr_t>(event.ptr);
  const auto oldPtr = reinterpret_cast<uintptr_t>(event.oldPtr);
  const bool realloc = event.fn == AllocFn::Realloc;
  if (!site && !(realloc && oldPtr && m_blocks.mayContain(oldPtr))) return;  // neither side tracked
  {
    // Here, in program order (a block is freed before its address is handed out again): free()
    // must know a tracked block from the moment malloc returns it.
    std::lock_guard<std::mutex> lock(m_blocksMutex);
    if (realloc && oldPtr) m_blocks.erase(oldPtr);
    if (site) m_blocks.insert(ptr);
  }
  const unsigned depth = site ? event.site->depth : 0;
  static_assert(sizeof(uintptr_t) == sizeof(uint64_t), "return addresses are recorded as 64-bit");
  // Before the reservation: a thread's first record is its own, and the place is held no longer
  // than the copy takes.
  const uint32_t tid = threadId();
  const uint64_t atNs = trace::monotonicNs();
  const trace::RecordRing::Reservation r = m_stream.begin(raw::allocBytes(depth));
  raw::alloc(r.data, tid, atNs, static_cast<uint8_t>(event.fn), ptr, event.size, event.alignment,
             realloc ? oldPtr : 0,
             reinterpret_cast<const uint64_t*>(event.site ? event.site->pcs : nullptr), depth);
  m_stream.end(r);
}

void TraceInterceptor::freeing(void* ptr) {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  if (!m_active.load(std::memory_order_relaxed) || !m_blocks.mayContain(p)) return;
  {
    std::lock_guard<std::mutex> lock(m_blocksMutex);
    m_blocks.erase(p);
  }
  const uint32_t tid = threadId();
  const uint64_t atNs = trace::monotonicNs();
  const trace::RecordRing::Reservation r = m_stream.begin(raw::kFreeBytes);
  raw::free(r.data, tid, atNs, p);
  m_stream.end(r);
}

void TraceInterceptor::processExit() {
  // A vfork() child shares this memory: the trace is its parent's.
  if (getpid() != m_pid.load(std::memory_order_relaxed) || !m_active.exchange(false)) return;
  const uint64_t exitStartNs = trace::monotonicNs();
  // No OpenCL calls at exit (the runtime may be gone): what is still pending has no timing.
  m_timing.abandonAll();
  m_stream.stop(2000000000ull);
  // Bounded: a recording thread stuck on a lock the program holds at exit must not hang it.
  if (!lockWithin(m_recorder.mutex(), 5000000000ull)) {
    warn("trace mode: the recording thread did not stop; %s ends at its last checkpoint",
         m_config.path.c_str());
    return;
  }
  std::unique_lock<std::mutex> lock(m_recorder.mutex(), std::adopt_lock);
  // Records still being written by threads that saw tracing on: a moment for them.
  m_stream.drainLocked(1000000000ull);
  finish();
  m_programs.write(m_path);
  if (optionFlag(Option::TIMINGS))
    warn(
        "timings: recording thread %.1f ms CPU; at exit %.1f ms (stopping it, the last records, "
        "writing the trace's end)",
        static_cast<double>(m_stream.threadCpuNs()) / 1e6,
        static_cast<double>(trace::monotonicNs() - exitStartNs) / 1e6);
  debug("trace written to %s (%llu events)", m_config.path.c_str(),
        static_cast<unsigned long long>(m_recorder.eventsRecorded()));
  if (const uint64_t calls = m_selfCalls.load(std::memory_order_relaxed); calls && m_measureSelf)
    debug(
        "recording after each call took %.1f ms in all, %.0f ns per call (%llu calls)",
        static_cast<double>(m_selfNs.load(std::memory_order_relaxed)) / 1e6,
        static_cast<double>(m_selfNs.load(std::memory_order_relaxed)) / static_cast<double>(calls),
        static_cast<unsigned long long>(calls));
}

void TraceInterceptor::finish() {
  m_active.store(false, std::memory_order_relaxed);
  m_applier.abandonTimings();  // their commands count as missing
  m_recorder.noteRecordingCost(m_selfCalls.load(std::memory_order_relaxed),
                               m_selfNs.load(std::memory_order_relaxed));
  m_recorder.noteStartup(m_firstCallNs.load(std::memory_order_relaxed),
                         m_firstContextNs.load(std::memory_order_relaxed));
  m_recorder.finish();
}

void TraceInterceptor::quickExit() {
  if (getpid() != m_pid.load(std::memory_order_relaxed) ||
      m_signalled.load(std::memory_order_relaxed) || !m_active.load(std::memory_order_relaxed))
    return;
  // Without a recording thread (it starts at the first record) nothing was queued: this thread
  // writes the trace's end, when it can at once.
  m_stream.finishAtExit(2000000000ull);
}

bool TraceInterceptor::unmapping(void*, size_t, bool discard) {
  // Only the program's own unmapping (the shim's and the recording thread's are nested deeper).
  if (discard || t_depth > 1 || !m_active.load(std::memory_order_relaxed) ||
      m_stream.ring().empty())
    return false;
  std::lock_guard<std::mutex> lock(m_recorder.mutex());
  m_stream.drainLocked(100000000ull);
  return false;
}

void TraceInterceptor::beforeExec(const char* program) {
  if (getpid() != m_pid.load(std::memory_order_relaxed) ||
      !m_active.load(std::memory_order_relaxed))
    return;
  if (!lockWithin(m_recorder.mutex(), 1000000000ull)) return;
  std::unique_lock<std::mutex> lock(m_recorder.mutex(), std::adopt_lock);
  m_stream.drainLocked(100000000ull);
  m_recorder.snapshotBeforeExec(program ? program : "");
}

Interceptor* makeTraceInterceptor() { return TraceInterceptor::create(); }

}  // namespace hetopt::shim
