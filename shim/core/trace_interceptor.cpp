// SPDX-License-Identifier: MIT
/** @file Trace mode; see trace_interceptor.h. */
#include "shim/core/trace_interceptor.h"

#include <CL/cl_ext.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>

#include "common/log.h"
#include "common/options.h"
#include "hetopt/version.h"
#include "shim/core/callsite.h"
#include "shim/core/host_ranges.h"
#include "shim/core/state.h"
#include "trace/time_sampler.h"

namespace hetopt::shim {
namespace {

using api::ApiId;
using api::ArgClass;
using api::ArgRole;
using trace::HostAccess;
using trace::ObjectId;
using trace::ObjectKind;

TraceInterceptor* s_instance = nullptr;
pthread_key_t s_threadKey;
/// (recorder generation << 32) | (thread index + 1) of this thread; 0 before its first event.
HETOPT_TLS uint64_t t_traceThread = 0;
/// This thread's device-timing sampler (made at its first enqueue on a profiled queue).
HETOPT_TLS trace::TimeSampler* t_sampler = nullptr;
pthread_key_t s_samplerKey;
uint64_t s_samplePeriod = trace::TimeSampler::kDefaultPeriod;
/// HETOPT_TIME_QUEUE=twin (default): timed commands run on profiling twins of unprofiled queues.
bool s_twinQueues = true;

void deleteSampler(void* p) { delete static_cast<trace::TimeSampler*>(p); }

trace::TimeSampler& threadSampler() {
  if (HETOPT_UNLIKELY(!t_sampler)) {
    // Seeded per thread so that threads running the same loop do not time the same positions.
    const auto seed = static_cast<uint64_t>(syscall(SYS_gettid)) * 0x9e3779b97f4a7c15ull ^ trace::monotonicNs();
    t_sampler = new trace::TimeSampler(s_samplePeriod, seed);
    pthread_setspecific(s_samplerKey, t_sampler);
  }
  return *t_sampler;
}

/// The sampler's key of an enqueue: what the compressor folds on, the function and the OpenCL
/// objects it names (queue, buffers, kernel, ...). Host memory is left out: a loop that writes one
/// buffer from two host blocks is two leaves of one key, and random positions sample both.
uint64_t sampleKey(const CallRecord& call, const api::ApiInfo& info) {
  uint64_t key = trace::TimeSampler::combine(0, static_cast<uint64_t>(call.id));
  for (unsigned i = 0; i < info.numArgs; ++i) {
    switch (info.args[i].cls) {
      case ArgClass::Queue:
      case ArgClass::Mem:
      case ArgClass::Kernel:
      case ArgClass::Sampler:
        key = trace::TimeSampler::combine(key, call.args[i]);
        break;
      default:
        break;
    }
  }
  return key;
}

/// Device commands a twin queue may run for the program: transfers, fills, copies, map/unmap and
/// kernels. Not markers, barriers and clEnqueueWaitForEvents (their place in the program's queue is
/// what they do), nor migrations, SVM and USM commands, native kernels or external/GL interop
/// acquire/release (tied to the queue, the host or another API): those stay untimed on twin queues.
bool twinnable(ApiId id) {
  switch (id) {
    case ApiId::clEnqueueReadBuffer:
    case ApiId::clEnqueueReadBufferRect:
    case ApiId::clEnqueueWriteBuffer:
    case ApiId::clEnqueueWriteBufferRect:
    case ApiId::clEnqueueFillBuffer:
    case ApiId::clEnqueueCopyBuffer:
    case ApiId::clEnqueueCopyBufferRect:
    case ApiId::clEnqueueReadImage:
    case ApiId::clEnqueueWriteImage:
    case ApiId::clEnqueueFillImage:
    case ApiId::clEnqueueCopyImage:
    case ApiId::clEnqueueCopyImageToBuffer:
    case ApiId::clEnqueueCopyBufferToImage:
    case ApiId::clEnqueueMapBuffer:
    case ApiId::clEnqueueMapImage:
    case ApiId::clEnqueueUnmapMemObject:
    case ApiId::clEnqueueNDRangeKernel:
    case ApiId::clEnqueueTask:
      return true;
    default:
      return false;
  }
}

/// Where a function's event output and blocking flag are, looked up once per function rather
/// than by scanning its arguments on every call.
struct CallShape {
  int8_t eventArg = -1;     ///< the cl_event* output (the API table gives a function at most one)
  int8_t blockingArg = -1;  ///< the cl_bool blocking_* argument
};
std::array<CallShape, api::kApiCount> s_shapes;  // filled by TraceInterceptor::create()
void fillCallShapes() {
  for (size_t f = 0; f < api::kApiCount; ++f) {
    const api::ApiInfo& info = api::apiInfo(static_cast<ApiId>(f));
    CallShape shape;
    for (unsigned i = 0; i < info.numArgs; ++i) {
      if (info.args[i].role == ArgRole::EventOut) shape.eventArg = static_cast<int8_t>(i);
      if (info.args[i].cls == ArgClass::Scalar && !strncmp(info.args[i].name, "blocking", 8))
        shape.blockingArg = static_cast<int8_t>(i);
    }
    s_shapes[f] = shape;
  }
}
const CallShape& callShape(ApiId id) { return s_shapes[static_cast<size_t>(id)]; }
int eventOutArg(ApiId id) { return callShape(id).eventArg; }

/// A command on its way through a twin queue: what to restore and release at its end.
struct TwinCall {
  uint64_t appQueue;
  int waitArg;                   ///< event_wait_list's index; its count is info.args[waitArg].refs[0]
  uint64_t numEvents, eventList;  ///< the application's wait list
  cl_event fence;                ///< the marker on the application's queue the command waits for
  bool outOfOrder;
  std::vector<cl_event> list;    ///< the application's wait list + the fence
};

enum ScratchFlags : uintptr_t {
  kInjectedEvent = 1,  ///< we passed an event of ours for the device timing
  kHideProfiling = 2,
  kTimeable = 4,       ///< an enqueue on a queue we profile: a device command we could time
  kTimed = 8,          ///< ... chosen by the sampler: its timestamps are read
  kSampled = 16,       ///< ... as the sample of its block (weight: the period), not in the census
  kTwin = 32,          ///< ... sent to its queue's twin (scratch[2]: its TwinCall)
};

constexpr size_t kMaxArrayRefs = 16;   ///< handles/pointers read from one array argument
constexpr size_t kMaxPending = 8192;   ///< device timings waiting before we give up on the oldest

uint64_t startOf(const CallRecord& c) { return reinterpret_cast<uintptr_t>(c.scratch[0]); }
uintptr_t flagsOf(const CallRecord& c) { return reinterpret_cast<uintptr_t>(c.scratch[3]); }
void addFlag(CallRecord& c, uintptr_t f) { c.scratch[3] = reinterpret_cast<void*>(flagsOf(c) | f); }

std::string readFile(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) return {};
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  fclose(f);
  return s;
}

std::string selfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("?");
}

