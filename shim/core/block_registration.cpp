// SPDX-License-Identifier: MIT
/** @file The register strategy for heap blocks; see block_registration.h.
 * Adoption and release on the program's threads, the worker that registers, transfer(). */
#include "shim/core/block_registration.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "common/log.h"
#include "common/units.h"
#include "shim/core/state.h"
#include "shim/core/stats_text.h"

namespace hetopt::shim {
namespace {

uint64_t nowNs() {
  using namespace std::chrono;
  return static_cast<uint64_t>(
      duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count());
}

// The process's registration (one optimize interceptor per process), for the exit handler.
std::atomic<BlockRegistration*> s_exitee{nullptr};

}  // namespace

BlockRegistration::BlockRegistration(const Plan& plan) : m_plan(plan) {}

BlockRegistration::~BlockRegistration() {
  if (!m_worker.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_exiting.store(true, std::memory_order_release);
  }
  m_changed.notify_all();
  m_worker.join();
  BlockRegistration* self = this;
  s_exitee.compare_exchange_strong(self, nullptr);
}

bool BlockRegistration::adopt(void* ptr, size_t bytes, size_t usable, uint64_t waitNsPerMiB,
                              unsigned site) {
  if (m_child.load(std::memory_order_relaxed) || m_exiting.load(std::memory_order_relaxed))
    return false;
  std::lock_guard<std::mutex> lock(m_mutex);
  unsigned i = 0;
  while (i < kMaxBlocks && m_entries[i].state != State::Free) ++i;
  if (i == kMaxBlocks || !m_blocks.insert(ptr, usable, i)) {
    m_tableFull.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  Entry& e = m_entries[i];
  e = Entry{};
  e.start = reinterpret_cast<uintptr_t>(ptr);
  e.bytes = bytes;
  e.waitNsPerMiB = waitNsPerMiB;
  e.site = site;
  e.order = m_nextOrder++;
  e.state = State::Queued;
  ++m_queued;
  m_live.fetch_add(1, std::memory_order_release);
  m_adopted.fetch_add(1, std::memory_order_relaxed);
  m_changed.notify_all();  // the worker, once started
  return true;
}

uint64_t BlockRegistration::waitOf(const void* ptr, unsigned* site) {
  std::lock_guard<std::mutex> lock(m_mutex);
  const unsigned* i = m_blocks.valueOf(ptr);
  if (site) *site = i ? m_entries[*i].site : kNoSite;
  return i ? m_entries[*i].waitNsPerMiB : 0;
}

void BlockRegistration::forget(void* ptr) {
  Allocation registration;
  {
    std::unique_lock<std::mutex> lock(m_mutex);
    const unsigned* found = m_blocks.valueOf(ptr);
    if (!found) return;
    const unsigned i = *found;
    Entry& e = m_entries[i];
    // The buffer must exist before it can be released. Not in a forked child: the registering
    // thread does not exist there.
    if (!m_child.load(std::memory_order_relaxed))
      m_changed.wait(lock, [&e] { return e.state != State::Registering; });
    if (e.state == State::Registered) registration = e.registration;
    if (e.state == State::Queued) --m_queued;
    m_blocks.erase(ptr, nullptr);
    e = Entry{};
    m_live.fetch_sub(1, std::memory_order_release);
  }
  // Neither in a child (the buffer is the parent's) nor once the process exits (the driver may be
  // gone: it frees everything with the process).
  if (!registration.buffer || m_child.load(std::memory_order_relaxed) ||
      m_exiting.load(std::memory_order_acquire))
    return;
  const uint64_t begin = nowNs();
  PolicyStatus st = m_register->release(&registration);
  if (!st) debug("releasing a block's registration failed: %s", st.reason);
  m_unregistered.fetch_add(1, std::memory_order_relaxed);
  m_unregisterNs.fetch_add(nowNs() - begin, std::memory_order_relaxed);
}

void BlockRegistration::release(void* ptr, void (*freeFn)(void*)) {
  {
    std::unique_lock<std::mutex> lock(m_mutex);
    const unsigned* found = m_blocks.valueOf(ptr);
    const bool child = m_child.load(std::memory_order_relaxed);
    if (found && !child) {
      const unsigned i = *found;
      Entry& e = m_entries[i];
      m_changed.wait(lock, [&e] { return e.state != State::Registering; });
      if (e.state == State::Registered && m_worker.joinable() &&
          !m_exiting.load(std::memory_order_acquire)) {
        m_blocks.erase(ptr, nullptr);  // not the program's any more; freed by the worker
        m_live.fetch_sub(1, std::memory_order_release);
        e.state = State::Releasing;
        e.freeFn = freeFn;
        ++m_releasing;
        m_deferred.fetch_add(1, std::memory_order_relaxed);
        m_changed.notify_all();
        return;
      }
    }
  }
  forget(ptr);
  freeFn(ptr);
}

void BlockRegistration::yieldTo(const void* host, size_t bytes) {
  if (m_live.load(std::memory_order_acquire) == 0 || m_child.load(std::memory_order_relaxed))
    return;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(host), hi = lo + (bytes ? bytes : 1);
  // One block at a time: the buffer is released with the lock dropped.
  for (;;) {
    Allocation registration;
    {
      std::unique_lock<std::mutex> lock(m_mutex);
      Entry* hit = nullptr;
      for (Entry& e : m_entries)
        if (e.state != State::Free && e.state != State::Failed && e.start < hi &&
            e.start + e.bytes > lo) {
          hit = &e;
          break;
        }
      if (!hit) return;
      m_changed.wait(lock, [hit] { return hit->state != State::Registering; });
      if (hit->state == State::Queued) --m_queued;
      if (hit->state == State::Registered) registration = hit->registration;
      hit->registration = Allocation{};
      if (hit->state != State::Free)
        hit->state = State::Failed;  // the program's block, never pinned again
      m_yielded.fetch_add(1, std::memory_order_relaxed);
    }
    if (!registration.buffer) continue;
    PolicyStatus st = m_register->release(&registration);
    if (!st) debug("releasing a block's registration failed: %s", st.reason);
  }
}

void BlockRegistration::start(const PolicyEnv& env, uint64_t maxBufferBytes) {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_child.load(std::memory_order_relaxed) || m_ready.load(std::memory_order_relaxed)) return;
    m_env = env;
    m_maxBufferBytes = maxBufferBytes;
    m_register = makePolicy(PolicyKind::Register, m_env);
    m_ready.store(true, std::memory_order_release);
  }
  // Registered now, after the driver was loaded and set up its own exit handlers: this one runs
  // before them, while registering and releasing buffers is still safe.
  BlockRegistration* none = nullptr;
  if (s_exitee.compare_exchange_strong(none, this))
    atexit([] {
      if (BlockRegistration* r = s_exitee.load()) r->prepareForExit();
    });
  m_worker = std::thread([this] { workerLoop(); });
}

