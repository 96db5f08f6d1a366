// SPDX-License-Identifier: MIT
/** @file Trace mode's raw records; see trace_records.h.
 * The records' binary layouts, then labels, building records, applying them. */
#include "shim/core/trace_records.h"

#include <CL/cl.h>

#include <algorithm>
#include <cstring>

#include "shim/core/state.h"

namespace hetopt::shim {
namespace {

using api::ArgClass;
using api::ArgRole;

enum class Kind : uint8_t { Thread, ThreadExit, Call, Alloc, Free, Timing, Clock };

/// Every record starts with this.
struct Head {
  Kind kind;
  uint8_t small;   ///< Call: argument count; Alloc: allocator
  uint16_t count;  ///< Call: host spans; Alloc: site depth
  uint32_t tid;
  uint64_t ns;  ///< monotonicNs(): when it happened
};
struct CallBody {
  uint16_t id;
  uint8_t flags;   ///< kOk, kUnsampled
  uint8_t extras;  ///< copies of pointed-at data
  uint32_t pad;
  uint64_t hostNs, result;
  int64_t status;
  uint64_t timingId;
};
constexpr uint8_t kOk = 1, kUnsampled = 2;
struct Span {
  uint8_t arg, access;
  uint8_t pad[6];
  uint64_t ptr, bytes, span;
};
/// A copy of what argument `arg` points at: `bytes` of data follow, padded to 8.
struct ExtraHead {
  uint8_t arg;
  uint8_t pad;
  uint16_t bytes;
  uint32_t pad2;
};
struct AllocBody {
  uint64_t ptr, size, alignment, oldPtr;
};
struct TimingBody {
  uint64_t id;
  uint8_t timed;
  uint8_t pad[7];
  uint64_t deviceStart, deviceEnd;
  trace::DeviceAgg agg;
};
struct ClockBody {
  uint64_t queue;
  int64_t offsetNs;
  uint64_t uncertaintyNs;
  uint8_t method;
};

/// Appends to a record.
class Out {
 public:
  explicit Out(unsigned char* p) : m_base(p), m_p(p) {}
  template <typename T>
  T* put(const T& v) {
    auto* at = m_p;
    memcpy(at, &v, sizeof v);
    m_p += sizeof v;
    return reinterpret_cast<T*>(at);
  }
  void bytes(const void* data, size_t n) {
    memcpy(m_p, data, n);
    m_p += (n + 7) & ~size_t{7};
  }
  size_t size() const { return static_cast<size_t>(m_p - m_base); }

 private:
  unsigned char* m_base;
  unsigned char* m_p;
};

template <typename T>
T read(const unsigned char*& p) {
  T v;
  memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}

uint64_t argOf(const api::ApiInfo& info, const trace::CallView& call, int k) {
  return k >= 0 && static_cast<unsigned>(k) < info.numArgs ? call.args[k] : 0;
}

const LabelCache* s_labels = nullptr;  ///< the applier's, for the model's hook

/// The recording side's view of a call's host spans (CallView::source).
struct Decoded {
  const Span* spans;
  unsigned count;
};

bool decodedSpan(const trace::CallView& view, unsigned arg, trace::HostSpan* out) {
  const auto* d = static_cast<const Decoded*>(view.source);
  for (unsigned k = 0; k < d->count; ++k) {
    Span s;
    memcpy(&s, &d->spans[k], sizeof s);
    if (s.arg != arg) continue;
    out->ptr = s.ptr;
    out->bytes = s.bytes;
    out->span = s.span;
    out->access = static_cast<trace::HostAccess>(s.access);
    return true;
  }
  return false;
}

bool cachedLabel(trace::ObjectKind, uint64_t handle, char* name, size_t size) {
  return s_labels && s_labels->find(handle, name, size);
}

bool labelled(trace::ObjectKind kind) {
  return kind == trace::ObjectKind::Platform || kind == trace::ObjectKind::Device;
}

}  // namespace

// ---- labels -------------------------------------------------------------------------------------

LabelCache::LabelCache() {
  for (size_t id = 0; id < api::kApiCount; ++id) {
    const api::ApiInfo& info = api::apiInfo(static_cast<api::ApiId>(id));
    for (unsigned i = 0; i < info.numArgs; ++i) {
      trace::ObjectKind kind;
      if ((trace::objectKindOf(info.args[i].cls, &kind) && labelled(kind)) ||
          (info.args[i].cls == ArgClass::Pointer && trace::objectKindOf(info.args[i].elem, &kind) &&
           labelled(kind)))
        m_names[id] = true;
    }
  }
}

bool LabelCache::find(uint64_t handle, char* out, size_t size) const {
  const size_t n = m_count.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) {
    if (m_entries[i].handle != handle) continue;
    const size_t len = strnlen(m_entries[i].label, sizeof m_entries[i].label);
    if (!len || !size) return false;
    const size_t k = std::min(len, size - 1);
    memcpy(out, m_entries[i].label, k);
    out[k] = 0;
    return true;
  }
  return false;
}

