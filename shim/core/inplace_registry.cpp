// SPDX-License-Identifier: MIT
/** @file In-place registration of static data and anonymous mappings; see inplace_registry.h.
 * Finding static ranges, tracking mappings, registering off the lock, releasing first. */
#include "shim/core/inplace_registry.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/log.h"
#include "common/units.h"
#include "policies/os_memory.h"
#include "shim/core/callsite.h"
#include "shim/core/state.h"
#include "shim/core/stats_text.h"

namespace hetopt::shim {
namespace {

// Set while this thread is inside the OpenCL call that registers a range: a driver that unmapped
// or discarded memory from inside it must not wait for that very registration.
HETOPT_TLS bool t_registering = false;

}  // namespace

InplaceRegistry::InplaceRegistry(const Plan& plan) : m_plan(plan) {}

size_t InplaceRegistry::addRange(uintptr_t start, uintptr_t end, bool isStatic) {
  for (size_t i = 0; i < kMaxRanges; ++i) {
    Range& r = m_ranges[i];
    if (r.state != State::Free) continue;
    r = Range{};
    r.start = start;
    r.end = end;
    r.isStatic = isStatic;
    r.state = State::Known;
    m_inUse.fetch_add(1, std::memory_order_release);
    return i;
  }
  m_tableFull.fetch_add(1, std::memory_order_relaxed);
  return kMaxRanges;
}

void InplaceRegistry::findStaticRanges() {
  if (m_plan.staticRanges.empty()) return;
  // Only the main executable's static data: a library's could go away with dlclose() while
  // pinned. Its load bias differs per run (ASLR); its identity and offsets do not.
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string exePath = n > 0 ? std::string(exe, n) : std::string();
  uint64_t generation = 0;
  std::vector<Module> modules = ModuleMap::instance().modules(&generation);
  const uintptr_t page = os::pageSize();
  for (const PlanStaticRange& s : m_plan.staticRanges) {
    const Module* found = nullptr;
    for (const Module& m : modules)
      if (m.identity == s.moduleKey && m.path == exePath) found = &m;
    uintptr_t start = found ? found->bias + s.offset : 0;
    if (!found || start < found->start || start + s.bytes > found->end || start + s.bytes < start) {
      m_notFound.fetch_add(1, std::memory_order_relaxed);
      debug("static range %016llx+%llu not in this program's image; left alone",
            static_cast<unsigned long long>(s.moduleKey),
            static_cast<unsigned long long>(s.offset));
      continue;
    }
    // Whole pages: the driver pins pages anyway, and the test below is a plain range check.
    uintptr_t lo = start & ~(page - 1), hi = (start + s.bytes + page - 1) & ~(page - 1);
    std::lock_guard<std::mutex> lock(m_mutex);
    // Ranges sharing a page become one: a driver may refuse to register a page twice (CUDA does).
    bool merged = false;
    for (Range& r : m_ranges) {
      if (r.state != State::Known || !r.isStatic || r.end < lo || r.start > hi) continue;
      r.start = std::min(r.start, lo);
      r.end = std::max(r.end, hi);
      merged = true;
      break;
    }
    if (!merged) addRange(lo, hi, true);
  }
}

void InplaceRegistry::contextReady(const PolicyEnv& env, uint64_t maxBufferBytes) {
  if (m_disabled.load(std::memory_order_acquire)) return;
  m_env = env;
  m_maxBufferBytes = maxBufferBytes;
  m_register = makePolicy(PolicyKind::Register, m_env);
  findStaticRanges();
  m_ready.store(true, std::memory_order_release);
  std::unique_lock<std::mutex> lock(m_mutex);
  for (size_t i = 0; i < kMaxRanges; ++i)
    if (m_ranges[i].state == State::Known) registerRange(i, lock);
}

void InplaceRegistry::registerRange(size_t i, std::unique_lock<std::mutex>& lock) {
  Range& r = m_ranges[i];
  r.state = State::Registering;
  void* ptr = reinterpret_cast<void*>(r.start);
  size_t bytes = r.end - r.start;
  lock.unlock();
  Allocation a;
  const auto begin = std::chrono::steady_clock::now();
  t_registering = true;
  PolicyStatus st = adoptHostMemory(m_env, ptr, bytes, &a, m_maxBufferBytes);
  t_registering = false;
  const uint64_t ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - begin)
          .count());
  m_registerNs.fetch_add(ns, std::memory_order_relaxed);
  lock.lock();
  // An unmap that came meanwhile waits for this (see unmapping()) and releases the buffer.
  if (st) {
    r.registration = a;
    r.state = State::Registered;
    (r.isStatic ? m_staticRegistered : m_mmapRegistered).fetch_add(1, std::memory_order_relaxed);
    m_registeredBytes.fetch_add(bytes, std::memory_order_relaxed);
    char took[kUnitTextSize];
    debug("registered %s in place: %p + %zu bytes in %s", r.isStatic ? "static data" : "a mapping",
          ptr, bytes, formatDuration(took, sizeof took, static_cast<double>(ns), TimeUnit::Ms));
  } else {
    r.state = State::Failed;  // not tried again: pageable, as without hetopt
    m_refusals.note(ptr, bytes, st.reason);
  }
  m_registered.notify_all();
}