void BlockRegistration::prepareForExit() {
  std::unique_lock<std::mutex> lock(m_mutex);
  m_exiting.store(true, std::memory_order_release);
  m_changed.notify_all();
  // What the worker is doing finishes before the driver's own exit handlers run; the frees it
  // has not started are left to the process's end.
  m_changed.wait_for(lock, std::chrono::seconds(2), [this] {
    if (m_workerBusy) return false;
    for (const Entry& e : m_entries)
      if (e.state == State::Registering) return false;
    return true;
  });
}

bool BlockRegistration::oldestQueued(unsigned* index) const {
  bool found = false;
  for (unsigned i = 0; i < kMaxBlocks; ++i) {
    if (m_entries[i].state != State::Queued) continue;
    if (!found || m_entries[i].order < m_entries[*index].order) *index = i;
    found = true;
  }
  return found;
}

void BlockRegistration::workerLoop() {
  ScopedInternal internal;  // its allocations and OpenCL calls are the shim's own
  std::unique_lock<std::mutex> lock(m_mutex);
  for (;;) {
    m_changed.wait(lock, [this] {
      return m_queued > 0 || m_releasing > 0 || m_child.load(std::memory_order_relaxed) ||
             m_exiting.load(std::memory_order_relaxed);
    });
    if (m_child.load(std::memory_order_relaxed) || m_exiting.load(std::memory_order_relaxed))
      return;
    // Frees first: they give memory back, and they are quick.
    unsigned i = 0;
    while (i < kMaxBlocks && m_entries[i].state != State::Releasing) ++i;
    m_workerBusy = true;
    if (i < kMaxBlocks)
      releaseEntry(i, lock);
    else if (oldestQueued(&i))
      registerEntry(i, lock);
    m_workerBusy = false;
    m_changed.notify_all();
  }
}