void LabelCache::add(trace::ObjectKind kind, uint64_t handle,
                     bool (*query)(trace::ObjectKind, uint64_t, char*, size_t)) {
  if (!handle) return;
  const size_t seen = m_count.load(std::memory_order_acquire);
  for (size_t i = 0; i < seen; ++i)
    if (m_entries[i].handle == handle) return;
  std::lock_guard<std::mutex> guard(m_mutex);
  const size_t n = m_count.load(std::memory_order_relaxed);
  if (n >= kEntries) return;
  for (size_t i = seen; i < n; ++i)
    if (m_entries[i].handle == handle) return;
  Entry& e = m_entries[n];
  e.handle = handle;
  memset(e.label, 0, sizeof e.label);
  if (query) query(kind, handle, e.label, sizeof e.label - 1);
  m_count.store(n + 1, std::memory_order_release);
}

void LabelCache::note(const trace::CallView& call, const trace::CallOutcome& outcome,
                      bool (*query)(trace::ObjectKind, uint64_t, char*, size_t)) {
  const api::ApiInfo& info = api::apiInfo(call.id);
  for (unsigned i = 0; i < info.numArgs; ++i) {
    const api::ArgInfo& a = info.args[i];
    const uint64_t v = call.args[i];
    trace::ObjectKind kind;
    if (!v) continue;
    if (trace::objectKindOf(a.cls, &kind)) {
      if (labelled(kind)) add(kind, v, query);
      continue;
    }
    if (a.cls != ArgClass::Pointer || !trace::objectKindOf(a.elem, &kind) || !labelled(kind))
      continue;
    uint64_t n = argOf(info, call, a.refs[0]);
    if (a.role == ArgRole::OutHandles) {
      if (!outcome.ok) continue;
      if (a.numRefs >= 2 && argOf(info, call, a.refs[1]))
        n = std::min<uint64_t>(n, *reinterpret_cast<const cl_uint*>(argOf(info, call, a.refs[1])));
    } else if (a.role != ArgRole::InHandles) {
      continue;
    }
    const auto* list = reinterpret_cast<const uint64_t*>(v);
    for (uint64_t k = 0; k < std::min<uint64_t>(n, trace::CallModel::kMaxArrayRefs); ++k)
      add(kind, list[k], query);
  }
}

// ---- building records ---------------------------------------------------------------------------