std::string substitutePid(const std::string& pattern, long pid) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'p') {
      out += std::to_string(pid);
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

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

bool kindOf(ArgClass cls, ObjectKind* kind) {
  switch (cls) {
    case ArgClass::Platform: *kind = ObjectKind::Platform; return true;
    case ArgClass::Device: *kind = ObjectKind::Device; return true;
    case ArgClass::Context: *kind = ObjectKind::Context; return true;
    case ArgClass::Queue: *kind = ObjectKind::Queue; return true;
    case ArgClass::Mem: *kind = ObjectKind::Mem; return true;
    case ArgClass::Program: *kind = ObjectKind::Program; return true;
    case ArgClass::Kernel: *kind = ObjectKind::Kernel; return true;
    case ArgClass::Sampler: *kind = ObjectKind::Sampler; return true;
    default: return false;  // scalars, pointers, callbacks; events are not tracked objects
  }
}

/// The kind of handles an out_handles array holds, from its C type ("cl_device_id *").
bool kindOfArray(const char* type, ObjectKind* kind) {
  if (strstr(type, "cl_platform_id")) return *kind = ObjectKind::Platform, true;
  if (strstr(type, "cl_device_id")) return *kind = ObjectKind::Device, true;
  if (strstr(type, "cl_kernel")) return *kind = ObjectKind::Kernel, true;
  if (strstr(type, "cl_mem")) return *kind = ObjectKind::Mem, true;
  return false;
}

// ---- pthread hooks ------------------------------------------------------------------------------

void threadKeyDestructor(void* value) {
  auto v = reinterpret_cast<uintptr_t>(value);
  if (s_instance && v) {
    ScopedInternal internal;
    s_instance->threadExit(static_cast<uint32_t>(v & 0xffffffffu) - 1, static_cast<uint32_t>(v >> 32));
  }
}

}  // namespace

// ---- creation -----------------------------------------------------------------------------------

TraceInterceptor* TraceInterceptor::create() {
  ScopedInternal internal;
  fillCallShapes();
  auto* t = new TraceInterceptor();
  const std::string exe = selfExe();
  const std::string value = optionString(Option::TRACE_FILE);
  std::string pattern;
  if (value.empty()) {
    const size_t slash = exe.rfind('/');
    pattern = "./hetopt-" + exe.substr(slash == std::string::npos ? 0 : slash + 1) + "-%p.trace";
    t->m_childPattern = pattern;
  } else if (value.find("%p") != std::string::npos) {
    pattern = value;
    t->m_childPattern = value;
  } else {
    // This process writes the named file; its exec'd children (which inherit the environment)
    // and forked children write <file>.<their pid>.
    pattern = value;
    t->m_childPattern = value + ".%p";
    setenv(optionInfo(Option::TRACE_FILE).envName, t->m_childPattern.c_str(), 1);
  }
  t->m_config.path = substitutePid(pattern, getpid());
  t->m_measureSelf = debugEnabled();
  t->m_config.modules = moduleLookup;
  t->m_config.writeFailed = [](const std::string& path, const std::string& error) {
    warn("trace mode: cannot write %s (%s); the trace ends here, marked incomplete, and the "
         "program goes on", path.c_str(), error.c_str());
  };
  trace::FileHeader& h = t->m_config.header;
  h.pid = static_cast<uint64_t>(getpid());
  h.parentPid = static_cast<uint64_t>(getppid());
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  h.startUnixNs = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  h.writerVersion = HETOPT_VERSION_STRING;
  h.program = exe;
  h.arguments = readFile("/proc/self/cmdline");
  std::string error;
  if (!t->m_recorder.open(t->m_config, &error)) {
    warn("trace mode: %s; running untraced", error.c_str());
    delete t;
    return nullptr;
  }
  bool periodOk = true;
  s_samplePeriod = optionUnsigned(Option::TIME_SAMPLE, 0, 1u << 20, &periodOk);
  if (!periodOk)
    warn("trace mode: HETOPT_TIME_SAMPLE='%s' is not a number in 0..1048576; using %s",
         optionString(Option::TIME_SAMPLE), optionInfo(Option::TIME_SAMPLE).defaultValue);
  const std::string timeQueue = optionString(Option::TIME_QUEUE);
  if (timeQueue == "profiled") {
    s_twinQueues = false;
  } else if (timeQueue == "auto") {
    // Every command timed: a fence per command costs more than a profiled queue (H100: +115% vs
    // +60% on a call-bound loop, docs/results.md).
    s_twinQueues = s_samplePeriod != 1;
  } else if (timeQueue != "twin") {
    warn("trace mode: HETOPT_TIME_QUEUE='%s' is not auto, twin or profiled; using auto", timeQueue.c_str());
    s_twinQueues = s_samplePeriod != 1;
  }
  s_instance = t;
  pthread_key_create(&s_threadKey, threadKeyDestructor);
  pthread_key_create(&s_samplerKey, deleteSampler);
  debug("tracing to %s", t->m_config.path.c_str());
  return t;
}

uint32_t TraceInterceptor::threadIndex() {
  const uint32_t gen = m_recorder.generation();
  if (t_traceThread && (t_traceThread >> 32) == gen) return static_cast<uint32_t>(t_traceThread & 0xffffffffu) - 1;
  const uint32_t index = m_recorder.thread(static_cast<uint64_t>(syscall(SYS_gettid)));
  t_traceThread = (uint64_t{gen} << 32) | (index + 1);
  pthread_setspecific(s_threadKey, reinterpret_cast<void*>(static_cast<uintptr_t>(t_traceThread)));
  return index;
}

void TraceInterceptor::threadExit(uint32_t thread, uint32_t generation) {
  auto lock = m_recorder.lock();
  if (m_active && generation == m_recorder.generation()) m_recorder.threadExit(thread);
}

// ---- fork -----------------------------------------------------------------------------------------

void TraceInterceptor::forkPrepare() { m_recorder.mutex().lock(); }
void TraceInterceptor::forkParent() { m_recorder.mutex().unlock(); }

void TraceInterceptor::forkChild() {
  m_recorder.mutex().unlock();
  auto lock = m_recorder.lock();
  if (!m_active) return;
  m_pending.clear();  // the parent's events: the parent reads and releases them
  m_selfNs = 0;       // the parent's recording cost is in the parent's trace
  m_selfCalls = 0;
  trace::RecorderConfig c = m_config;
  c.path = substitutePid(m_childPattern, getpid());
  c.header.pid = static_cast<uint64_t>(getpid());
  c.header.parentPid = static_cast<uint64_t>(getppid());
  std::string error;
  if (!m_recorder.restartInChild(c, &error)) {
    warn("trace mode: forked child: %s; the child runs untraced", error.c_str());
    m_active = false;
  }
}