void BlockRegistration::registerEntry(unsigned i, std::unique_lock<std::mutex>& lock) {
  Entry& e = m_entries[i];
  e.state = State::Registering;
  --m_queued;
  void* ptr = reinterpret_cast<void*>(e.start);
  const size_t bytes = e.bytes;
  lock.unlock();
  Allocation a;
  const uint64_t begin = nowNs();
  PolicyStatus st = adoptHostMemory(m_env, ptr, bytes, &a, m_maxBufferBytes);
  const uint64_t ns = nowNs() - begin;
  m_registerNs.fetch_add(ns, std::memory_order_relaxed);
  lock.lock();
  // forget() of this block waited for this moment, so the entry is still this block's.
  if (st) {
    e.registration = a;
    e.state = State::Registered;
    m_registered.fetch_add(1, std::memory_order_relaxed);
    m_registeredBytes.fetch_add(bytes, std::memory_order_relaxed);
    char took[kUnitTextSize];
    debug("registered a heap block in place: %p + %zu bytes in %s", ptr, bytes,
          formatDuration(took, sizeof took, static_cast<double>(ns), TimeUnit::Ms));
  } else {
    e.state = State::Failed;  // not tried again: pageable, as without hetopt
    m_refusals.note(ptr, bytes, st.reason);
  }
  m_changed.notify_all();
}

void BlockRegistration::releaseEntry(unsigned i, std::unique_lock<std::mutex>& lock) {
  Entry& e = m_entries[i];
  Allocation registration = e.registration;
  void* ptr = reinterpret_cast<void*>(e.start);
  void (*freeFn)(void*) = e.freeFn;
  lock.unlock();
  const uint64_t begin = nowNs();
  PolicyStatus st = m_register->release(&registration);
  if (!st) debug("releasing a block's registration failed: %s", st.reason);
  freeFn(ptr);  // only now: the driver held its pages until the line above
  m_deferredDone.fetch_add(1, std::memory_order_relaxed);
  m_deferredNs.fetch_add(nowNs() - begin, std::memory_order_relaxed);
  lock.lock();
  e = Entry{};
  --m_releasing;
  m_changed.notify_all();
}