namespace raw {

size_t thread(unsigned char* out, uint32_t tid, uint64_t stackLo, uint64_t stackHi) {
  Out o(out);
  o.put(Head{Kind::Thread, 0, 0, tid, 0});
  o.put(stackLo);
  o.put(stackHi);
  return o.size();
}

size_t threadExit(unsigned char* out, uint32_t tid) {
  Out o(out);
  o.put(Head{Kind::ThreadExit, 0, 0, tid, 0});
  return o.size();
}

size_t CallCopies::gather(const trace::CallView& call, const trace::CallOutcome& outcome,
                          bool (*hostSpan)(const trace::CallView&, unsigned, trace::HostSpan*)) {
  const api::ApiInfo& info = api::apiInfo(call.id);
  numArgs = std::min<unsigned>(info.numArgs, kMaxArgs);
  numSpans = numExtras = 0;
  size_t extraBytes = 0;
  auto copy = [&](unsigned arg, const void* data, size_t bytes) {
    extras[numExtras++] = Extra{data, static_cast<uint16_t>(bytes), static_cast<uint8_t>(arg)};
    extraBytes += sizeof(ExtraHead) + ((bytes + 7) & ~size_t{7});
  };
  for (unsigned i = 0; i < numArgs; ++i) {
    const api::ArgInfo& a = info.args[i];
    const uint64_t v = call.args[i];
    if (a.cls != ArgClass::Pointer || !v) continue;
    trace::ObjectKind elem;
    uint64_t n = argOf(info, call, a.refs[0]);
    // The host memory the argument moves.
    if (api::isHostRangeRole(a.role)) {
      if (hostSpan && hostSpan(call, i, &spans[numSpans]))
        spanArgs[numSpans++] = static_cast<uint8_t>(i);
      continue;
    }
    switch (a.role) {
      // Copies of what the model reads through the other pointer arguments.
      case ArgRole::SvmList:
      case ArgRole::InHandles:
        if (a.role == ArgRole::InHandles && !trace::objectKindOf(a.elem, &elem)) break;
        copy(i, reinterpret_cast<const void*>(v),
             8 * std::min<uint64_t>(n, trace::CallModel::kMaxArrayRefs));
        break;
      case ArgRole::OutHandles:
        if (!outcome.ok || !trace::objectKindOf(a.elem, &elem)) break;
        if (a.numRefs >= 2 && argOf(info, call, a.refs[1]) &&
            static_cast<unsigned>(a.refs[1]) < numArgs) {
          filled = *reinterpret_cast<const cl_uint*>(argOf(info, call, a.refs[1]));
          copy(static_cast<unsigned>(a.refs[1]), &filled, sizeof filled);
          n = std::min<uint64_t>(n, filled);
        }
        copy(i, reinterpret_cast<const void*>(v),
             8 * std::min<uint64_t>(n, trace::CallModel::kMaxArrayRefs));
        break;
      case ArgRole::ArgValue:
        if (n == sizeof(void*)) copy(i, reinterpret_cast<const void*>(v), sizeof(void*));
        break;
      default:
        break;
    }
  }
  if (HETOPT_UNLIKELY(call.id == api::ApiId::clCreateKernel && call.result && numArgs > 1 &&
                      call.args[1])) {
    const auto* name = reinterpret_cast<const char*>(call.args[1]);
    const size_t len = strnlen(name, sizeof kernelName - 1);
    memcpy(kernelName, name, len);
    kernelName[len] = 0;
    copy(1, kernelName, len + 1);
  }
  return sizeof(Head) + sizeof(CallBody) + 8 * numArgs + sizeof(Span) * numSpans + extraBytes;
}

void call(unsigned char* out, const CallCopies& copies, uint32_t tid, const trace::CallView& call,
          const trace::CallOutcome& outcome, uint64_t startNs, uint64_t hostNs, bool unsampled,
          uint64_t timingId) {
  Out o(out);
  o.put(Head{Kind::Call, static_cast<uint8_t>(copies.numArgs),
             static_cast<uint16_t>(copies.numSpans), tid, startNs});
  o.put(CallBody{static_cast<uint16_t>(call.id),
                 static_cast<uint8_t>((outcome.ok ? kOk : 0) | (unsampled ? kUnsampled : 0)),
                 static_cast<uint8_t>(copies.numExtras), 0, hostNs, call.result, outcome.status,
                 timingId});
  o.bytes(call.args, 8 * copies.numArgs);
  for (unsigned k = 0; k < copies.numSpans; ++k) {
    const trace::HostSpan& s = copies.spans[k];
    o.put(Span{copies.spanArgs[k], static_cast<uint8_t>(s.access), {}, s.ptr, s.bytes, s.span});
  }
  for (unsigned k = 0; k < copies.numExtras; ++k) {
    const CallCopies::Extra& e = copies.extras[k];
    o.put(ExtraHead{e.arg, 0, e.bytes, 0});
    o.bytes(e.data, e.bytes);
  }
}

static_assert(allocBytes(0) == sizeof(Head) + sizeof(AllocBody) && kFreeBytes == sizeof(Head) + 8);

size_t alloc(unsigned char* out, uint32_t tid, uint64_t atNs, uint8_t fn, uint64_t ptr,
             uint64_t size, uint64_t alignment, uint64_t oldPtr, const uint64_t* pcs,
             unsigned depth) {
  Out o(out);
  o.put(Head{Kind::Alloc, fn, static_cast<uint16_t>(depth), tid, atNs});
  o.put(AllocBody{ptr, size, alignment, oldPtr});
  for (unsigned i = 0; i < depth; ++i) o.put(pcs[i]);
  return o.size();
}

size_t free(unsigned char* out, uint32_t tid, uint64_t atNs, uint64_t ptr) {
  Out o(out);
  o.put(Head{Kind::Free, 0, 0, tid, atNs});
  o.put(ptr);
  return o.size();
}

size_t timing(unsigned char* out, uint64_t timingId, const trace::DeviceAgg* timing,
              uint64_t deviceStart, uint64_t deviceEnd) {
  Out o(out);
  o.put(Head{Kind::Timing, 0, 0, 0, 0});
  TimingBody t{timingId, static_cast<uint8_t>(timing != nullptr), {}, deviceStart, deviceEnd, {}};
  if (timing) t.agg = *timing;
  o.put(t);
  return o.size();
}

size_t clock(unsigned char* out, uint64_t queue, trace::ClockMethod method, int64_t offsetNs,
             uint64_t uncertaintyNs) {
  Out o(out);
  o.put(Head{Kind::Clock, 0, 0, 0, 0});
  o.put(ClockBody{queue, offsetNs, uncertaintyNs, static_cast<uint8_t>(method)});
  return o.size();
}

}  // namespace raw

// ---- applying them ------------------------------------------------------------------------------