// ---- queues and profiling -------------------------------------------------------------------------

namespace {
struct QueueCreation {
  std::vector<cl_queue_properties> array;  ///< what we pass instead of the application's
  uint64_t originalArg = 0;                ///< the application's properties argument
  bool modified = false;
};
}  // namespace

void TraceInterceptor::beginQueueCreation(CallRecord& call) {
  auto* qc = new QueueCreation();
  call.scratch[2] = qc;
  qc->originalArg = call.args[2];
  // Twin mode: the queue is made as asked; the list is still read (device-side queues stay out).
  const bool addProfiling = !s_twinQueues;
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
          call.scratch[2] = nullptr;
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
      call.scratch[2] = nullptr;
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

void TraceInterceptor::endQueueCreation(CallRecord& call) {
  auto* qc = static_cast<QueueCreation*>(call.scratch[2]);
  if (!qc) return;
  call.scratch[2] = nullptr;
  if (qc->modified && call.result == 0) {
    // A driver that refuses profiling: create the queue as asked, untimed.
    call.args[2] = qc->originalArg;
    auto* errcode = reinterpret_cast<cl_int*>(call.args[3]);
    if (call.id == ApiId::clCreateCommandQueue) {
      using Fn = cl_command_queue(CL_API_CALL*)(cl_context, cl_device_id, cl_command_queue_properties, cl_int*);
      if (auto fn = real<Fn>(call.id))
        call.result = reinterpret_cast<uintptr_t>(fn(reinterpret_cast<cl_context>(call.args[0]),
                                                     reinterpret_cast<cl_device_id>(call.args[1]),
                                                     qc->originalArg, errcode));
    } else if (call.id == ApiId::clCreateCommandQueueWithProperties) {
      using Fn = cl_command_queue(CL_API_CALL*)(cl_context, cl_device_id, const cl_queue_properties*, cl_int*);
      if (auto fn = real<Fn>(call.id))
        call.result = reinterpret_cast<uintptr_t>(fn(reinterpret_cast<cl_context>(call.args[0]),
                                                     reinterpret_cast<cl_device_id>(call.args[1]),
                                                     reinterpret_cast<const cl_queue_properties*>(qc->originalArg),
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
    info.twin = s_twinQueues && !(info.properties & CL_QUEUE_PROFILING_ENABLE);
    info.context = reinterpret_cast<cl_context>(call.args[0]);
    info.device = reinterpret_cast<cl_device_id>(call.args[1]);
    auto lock = m_recorder.lock();
    m_queues[call.result] = std::move(info);
    m_queuesVersion.fetch_add(1, std::memory_order_release);
  }
  delete qc;
}

void TraceInterceptor::fixQueueInfo(CallRecord& call) {
  const cl_command_queue_info param = static_cast<cl_command_queue_info>(call.args[1]);
  if (param != CL_QUEUE_PROPERTIES && param != CL_QUEUE_PROPERTIES_ARRAY) return;
  QueueInfo info;
  {
    auto lock = m_recorder.lock();
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
      *static_cast<cl_command_queue_properties*>(value) &= ~cl_command_queue_properties{CL_QUEUE_PROFILING_ENABLE};
    return;
  }
  // CL_QUEUE_PROPERTIES_ARRAY: answer with the application's own array, as the driver would have.
  if (status != CL_SUCCESS && status != CL_INVALID_VALUE) return;
  const size_t bytes = info.hadArray ? info.propertiesArray.size() * sizeof(cl_queue_properties) : 0;
  if (value && size < bytes) {
    call.result = static_cast<uint32_t>(CL_INVALID_VALUE);
    return;
  }
  if (value && bytes) memcpy(value, info.propertiesArray.data(), bytes);
  if (sizeRet) *sizeRet = bytes;
  call.result = CL_SUCCESS;
}

// ---- twin queues ---------------------------------------------------------------------------------

cl_command_queue TraceInterceptor::twinOf(uint64_t queue) {
  cl_context context;
  cl_device_id device;
  cl_command_queue_properties props;
  {
    auto lock = m_recorder.lock();
    auto it = m_queues.find(queue);
    if (it == m_queues.end() || it->second.twinFailed) return nullptr;
    if (it->second.twinQueue) return it->second.twinQueue;
    context = it->second.context;
    device = it->second.device;
    props = CL_QUEUE_PROFILING_ENABLE | (it->second.properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  }
  // Made outside the lock: a driver thread may allocate (and so reach the recorder) meanwhile.
  cl_command_queue twin = nullptr;
  cl_int err = CL_INVALID_OPERATION;
  using WithProps = cl_command_queue(CL_API_CALL*)(cl_context, cl_device_id, const cl_queue_properties*, cl_int*);
  using Plain = cl_command_queue(CL_API_CALL*)(cl_context, cl_device_id, cl_command_queue_properties, cl_int*);
  if (auto fn = real<WithProps>(ApiId::clCreateCommandQueueWithProperties)) {
    const cl_queue_properties list[] = {CL_QUEUE_PROPERTIES, props, 0};
    twin = fn(context, device, list, &err);
  }
  if (!twin) {
    if (auto fn = real<Plain>(ApiId::clCreateCommandQueue)) twin = fn(context, device, props, &err);
  }
  using RelFn = cl_int(CL_API_CALL*)(cl_command_queue);
  auto lock = m_recorder.lock();
  auto it = m_queues.find(queue);
  if (it != m_queues.end() && !it->second.twinQueue && !it->second.twinFailed) {
    if (twin) {
      it->second.twinQueue = twin;
      m_twinToApp[reinterpret_cast<uintptr_t>(twin)] = queue;
      return twin;
    }
    it->second.twinFailed = true;
    m_queuesVersion.fetch_add(1, std::memory_order_release);
    warn("trace mode: no profiling queue beside the program's (error %d); its commands stay untimed", err);
    return nullptr;
  }
  // Another thread made one meanwhile (or the queue went): keep that one.
  cl_command_queue kept = it != m_queues.end() ? it->second.twinQueue : nullptr;
  if (twin) {
    if (auto rel = real<RelFn>(ApiId::clReleaseCommandQueue)) rel(twin);
  }
  return kept;
}

bool TraceInterceptor::beginTwin(CallRecord& call, uint64_t queue, int eventArg) {
  const api::ApiInfo& info = api::apiInfo(call.id);
  int waitArg = -1;
  for (unsigned i = 0; i < info.numArgs; ++i)
    if (info.args[i].role == ArgRole::Wait) waitArg = static_cast<int>(i);
  if (waitArg < 0 || eventArg < 0 || info.args[waitArg].refs[0] < 0) return false;
  const uint64_t numEvents = call.args[info.args[waitArg].refs[0]];
  const uint64_t eventList = call.args[waitArg];
  // A wait list the driver will refuse: the application's queue gives its own error.
  if ((numEvents == 0) != (eventList == 0) || numEvents > 4096) return false;
  cl_command_queue twin = twinOf(queue);
  if (!twin) return false;
  using MarkerFn = cl_int(CL_API_CALL*)(cl_command_queue, cl_uint, const cl_event*, cl_event*);
  using FlushFn = cl_int(CL_API_CALL*)(cl_command_queue);
  auto marker = real<MarkerFn>(ApiId::clEnqueueMarkerWithWaitList);
  auto flush = real<FlushFn>(ApiId::clFlush);
  if (!marker || !flush) return false;
  auto app = reinterpret_cast<cl_command_queue>(queue);
  // The fence: the command starts after everything the program enqueued before it. Flushed, so
  // that the twin (and a blocking command on it) never waits for a marker nobody submitted.
  cl_event fence = nullptr;
  if (marker(app, 0, nullptr, &fence) != CL_SUCCESS || !fence) return false;
  if (flush(app) != CL_SUCCESS) {
    if (auto rel = real<cl_int(CL_API_CALL*)(cl_event)>(ApiId::clReleaseEvent)) rel(fence);
    return false;
  }
  auto* tc = new TwinCall{queue, waitArg, numEvents, eventList, fence, false, {}};
  {
    auto lock = m_recorder.lock();
    auto it = m_queues.find(queue);
    tc->outOfOrder = it != m_queues.end() && (it->second.properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  }
  const auto* list = reinterpret_cast<const cl_event*>(eventList);
  tc->list.assign(list, list + numEvents);
  tc->list.push_back(fence);
  call.scratch[2] = tc;
  call.args[0] = reinterpret_cast<uintptr_t>(twin);
  call.args[info.args[waitArg].refs[0]] = tc->list.size();
  call.args[waitArg] = reinterpret_cast<uintptr_t>(tc->list.data());
  addFlag(call, kTwin);
  return true;
}

void TraceInterceptor::endTwin(CallRecord& call, int eventArg) {
  auto* tc = static_cast<TwinCall*>(call.scratch[2]);
  call.scratch[2] = nullptr;
  if (!tc) return;
  const api::ApiInfo& info = api::apiInfo(call.id);
  const uint64_t twin = call.args[0];
  call.args[0] = tc->appQueue;
  call.args[info.args[tc->waitArg].refs[0]] = tc->numEvents;
  call.args[tc->waitArg] = tc->eventList;
  using RelFn = cl_int(CL_API_CALL*)(cl_event);
  using FenceFn = cl_int(CL_API_CALL*)(cl_command_queue, cl_uint, const cl_event*, cl_event*);
  using QueueFn = cl_int(CL_API_CALL*)(cl_command_queue);
  using WaitFn = cl_int(CL_API_CALL*)(cl_uint, const cl_event*);
  auto rel = real<RelFn>(ApiId::clReleaseEvent);
  if (rel) rel(tc->fence);
  // The command's event: the one we injected, or the application's. None: it was not enqueued.
  cl_event done = nullptr;
  if (flagsOf(call) & kInjectedEvent)
    done = static_cast<cl_event>(call.scratch[1]);
  else if (eventArg >= 0 && call.args[eventArg])
    done = *reinterpret_cast<cl_event*>(call.args[eventArg]);
  const bool enqueued = done && (info.returnClass == ArgClass::Scalar ? static_cast<cl_int>(call.result) == CL_SUCCESS
                                                                      : call.result != 0);
  if (enqueued) {
    // Later commands of the program's queue (and its clFinish) wait for the command. In an
    // out-of-order queue a marker does that without ordering the commands around it.
    auto app = reinterpret_cast<cl_command_queue>(tc->appQueue);
    auto fence = real<FenceFn>(tc->outOfOrder ? ApiId::clEnqueueMarkerWithWaitList : ApiId::clEnqueueBarrierWithWaitList);
    auto flush = real<QueueFn>(ApiId::clFlush);
    if (flush) flush(reinterpret_cast<cl_command_queue>(twin));
    if (!fence || fence(app, 1, &done, nullptr) != CL_SUCCESS) {
      // Nothing on the program's queue can stand for the command: it completes here instead.
      if (auto wait = real<WaitFn>(ApiId::clWaitForEvents)) wait(1, &done);
    }
  }
  delete tc;
}

void TraceInterceptor::releaseTwin(uint64_t queue) {
  using QueueFn = cl_int(CL_API_CALL*)(cl_command_queue);
  cl_command_queue twin;
  {
    auto lock = m_recorder.lock();
    auto it = m_queues.find(queue);
    // The program's own count (CL_QUEUE_REFERENCE_COUNT includes the driver's references, which
    // in-flight commands and events hold on some drivers).
    if (it == m_queues.end() || !it->second.twin || --it->second.appRefs > 0) return;
    twin = it->second.twinQueue;
    if (twin) m_twinToApp.erase(reinterpret_cast<uintptr_t>(twin));
    m_queues.erase(it);
    m_queuesVersion.fetch_add(1, std::memory_order_release);
  }
  if (!twin) return;
  // The program's last reference: its twin goes now, its commands' timings read first. Waiting
  // costs nothing where the program finished its queue before releasing it, as programs do.
  if (auto finish = real<QueueFn>(ApiId::clFinish)) finish(twin);
  resolvePending(false);
  if (auto rel = real<QueueFn>(ApiId::clReleaseCommandQueue)) rel(twin);
}

// ---- calls ---------------------------------------------------------------------------------------

void TraceInterceptor::noteStartup(api::ApiId id) {
  const uint64_t now = std::max<uint64_t>(m_recorder.elapsedNs(), 1);
  uint64_t none = 0;
  m_firstCallNs.compare_exchange_strong(none, now, std::memory_order_relaxed);
  if (id == ApiId::clCreateContext || id == ApiId::clCreateContextFromType) {
    none = 0;
    m_firstContextNs.compare_exchange_strong(none, now, std::memory_order_relaxed);
  }
}

void TraceInterceptor::callBegin(CallRecord& call) {
  if (!m_active) return;
  call.scratch[0] = reinterpret_cast<void*>(static_cast<uintptr_t>(trace::monotonicNs()));
  // The program's start-up as `hetopt run` can overlap it: when its OpenCL use and its first
  // context begin (the Startup record).
  if (HETOPT_UNLIKELY(m_firstContextNs.load(std::memory_order_relaxed) == 0)) noteStartup(call.id);
  const api::ApiInfo& info = api::apiInfo(call.id);
  switch (call.id) {
    case ApiId::clCreateCommandQueue:
    case ApiId::clCreateCommandQueueWithProperties:
    case ApiId::clCreateCommandQueueWithPropertiesKHR:
      // HETOPT_TIME_SAMPLE=0: no device timing at all; queues stay as the program made them.
      if (s_samplePeriod != 0) beginQueueCreation(call);
      return;
    case ApiId::clReleaseCommandQueue:
      resolvePending(false);  // their events may not outlive them on every driver
      releaseTwin(call.args[0]);
      return;
    case ApiId::clRetainCommandQueue: {
      auto lock = m_recorder.lock();
      auto it = m_queues.find(call.args[0]);
      if (it != m_queues.end()) ++it->second.appRefs;
      return;
    }
    case ApiId::clReleaseContext:
      resolvePending(false);
      return;
    case ApiId::clGetEventProfilingInfo: {
      // Events of queues where only we asked for profiling answer as if profiling were off.
      using Fn = cl_int(CL_API_CALL*)(cl_event, cl_event_info, size_t, void*, size_t*);
      auto fn = real<Fn>(ApiId::clGetEventInfo);
      cl_command_queue q = nullptr;
      if (fn && fn(reinterpret_cast<cl_event>(call.args[0]), CL_EVENT_COMMAND_QUEUE, sizeof q, &q,
                   nullptr) == CL_SUCCESS && q) {
        auto lock = m_recorder.lock();
        auto it = m_queues.find(reinterpret_cast<uintptr_t>(q));
        if ((it != m_queues.end() && it->second.addedProfiling) || m_twinToApp.count(reinterpret_cast<uintptr_t>(q))) {
          addFlag(call, kHideProfiling);
          call.args[3] = 0;  // nothing is written to the application's memory
          call.args[4] = 0;
        }
      }
      return;
    }
    default:
      break;
  }
  if (info.kind == api::ApiKind::Query || info.numArgs == 0 || info.args[0].cls != ArgClass::Queue) return;
  const int eventArg = eventOutArg(call.id);
  if (eventArg < 0) return;
  // What this thread last saw of the queue, good while no queue was added, failed or dropped
  // since (m_queuesVersion): most enqueues then take no lock here.
  struct QueueView {
    const TraceInterceptor* owner = nullptr;
    uint64_t version = 0, queue = 0;
    bool known = false, twin = false, twinFailed = false;
  };
  static thread_local QueueView t_view;
  if (t_view.owner != this || t_view.queue != call.args[0] ||
      t_view.version != m_queuesVersion.load(std::memory_order_acquire)) {
    auto lock = m_recorder.lock();
    auto it = m_queues.find(call.args[0]);
    t_view.owner = this;
    t_view.queue = call.args[0];
    t_view.version = m_queuesVersion.load(std::memory_order_relaxed);
    t_view.known = it != m_queues.end();
    t_view.twin = t_view.known && it->second.twin;
    t_view.twinFailed = t_view.known && it->second.twinFailed;
  }
  if (!t_view.known || (t_view.twin && t_view.twinFailed)) return;
  const bool twin = t_view.twin;
  if (twin && !twinnable(call.id)) return;  // a command of an unprofiled queue that stays there
  addFlag(call, kTimeable);
  // Only sampled commands get an event read (and, where the application passed none, injected).
  const uint64_t weight = threadSampler().weight(sampleKey(call, info));
  if (!weight) return;
  if (twin && !beginTwin(call, call.args[0], eventArg)) return;  // untimed where it was
  addFlag(call, weight > 1 ? kTimed | kSampled : kTimed);
  if (call.args[eventArg] == 0) {
    call.scratch[1] = nullptr;
    call.args[eventArg] = reinterpret_cast<uintptr_t>(&call.scratch[1]);
    addFlag(call, kInjectedEvent);
  }
}

void TraceInterceptor::callEnd(CallRecord& call) {
  if (!m_active || !call.scratch[0]) return;
  const uint64_t hostNs = trace::monotonicNs() - startOf(call);
  switch (call.id) {
    case ApiId::clCreateCommandQueue:
    case ApiId::clCreateCommandQueueWithProperties:
    case ApiId::clCreateCommandQueueWithPropertiesKHR:
      endQueueCreation(call);
      break;
    case ApiId::clGetCommandQueueInfo:
      fixQueueInfo(call);
      break;
    case ApiId::clGetEventInfo:
      // An event of a twin command: its queue is the application's.
      if (call.args[1] == CL_EVENT_COMMAND_QUEUE && static_cast<cl_int>(call.result) == CL_SUCCESS &&
          call.args[3] && call.args[2] >= sizeof(cl_command_queue)) {
        auto* q = reinterpret_cast<cl_command_queue*>(call.args[3]);
        auto lock = m_recorder.lock();
        auto it = m_twinToApp.find(reinterpret_cast<uintptr_t>(*q));
        if (it != m_twinToApp.end()) *q = reinterpret_cast<cl_command_queue>(it->second);
      }
      break;
    case ApiId::clGetEventProfilingInfo:
      if (flagsOf(call) & kHideProfiling) {
        const auto status = static_cast<cl_int>(call.result);
        if (status == CL_SUCCESS || status == CL_PROFILING_INFO_NOT_AVAILABLE || status == CL_INVALID_VALUE)
          call.result = static_cast<uint32_t>(CL_PROFILING_INFO_NOT_AVAILABLE);
      }
      break;
    default:
      break;
  }
  if (flagsOf(call) & kTwin) endTwin(call, eventOutArg(call.id));
  // What recording costs the program's own threads, with its driver beside it (bench/record_cost
  // measures it without one): about one call in 64 per thread pays one more clock read to find
  // out (every call with HETOPT_DEBUG=1); the trace keeps it (RecordingCost) for the summary. The
  // gaps are random (32-95 calls), so a loop whose body divides 64 is not always timed at the
  // same call, and the first timed call is never a thread's first, which also registers it.
  static thread_local uint32_t t_untilSelfTimed = kSelfTimePeriod / 2 - 1;
  static thread_local uint32_t t_gapRandom = 0;  // xorshift state, seeded on first use
  const bool timeSelf = m_measureSelf || t_untilSelfTimed-- == 0;
  recordCall(call, hostNs);
  if (timeSelf) {
    if (!m_measureSelf) {
      if (!t_gapRandom) t_gapRandom = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(&t_gapRandom) >> 4) | 1u;
      t_gapRandom ^= t_gapRandom << 13;
      t_gapRandom ^= t_gapRandom >> 17;
      t_gapRandom ^= t_gapRandom << 5;
      t_untilSelfTimed = kSelfTimePeriod / 2 + (t_gapRandom % kSelfTimePeriod) - 1;
    }
    m_selfNs.fetch_add(trace::monotonicNs() - (startOf(call) + hostNs), std::memory_order_relaxed);
    m_selfCalls.fetch_add(1, std::memory_order_relaxed);
  }
}

void TraceInterceptor::hostRef(trace::Leaf* leaf, uint8_t arg, uint64_t ptr, uint64_t bytes,
                               uint64_t span, HostAccess access) {
  if (!ptr) return;
  trace::HostTarget t = m_recorder.resolveHost(ptr, std::max<uint64_t>(span, 1));
  if (!t.obj) return;
  trace::ObjectTable& objects = m_recorder.objects();
  trace::Ref r;
  r.obj = t.obj;
  r.arg = arg;
  r.access = access;
  r.flags = trace::kRefHost;
  // The call defines a new version of host memory it writes into (a read, a map for reading).
  if (access == HostAccess::Write || access == HostAccess::Mapped) {
    r.flags |= trace::kRefWrite;
    r.vFirst = r.vLast = objects.bumpVersion(t.obj);
  } else {
    r.flags |= trace::kRefRead;
    r.vFirst = r.vLast = objects.version(t.obj);
  }
  r.offMin = t.offset;
  r.endMax = t.offset + span;
  r.bytes = bytes;
  leaf->refs.push_back(r);
}

void TraceInterceptor::recordCall(CallRecord& call, uint64_t hostNs) {
  const api::ApiInfo& info = api::apiInfo(call.id);
  // The event the call produced, for its device timing.
  cl_event produced = nullptr;
  bool ours = false;
  const int eventArg = eventOutArg(call.id);

  // Status: the return code, or *errcode_ret, or whether a handle came back.
  int64_t status = 0;
  if (info.returnClass == ArgClass::Scalar) {
    status = static_cast<cl_int>(call.result);
  } else if (info.returnClass != ArgClass::Callback && info.numArgs > 0) {
    status = call.result ? 0 : CL_INVALID_VALUE;
    for (unsigned i = 0; i < info.numArgs; ++i)
      if (info.args[i].role == ArgRole::Errcode && call.args[i])
        status = *reinterpret_cast<const cl_int*>(call.args[i]);
  }
  const bool ok = status == CL_SUCCESS;
  if (info.returnRole == api::ReturnRole::None && info.returnClass == ArgClass::Pointer) status = 0;

  if (eventArg >= 0) {
    if (flagsOf(call) & kInjectedEvent) {
      produced = static_cast<cl_event>(call.scratch[1]);
      ours = true;
      call.args[eventArg] = 0;  // recorded as the application passed it
    } else if (ok && call.args[eventArg] && (flagsOf(call) & kTimed)) {
      // The application's own event on a profiled queue, chosen by the sampler.
      produced = *reinterpret_cast<cl_event*>(call.args[eventArg]);
      if (produced) {
        using Fn = cl_int(CL_API_CALL*)(cl_event);
        auto retain = real<Fn>(ApiId::clRetainEvent);
        if (!retain || retain(produced) != CL_SUCCESS) produced = nullptr;
      }
    }
  }
  if (!ok && ours && produced) {
    if (auto rel = real<cl_int(CL_API_CALL*)(cl_event)>(ApiId::clReleaseEvent)) rel(produced);
    produced = nullptr;
  }

  const int blockingArg = callShape(call.id).blockingArg;
  const bool blocking = blockingArg >= 0 && call.args[blockingArg] != 0;

  size_t pendingNow = 0;
  {
    auto lock = m_recorder.lock();
    if (!m_active) return;
    const uint32_t thread = threadIndex();
    trace::Leaf& leaf = m_recorder.scratchLeaf(thread);
    leaf.code = static_cast<uint16_t>(call.id);
    leaf.host.add(hostNs);
    leaf.args.resize(info.numArgs);
    for (unsigned i = 0; i < info.numArgs; ++i) {
      const uint64_t v = call.args[i];
      leaf.args[i] = trace::ArgAgg::of(info.args[i].cls == ArgClass::Scalar ? v : (v != 0));
    }
    leaf.result = trace::ArgAgg::of(static_cast<uint32_t>(status));
    // A command the sampler left untimed: the analysis extrapolates its leaf's timed mean to it.
    if (ok && (flagsOf(call) & (kTimeable | kTimed)) == kTimeable) leaf.device.unsampled = 1;
    trace::ObjectTable& objects = m_recorder.objects();
    auto ref = [&](ObjectId obj, uint8_t arg, uint8_t flags) {
      trace::Ref r;
      r.obj = obj;
      r.arg = arg;
      r.flags = flags;
      r.vFirst = r.vLast = (flags & (trace::kRefWrite | trace::kRefCreate)) ? objects.bumpVersion(obj)
                                                                           : objects.version(obj);
      leaf.refs.push_back(r);
    };
    auto label = [&](ObjectId obj, ObjectKind kind, uint64_t handle) {
      char name[256] = {};
      cl_int rc = CL_INVALID_VALUE;
      if (kind == ObjectKind::Device) {
        using Fn = cl_int(CL_API_CALL*)(cl_device_id, cl_device_info, size_t, void*, size_t*);
        if (auto fn = real<Fn>(ApiId::clGetDeviceInfo))
          rc = fn(reinterpret_cast<cl_device_id>(handle), CL_DEVICE_NAME, sizeof name - 1, name, nullptr);
      } else if (kind == ObjectKind::Platform) {
        using Fn = cl_int(CL_API_CALL*)(cl_platform_id, cl_platform_info, size_t, void*, size_t*);
        if (auto fn = real<Fn>(ApiId::clGetPlatformInfo))
          rc = fn(reinterpret_cast<cl_platform_id>(handle), CL_PLATFORM_NAME, sizeof name - 1, name, nullptr);
      }
      if (rc != CL_SUCCESS || !name[0]) return;
      objects.info(obj).fields |= trace::kObjLabel;
      objects.info(obj).label = name;
      objects.touch(obj);
    };
    auto arg = [&](int i) -> uint64_t { return i >= 0 && static_cast<unsigned>(i) < info.numArgs ? call.args[i] : 0; };
    ObjectId kernelObj = trace::kNoObject;
    uint64_t mapFlags = 0;

    for (unsigned i = 0; i < info.numArgs; ++i) {
      const api::ArgInfo& a = info.args[i];
      const uint64_t v = call.args[i];
      const auto idx = static_cast<uint8_t>(i);
      ObjectKind kind;
      if (kindOf(a.cls, &kind)) {
        if (!v) continue;
        bool created = false;
        ObjectId obj = m_recorder.handle(kind, v, &created);
        if (created) label(obj, kind, v);
        uint8_t flags = trace::kRefRead;
        if (ok && a.role == ArgRole::Writes) flags = trace::kRefWrite;
        if (a.role == ArgRole::Map) {
          mapFlags = arg(a.refs[0]);
          if (ok && (mapFlags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION))) flags = trace::kRefWrite;
        }
        if (a.role == ArgRole::Launch || (a.cls == ArgClass::Kernel && call.id != ApiId::clCreateKernel))
          kernelObj = obj;
        ref(obj, idx, flags);
        continue;
      }
      if (a.cls != ArgClass::Pointer || !v) continue;
      switch (a.role) {
        case ArgRole::HostRead:
        case ArgRole::HostWrite:
        case ArgRole::HostReadRect:
        case ArgRole::HostWriteRect:
        case ArgRole::HostReadImage:
        case ArgRole::HostWriteImage:
        case ArgRole::HostInit:
        case ArgRole::HostInitImage:
        case ArgRole::SvmDst:
        case ArgRole::SvmSrc: {
          HostRange r;
          if (!hostRange(call, info, i, &r)) break;
          const HostAccess access = r.access == HostRange::Access::Read    ? HostAccess::Read
                                    : r.access == HostRange::Access::Write ? HostAccess::Write
                                                                           : HostAccess::Wrap;
          hostRef(&leaf, idx, r.ptr, ok ? r.bytes : 0, r.span, access);
          break;
        }
        case ArgRole::SvmList: {
          const uint64_t n = std::min<uint64_t>(arg(a.refs[0]), kMaxArrayRefs);
          const auto* list = reinterpret_cast<const uint64_t*>(v);
          for (uint64_t k = 0; k < n; ++k) {
            trace::HostTarget t = m_recorder.resolveHost(list[k], 1);
            if (t.obj) ref(t.obj, idx, trace::kRefRead);
          }
          break;
        }
        case ArgRole::InHandles: {
          const uint64_t n = std::min<uint64_t>(arg(a.refs[0]), kMaxArrayRefs);
          ObjectKind k;
          if (!kindOfArray(a.type, &k)) break;
          const auto* list = reinterpret_cast<const uint64_t*>(v);
          for (uint64_t j = 0; j < n; ++j)
            if (list[j]) ref(m_recorder.handle(k, list[j]), idx, trace::kRefRead);
          break;
        }
        case ArgRole::OutHandles: {
          if (!ok) break;
          ObjectKind k;
          if (!kindOfArray(a.type, &k)) break;
          uint64_t n = arg(a.refs[0]);
          // The count the driver filled in, when the call reports it (num_platforms, num_devices).
          for (unsigned j = i + 1; j < info.numArgs; ++j)
            if (info.args[j].cls == ArgClass::Pointer && !strcmp(info.args[j].type, "cl_uint *") && call.args[j])
              n = std::min<uint64_t>(n, *reinterpret_cast<const cl_uint*>(call.args[j]));
          n = std::min<uint64_t>(n, kMaxArrayRefs);
          const auto* list = reinterpret_cast<const uint64_t*>(v);
          for (uint64_t j = 0; j < n; ++j) {
            if (!list[j]) continue;
            if (info.kind == api::ApiKind::CreateKernel) {
              ref(m_recorder.createHandle(k, list[j]), idx, trace::kRefCreate);
            } else {
              bool created = false;
              ObjectId obj = m_recorder.handle(k, list[j], &created);
              if (created) label(obj, k, list[j]);
              ref(obj, idx, created ? trace::kRefCreate : trace::kRefRead);
            }
          }
          break;
        }
        case ArgRole::MappedPtr: {
          trace::HostTarget t = m_recorder.resolveHost(v, 1);
          if (!t.obj) break;
          trace::Ref r;
          r.obj = t.obj;
          r.arg = idx;
          r.flags = trace::kRefHost | trace::kRefRead;
          r.access = HostAccess::Unmap;
          r.vFirst = r.vLast = objects.version(t.obj);
          r.offMin = t.offset;
          r.endMax = t.offset + 1;
          leaf.refs.push_back(r);
          break;
        }
        case ArgRole::ArgValue: {
          // clSetKernelArg with a cl_mem (or sampler) value: the kernel now uses that object.
          const uint64_t index = arg(1);
          ObjectId bound = trace::kNoObject;
          if (arg(a.refs[0]) == sizeof(void*)) {
            uint64_t handle;
            memcpy(&handle, reinterpret_cast<const void*>(v), sizeof handle);
            ObjectId obj = handle ? m_recorder.findHandle(handle) : trace::kNoObject;
            if (obj && (objects.kind(obj) == ObjectKind::Mem || objects.kind(obj) == ObjectKind::Sampler)) bound = obj;
          }
          if (bound) ref(bound, idx, trace::kRefRead);
          if (ok && kernelObj && index < 256) {
            auto& args = m_kernelArgs[kernelObj];
            if (args.size() <= index) args.resize(index + 1);
            args[index] = bound;
          }
          break;
        }
        default:
          break;
      }
    }
    // SVM/USM pointers bound as kernel arguments (the value is the pointer itself).
    if (info.kind == api::ApiKind::SetArg && info.numArgs == 3 && kernelObj && ok) {
      trace::HostTarget t = m_recorder.resolveHost(call.args[2], 1);
      const uint64_t index = call.args[1];
      if (t.obj) ref(t.obj, 2, trace::kRefRead);
      if (index < 256) {
        auto& args = m_kernelArgs[kernelObj];
        if (args.size() <= index) args.resize(index + 1);
        args[index] = t.obj;
      }
    }
    // A launch writes every buffer bound to the kernel.
    if (info.kind == api::ApiKind::Launch && kernelObj) {
      auto it = m_kernelArgs.find(kernelObj);
      if (it != m_kernelArgs.end())
        for (ObjectId b : it->second)
          if (b) ref(b, trace::kRefArgBound, ok ? trace::kRefWrite : trace::kRefRead);
    }
    // SVM frees.
    if (info.kind == api::ApiKind::SvmFree && info.numArgs == 2) {
      ObjectId gone = m_recorder.removeSvm(call.args[1]);
      if (gone) ref(gone, 1, trace::kRefDestroy);
    }
    // The return value.
    ObjectKind retKind;
    switch (info.returnRole) {
      case api::ReturnRole::New:
        if (call.result && kindOf(info.returnClass, &retKind)) {
          ObjectId obj = m_recorder.createHandle(retKind, call.result);
          if (call.id == ApiId::clCreateKernel && call.args[1]) {
            objects.info(obj).fields |= trace::kObjLabel;
            objects.info(obj).label.assign(reinterpret_cast<const char*>(call.args[1]),
                                           strnlen(reinterpret_cast<const char*>(call.args[1]), 255));
          }
          // The buffer's related object: the host memory it wraps, or its parent buffer.
          for (const trace::Ref& r : leaf.refs)
            if (r.access == HostAccess::Wrap || (call.id == ApiId::clCreateSubBuffer && r.arg == 0)) {
              objects.info(obj).fields |= trace::kObjParent;
              objects.info(obj).related = r.obj;
            }
          ref(obj, trace::kRefArgReturn, trace::kRefCreate);
        }
        break;
      case api::ReturnRole::SvmNew:
        if (call.result) {
          ObjectId obj = m_recorder.addSvm(call.result, arg(info.returnRefs[0]));
          ref(obj, trace::kRefArgReturn, trace::kRefCreate);
        }
        break;
      case api::ReturnRole::Mapped:
      case api::ReturnRole::MappedImage:
        if (call.result) {
          const uint64_t bytes = info.returnRole == api::ReturnRole::Mapped ? arg(info.returnRefs[0]) : 0;
          hostRef(&leaf, trace::kRefArgReturn, call.result, bytes, std::max<uint64_t>(bytes, 1),
                  HostAccess::Mapped);
          (void)mapFlags;
        }
        break;
      default:
        break;
    }
    const uint32_t slot = m_recorder.append(thread, std::move(leaf), produced != nullptr);
    if (produced && slot) {
      const uint64_t weight = (flagsOf(call) & kSampled) ? s_samplePeriod : 1;
      m_pending.push_back(Pending{produced, thread, slot, m_recorder.generation(), static_cast<uint32_t>(weight)});
      produced = nullptr;
    }
    pendingNow = m_pending.size();
  }
  if (produced) {  // not recorded (tracing stopped meanwhile): let go of it
    if (auto rel = real<cl_int(CL_API_CALL*)(cl_event)>(ApiId::clReleaseEvent)) rel(produced);
  }
  const bool sync = info.kind == api::ApiKind::Sync || blocking;
  if (pendingNow && (sync || pendingNow >= m_resolveAt)) resolvePending(pendingNow > kMaxPending);
}

void TraceInterceptor::resolvePending(bool all) {
  std::vector<Pending> work;
  uint32_t gen;
  {
    auto lock = m_recorder.lock();
    work.swap(m_pending);
    gen = m_recorder.generation();
  }
  if (work.empty()) return;
  using InfoFn = cl_int(CL_API_CALL*)(cl_event, cl_event_info, size_t, void*, size_t*);
  using ProfFn = cl_int(CL_API_CALL*)(cl_event, cl_profiling_info, size_t, void*, size_t*);
  using RelFn = cl_int(CL_API_CALL*)(cl_event);
  auto info = real<InfoFn>(ApiId::clGetEventInfo);
  auto prof = real<ProfFn>(ApiId::clGetEventProfilingInfo);
  auto rel = real<RelFn>(ApiId::clReleaseEvent);
  struct Done {
    Pending p;
    bool timed;
    trace::DeviceAgg d;
  };
  std::vector<Done> done;
  std::vector<Pending> keep;
  for (const Pending& p : work) {
    if (p.generation != gen) continue;
    // The end time is there once the command completed: one call settles the common case; the
    // status is asked only when it is not (still running, failed, or no profiling after all).
    cl_ulong t[4] = {};
    bool okAll = prof && prof(p.event, CL_PROFILING_COMMAND_END, sizeof t[3], &t[3], nullptr) == CL_SUCCESS;
    if (!okAll) {
      cl_int st = -1;
      if (!info || info(p.event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr) != CL_SUCCESS) st = -1;
      if (st != CL_COMPLETE && st >= 0 && !all) {
        keep.push_back(p);
        continue;
      }
    }
    Done d{p, false, {}};
    const cl_profiling_info which[3] = {CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
                                        CL_PROFILING_COMMAND_START};
    for (int k = 0; okAll && k < 3; ++k)
      okAll = prof(p.event, which[k], sizeof t[k], &t[k], nullptr) == CL_SUCCESS;
    if (okAll && t[3] >= t[2]) {
      d.timed = true;
      d.d = trace::DeviceAgg::command(t[3] - t[2], t[1] >= t[0] ? t[1] - t[0] : 0,
                                      t[2] >= t[1] ? t[2] - t[1] : 0, p.weight);
    }
    if (rel) rel(p.event);
    done.push_back(d);
  }
  auto lock = m_recorder.lock();
  for (const Done& d : done) m_recorder.deliver(d.p.thread, d.p.slot, d.timed ? &d.d : nullptr);
  m_pending.insert(m_pending.end(), keep.begin(), keep.end());
  m_resolveAt = std::max<size_t>(64, 2 * m_pending.size());
}

// ---- allocations ----------------------------------------------------------------------------------

void TraceInterceptor::allocated(const AllocEvent& event) {
  if (!m_active) return;
  auto lock = m_recorder.lock();
  if (!m_active) return;
  uint32_t site = 0;
  if (event.site && event.site->depth) {
    uint64_t pcs[kMaxSiteDepth];
    for (unsigned i = 0; i < event.site->depth; ++i) pcs[i] = event.site->pcs[i];
    site = m_recorder.internSite(pcs, event.site->depth);
  }
  const uint32_t thread = threadIndex();
  const auto ptr = reinterpret_cast<uintptr_t>(event.ptr);
  if (event.fn == AllocFn::Realloc)
    m_recorder.recordRealloc(thread, reinterpret_cast<uintptr_t>(event.oldPtr), ptr, event.size, site, 0);
  else if (site)
    m_recorder.recordAlloc(thread, static_cast<uint8_t>(event.fn), ptr, event.size, event.alignment, site, 0);
}

void TraceInterceptor::freeing(void* ptr) {
  if (!m_active || !m_recorder.mayBeSegment(reinterpret_cast<uintptr_t>(ptr))) return;
  auto lock = m_recorder.lock();
  if (!m_active) return;
  m_recorder.recordFree(threadIndex(), reinterpret_cast<uintptr_t>(ptr));
}

void TraceInterceptor::processExit() {
  auto lock = m_recorder.lock();
  if (!m_active) return;
  // No OpenCL calls at exit (the runtime may be gone): what is still pending has no timing.
  for (const Pending& p : m_pending)
    if (p.generation == m_recorder.generation()) m_recorder.deliver(p.thread, p.slot, nullptr);
  m_pending.clear();
  m_recorder.noteRecordingCost(m_selfCalls.load(std::memory_order_relaxed),
                               m_selfNs.load(std::memory_order_relaxed));
  m_recorder.noteStartup(m_firstCallNs.load(std::memory_order_relaxed),
                         m_firstContextNs.load(std::memory_order_relaxed));
  m_recorder.finish();
  m_active = false;
  debug("trace written to %s (%llu events)", m_config.path.c_str(),
        static_cast<unsigned long long>(m_recorder.eventsRecorded()));
  if (const uint64_t calls = m_selfCalls.load(std::memory_order_relaxed); calls && m_measureSelf)
    debug("recording after each call took %.1f ms in all, %.0f ns per call (%llu calls)",
          static_cast<double>(m_selfNs.load(std::memory_order_relaxed)) / 1e6,
          static_cast<double>(m_selfNs.load(std::memory_order_relaxed)) / static_cast<double>(calls),
          static_cast<unsigned long long>(calls));
}

}  // namespace hetopt::shim