void InplaceRegistry::mapped(void* addr, size_t len, int flags) {
  if (!wants(len, flags) || m_disabled.load(std::memory_order_acquire)) return;
  m_mappingsSeen.fetch_add(1, std::memory_order_relaxed);
  const uintptr_t page = os::pageSize();
  uintptr_t lo = reinterpret_cast<uintptr_t>(addr);
  uintptr_t hi = (lo + len + page - 1) & ~(page - 1);
  std::lock_guard<std::mutex> lock(m_mutex);
  // Made before the context existed: contextReady() registers it. After: its first transfer does.
  addRange(lo, hi, false);
}

bool InplaceRegistry::unmapping(void* addr, size_t len, bool discard) {
  if (m_inUse.load(std::memory_order_acquire) == 0 || m_disabled.load(std::memory_order_acquire))
    return false;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t hi = lo + len;
  Allocation toRelease[kMaxRanges];
  size_t releases = 0;
  bool mapping = false;
  {
    std::unique_lock<std::mutex> lock(m_mutex);
    for (size_t i = 0; i < kMaxRanges; ++i) {
      Range& r = m_ranges[i];
      if (r.state == State::Free || r.end <= lo || r.start >= hi) continue;
      // Being registered by another thread: the buffer must exist before it can be released.
      if (r.state == State::Registering && t_registering) continue;  // by this one: the driver's
      m_registered.wait(lock, [&r] { return r.state != State::Registering; });
      if (r.state == State::Free || r.end <= lo || r.start >= hi) continue;  // gone meanwhile
      if (r.state == State::Registered) {
        toRelease[releases++] = r.registration;
        r.registration = Allocation{};
      }
      mapping |= !r.isStatic;
      if (discard) {
        r.state = State::Known;  // same memory, new pages: registered again on its next transfer
      } else {
        r.state = State::Free;
        m_inUse.fetch_sub(1, std::memory_order_release);
      }
    }
  }
  // Released before the caller's munmap/mremap/mmap/madvise reaches the kernel.
  for (size_t i = 0; i < releases; ++i) {
    PolicyStatus st = m_register->release(&toRelease[i]);
    if (!st) debug("releasing a registration failed: %s", st.reason);
    m_unpinned.fetch_add(1, std::memory_order_relaxed);
  }
  return mapping;
}