bool BlockRegistration::transfer(const void* host, uint64_t bytes, bool h2d, unsigned* site) {
  if (site) *site = kNoSite;
  if (m_live.load(std::memory_order_acquire) == 0) return false;
  const uintptr_t start = m_blocks.containing(host);
  if (!start) return false;
  bool pinned = false;
  {
    std::unique_lock<std::mutex> lock(m_mutex);
    const unsigned* found = m_blocks.valueOf(reinterpret_cast<void*>(start));
    if (!found) return false;  // freed meanwhile by another thread
    const unsigned i = *found;
    Entry& e = m_entries[i];
    if (site) *site = e.site;
    // What waiting may cost at most: what this transfer costs more from pageable memory.
    const uint64_t budgetNs = static_cast<uint64_t>(static_cast<double>(e.waitNsPerMiB) *
                                                    static_cast<double>(bytes) / (1 << 20));
    const bool usable = m_ready.load(std::memory_order_relaxed) &&
                        !m_child.load(std::memory_order_relaxed) &&
                        !m_exiting.load(std::memory_order_relaxed);
    const uint64_t registerNs = m_plan.registerNs(e.bytes);
    if (usable && e.state == State::Queued && registerNs && registerNs <= budgetNs) {
      m_inline.fetch_add(1, std::memory_order_relaxed);
      registerEntry(i, lock);  // cheaper here and now than the pageable transfer
    }
    if (usable && budgetNs && (e.state == State::Queued || e.state == State::Registering)) {
      const uint64_t begin = nowNs();
      m_changed.wait_for(lock, std::chrono::nanoseconds(budgetNs), [&e, start] {
        return e.start != start || (e.state != State::Queued && e.state != State::Registering);
      });
      m_waited.fetch_add(1, std::memory_order_relaxed);
      m_waitNs.fetch_add(nowNs() - begin, std::memory_order_relaxed);
    }
    pinned = e.start == start && e.state == State::Registered;
  }
  if (!pinned) {
    m_pageable.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  (h2d ? m_h2d : m_d2h).fetch_add(1, std::memory_order_relaxed);
  (h2d ? m_h2dBytes : m_d2hBytes).fetch_add(bytes, std::memory_order_relaxed);
  return true;
}

std::string BlockRegistration::stats() const {
  auto n = [](const std::atomic<uint64_t>& v) { return std::to_string(v.load()); };
  std::string s = "heap blocks registered in place: " + n(m_registered) + " of " + n(m_adopted) +
                  " adopted (" + mib(m_registeredBytes.load()) + " in " + ms(m_registerNs.load()) +
                  ")\n  " + n(m_inline) +
                  " by the transfer itself, the others on hetopt's thread\n  fallbacks: " +
                  n(m_refusals.count()) + " refused, " + n(m_tableFull) + " table full";
  s += "\n  transfers from registered blocks: " + n(m_h2d) + " h2d (" + mib(m_h2dBytes.load()) +
       "), " + n(m_d2h) + " d2h (" + mib(m_d2hBytes.load()) + ")\n  " + n(m_pageable) +
       " went ahead pageable, " + n(m_waited) + " waited for pinning (" + ms(m_waitNs.load()) +
       ")\n  freed: " + n(m_deferred) + " unpinned and freed on hetopt's thread (" +
       n(m_deferredDone) + " done, " + ms(m_deferredNs.load()) +
       ")\n  freed: " + n(m_unregistered) + " unpinned first on the program's thread (" +
       ms(m_unregisterNs.load()) + ")\n  " + n(m_yielded) +
       " left to the program's own host-pointer buffers";
  {
    std::lock_guard<std::mutex> lock(m_mutex);  // written by the registering thread under it
    s += m_refusals.lastLine();
  }
  if (!m_ready.load()) s += "\n  the pinning context never came";
  return s;
}

void BlockRegistration::statsJson(JsonWriter& j) const {
  auto n = [](const std::atomic<uint64_t>& v) { return v.load(std::memory_order_relaxed); };
  j.member("adopted", n(m_adopted)).member("registered", n(m_registered));
  j.member("registered_bytes", n(m_registeredBytes)).member("register_ns", n(m_registerNs));
  j.member("by_the_transfer", n(m_inline)).member("refused", n(m_refusals.count()));
  j.member("table_full", n(m_tableFull)).member("h2d", n(m_h2d)).member("h2d_bytes", n(m_h2dBytes));
  j.member("d2h", n(m_d2h))
      .member("d2h_bytes", n(m_d2hBytes))
      .member("went_ahead_pageable", n(m_pageable));
  j.member("waited", n(m_waited)).member("wait_ns", n(m_waitNs));
  j.member("freed_on_hetopt_thread", n(m_deferred))
      .member("freed_on_hetopt_thread_done", n(m_deferredDone));
  j.member("freed_on_hetopt_thread_ns", n(m_deferredNs));
  j.member("unpinned_on_program_thread", n(m_unregistered))
      .member("unpinned_on_program_thread_ns", n(m_unregisterNs));
  j.member("left_to_program_buffers", n(m_yielded)).member("context_came", m_ready.load());
}

}  // namespace hetopt::shim