RecordApplier::RecordApplier(trace::Recorder& recorder, const LabelCache& labels)
    : m_recorder(recorder), m_model(trace::CallModelHooks{decodedSpan, cachedLabel}) {
  s_labels = &labels;
}

RecordApplier::ThreadInfo& RecordApplier::threadOf(uint32_t tid) {
  auto it = m_threads.find(tid);
  if (it != m_threads.end()) return it->second;
  return m_threads[tid] = ThreadInfo{m_recorder.thread(tid), 0, 0};
}

void RecordApplier::apply(const unsigned char* record, size_t) {
  const unsigned char* p = record;
  const Head head = read<Head>(p);
  switch (head.kind) {
    case Kind::Thread: {
      ThreadInfo& t = threadOf(head.tid);
      t.stackLo = read<uint64_t>(p);
      t.stackHi = read<uint64_t>(p);
      return;
    }
    case Kind::ThreadExit: {
      auto it = m_threads.find(head.tid);
      if (it == m_threads.end()) return;
      m_recorder.threadExit(it->second.index);
      m_threads.erase(it);  // a new thread with this id registers again (same index)
      return;
    }
    case Kind::Call:
      applyCall(record, head.tid, head.ns);
      return;
    case Kind::Alloc: {
      const AllocBody a = read<AllocBody>(p);
      uint64_t pcs[64];
      const unsigned depth = std::min<unsigned>(head.count, 64);
      for (unsigned i = 0; i < depth; ++i) pcs[i] = read<uint64_t>(p);
      const uint32_t site = depth ? m_recorder.internSite(pcs, depth) : 0;
      const uint32_t thread = threadOf(head.tid).index;
      if (head.small == 2)  // AllocFn::Realloc
        m_recorder.recordRealloc(thread, a.oldPtr, a.ptr, a.size, site, 0, head.ns);
      else if (site)
        m_recorder.recordAlloc(thread, head.small, a.ptr, a.size, a.alignment, site, 0, head.ns);
      return;
    }
    case Kind::Free:
      m_recorder.recordFree(threadOf(head.tid).index, read<uint64_t>(p), head.ns);
      return;
    case Kind::Timing: {
      const TimingBody t = read<TimingBody>(p);
      auto it = m_timed.find(t.id);
      if (it == m_timed.end()) return;
      m_recorder.deliver(it->second.thread, it->second.slot, t.timed ? &t.agg : nullptr,
                         t.deviceStart, t.deviceEnd);
      m_timed.erase(it);
      return;
    }
    case Kind::Clock: {
      const ClockBody c = read<ClockBody>(p);
      m_recorder.noteClock(c.queue, static_cast<trace::ClockMethod>(c.method), c.offsetNs,
                           c.uncertaintyNs);
      return;
    }
  }
}

void RecordApplier::applyCall(const unsigned char* record, uint32_t tid, uint64_t startNs) {
  const unsigned char* p = record;
  const Head head = read<Head>(p);
  const CallBody body = read<CallBody>(p);
  uint64_t args[raw::kMaxArgs] = {};
  for (unsigned i = 0; i < head.small; ++i) args[i] = read<uint64_t>(p);
  const Decoded decoded{reinterpret_cast<const Span*>(p), head.count};
  p += sizeof(Span) * head.count;
  for (unsigned k = 0; k < body.extras; ++k) {
    const ExtraHead e = read<ExtraHead>(p);
    if (e.arg < raw::kMaxArgs)
      args[e.arg] = reinterpret_cast<uintptr_t>(p);  // the copy stands for it
    p += (e.bytes + 7u) & ~7u;
  }
  const trace::CallView view{static_cast<api::ApiId>(body.id), args, body.result, &decoded};
  trace::CallOutcome outcome;
  outcome.status = body.status;
  outcome.ok = body.flags & kOk;
  ThreadInfo& t = threadOf(tid);
  m_recorder.setCallerStack(t.stackLo, t.stackHi);
  trace::Leaf& leaf = m_recorder.scratchLeaf(t.index);
  m_model.build(m_recorder, view, outcome, body.hostNs, leaf);
  m_recorder.stamp(leaf, startNs, body.hostNs);
  if (body.flags & kUnsampled) leaf.device.unsampled = 1;
  const uint32_t slot = m_recorder.append(t.index, std::move(leaf), body.timingId != 0);
  if (body.timingId && slot) m_timed[body.timingId] = Slot{t.index, slot};
}

void RecordApplier::abandonTimings() {
  for (const auto& [id, s] : m_timed) m_recorder.deliver(s.thread, s.slot, nullptr);
  m_timed.clear();
}

void RecordApplier::forkChild() {
  m_threads.clear();
  m_timed.clear();
}

}  // namespace hetopt::shim