void InplaceRegistry::yieldTo(const void* host, size_t bytes) {
  if (m_inUse.load(std::memory_order_acquire) == 0 || m_disabled.load(std::memory_order_acquire))
    return;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(host), hi = lo + (bytes ? bytes : 1);
  Allocation toRelease[kMaxRanges];
  size_t releases = 0;
  {
    std::unique_lock<std::mutex> lock(m_mutex);
    for (size_t i = 0; i < kMaxRanges; ++i) {
      Range& r = m_ranges[i];
      if (r.state == State::Free || r.end <= lo || r.start >= hi) continue;
      m_registered.wait(lock, [&r] { return r.state != State::Registering; });
      if (r.state == State::Free || r.end <= lo || r.start >= hi) continue;
      if (r.state == State::Registered) {
        toRelease[releases++] = r.registration;
        r.registration = Allocation{};
      }
      r.state = State::Failed;  // tracked (its unmap must still find it), never registered again
      m_yielded.fetch_add(1, std::memory_order_relaxed);
    }
  }
  for (size_t i = 0; i < releases; ++i) {
    PolicyStatus st = m_register->release(&toRelease[i]);
    if (!st) debug("releasing a registration failed: %s", st.reason);
  }
}

bool InplaceRegistry::transfer(const void* host, uint64_t bytes, bool h2d) {
  if (m_inUse.load(std::memory_order_acquire) == 0 || m_disabled.load(std::memory_order_acquire))
    return false;
  const uintptr_t p = reinterpret_cast<uintptr_t>(host);
  bool registered = false;
  {
    std::unique_lock<std::mutex> lock(m_mutex);
    for (size_t i = 0; i < kMaxRanges; ++i) {
      Range& r = m_ranges[i];
      if (r.state == State::Free || p < r.start || p >= r.end) continue;
      if (r.state == State::Known && m_ready.load(std::memory_order_acquire))
        registerRange(i, lock);
      if (r.state == State::Registering)
        m_registered.wait(lock, [&r] { return r.state != State::Registering; });
      registered = r.state == State::Registered;
      break;
    }
  }
  if (!registered) return false;
  (h2d ? m_h2d : m_d2h).fetch_add(1, std::memory_order_relaxed);
  (h2d ? m_h2dBytes : m_d2hBytes).fetch_add(bytes, std::memory_order_relaxed);
  return true;
}

std::string InplaceRegistry::stats() const {
  auto n = [](const std::atomic<uint64_t>& v) { return std::to_string(v.load()); };
  std::string s =
      "registered in place: " + n(m_staticRegistered) + " static ranges, " + n(m_mmapRegistered) +
      " mappings (" + mib(m_registeredBytes.load()) + " in " + ms(m_registerNs.load()) +
      ")\n  registration fallbacks: " + n(m_refusals.count()) + " refused, " + n(m_notFound) +
      " static ranges not found, " + n(m_tableFull) + " table full\n  " + n(m_unpinned) +
      " unpinned before unmap\n  " + n(m_yielded) +
      " left to the program's own host-pointer buffers\n  " + n(m_mappingsSeen) +
      " mappings tracked\n  transfers from registered memory: " + n(m_h2d) + " h2d (" +
      mib(m_h2dBytes.load()) + "), " + n(m_d2h) + " d2h (" + mib(m_d2hBytes.load()) + ")";
  {
    std::lock_guard<std::mutex> lock(m_mutex);  // registerRange() writes it under the lock
    s += m_refusals.lastLine();
  }
  if (!m_ready.load()) s += "\n  the shim's context never came";
  return s;
}

void InplaceRegistry::statsJson(JsonWriter& j) const {
  auto n = [](const std::atomic<uint64_t>& v) { return v.load(std::memory_order_relaxed); };
  j.member("static_ranges", n(m_staticRegistered)).member("mappings", n(m_mmapRegistered));
  j.member("registered_bytes", n(m_registeredBytes)).member("register_ns", n(m_registerNs));
  j.member("refused", n(m_refusals.count())).member("static_not_found", n(m_notFound));
  j.member("table_full", n(m_tableFull)).member("unpinned_before_unmap", n(m_unpinned));
  j.member("left_to_program_buffers", n(m_yielded)).member("mappings_tracked", n(m_mappingsSeen));
  j.member("h2d", n(m_h2d)).member("h2d_bytes", n(m_h2dBytes)).member("d2h", n(m_d2h));
  j.member("d2h_bytes", n(m_d2hBytes)).member("context_came", m_ready.load());
}

}  // namespace hetopt::shim
