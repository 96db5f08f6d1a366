// SPDX-License-Identifier: MIT
/** @file Trace mode's record stream; see record_stream.h.
 * Claiming and publishing, the recording thread's loop and sleep, drains, flushes, fork. */
#include "shim/core/record_stream.h"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "common/log.h"
#include "shim/core/state.h"
#include "trace/recorder.h"

namespace hetopt::shim {
namespace {
constexpr size_t kBatch = 1024;              ///< records applied per hold of the recorder's lock
constexpr uint64_t kBusySleepNs = 1000000;   ///< between batches while records come
constexpr uint64_t kIdleSleepNs = 50000000;  ///< the longest sleep while none do
constexpr unsigned kWakeShift = 11;  ///< producers wake the thread every 2048 slots (a quarter)
constexpr uint64_t kFlushGapNs =
    50000000;  ///< a signal's flush waits this long for a record being written

void nap(uint64_t ns) {
  const timespec t{static_cast<time_t>(ns / 1000000000ull), static_cast<long>(ns % 1000000000ull)};
  nanosleep(&t, nullptr);
}
}  // namespace

trace::RecordRing::Reservation RecordStream::begin(size_t bytes) {
  if (HETOPT_UNLIKELY(!m_running.load(std::memory_order_acquire))) startThread();
  return m_ring.reserve(bytes, stall, this);
}

void RecordStream::end(const trace::RecordRing::Reservation& r) {
  m_ring.publish(r);
  if (HETOPT_UNLIKELY((r.ticket >> kWakeShift) != ((r.ticket + r.cells) >> kWakeShift)) &&
      m_sleeping.load(std::memory_order_relaxed))
    wake();
}

void RecordStream::push(const void* record, size_t bytes) {
  if (bytes > trace::RecordRing::kMaxRecord) return;
  const trace::RecordRing::Reservation r = begin(bytes);
  memcpy(r.data, record, bytes);
  end(r);
}

void RecordStream::stall(void* self) {
  auto* s = static_cast<RecordStream*>(self);
  s->wake();
  // Help: whoever holds the recorder's lock drains; this thread's own allocations while it
  // applies are the shim's (not recorded, never back into the ring).
  if (s->m_lock.try_lock()) {
    ScopedInternal internal;
    s->drainSome(kBatch);
    s->m_lock.unlock();
  } else {
    sched_yield();
  }
}

void RecordStream::startThread() {
  std::lock_guard<std::mutex> guard(m_startMutex);
  if (m_running.load(std::memory_order_relaxed)) return;
  ScopedInternal internal;
  m_stop.store(false, std::memory_order_relaxed);
  m_exited.store(false, std::memory_order_relaxed);
  // Every signal blocked in the recording thread: the program's signals go to its own threads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int rc = pthread_create(&m_thread, nullptr, threadMain, this);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    warn("trace mode: cannot start the recording thread (%d); the program's threads record", rc);
    m_threadless.store(true, std::memory_order_relaxed);
    m_exited.store(true, std::memory_order_relaxed);
  } else {
    pthread_detach(m_thread);
  }
  m_running.store(true, std::memory_order_release);
}

void* RecordStream::threadMain(void* self) {
  ++t_depth;  // for the thread's whole life: nothing it allocates or calls is the program's
  pthread_setname_np(pthread_self(), "hetopt-record");
  static_cast<RecordStream*>(self)->run();
  return nullptr;
}

void RecordStream::run() {
  uint64_t idle = kBusySleepNs;
  while (!m_stop.load(std::memory_order_acquire)) {
    trace::TscClock::refresh();  // the trace clock's scale (every 20 ms at most)
    if (m_flushRequests.load(std::memory_order_acquire) !=
        m_flushesDone.load(std::memory_order_relaxed))
      serveFlush();
    size_t n;
    {
      std::lock_guard<std::mutex> guard(m_lock);
      n = drainSome(kBatch);
    }
    if (n == kBatch) continue;
    idle = n ? kBusySleepNs : std::min(idle * 2, kIdleSleepNs);
    sleep(idle);
  }
  // What recording cost beside the program's threads (HETOPT_TIMINGS prints it at exit).
  timespec cpu{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  m_threadCpuNs.store(
      static_cast<uint64_t>(cpu.tv_sec) * 1000000000ull + static_cast<uint64_t>(cpu.tv_nsec),
      std::memory_order_release);
  m_exited.store(true, std::memory_order_release);
}

size_t RecordStream::drainSome(size_t max) {
  size_t n = 0;
  for (size_t len; n < max; ++n) {
    const unsigned char* record = m_ring.front(&len);
    if (!record) break;
    // Applied in place; freed after, even when applying throws (out of memory).
    struct Release {
      trace::RecordRing& ring;
      ~Release() { ring.release(); }
    } release{m_ring};
    m_sink.apply(record, len);
  }
  if (n) m_applied.fetch_add(n, std::memory_order_relaxed);
  return n;
}

bool RecordStream::drainLocked(uint64_t waitNs) {
  const uint64_t target = m_ring.head();
  const uint64_t deadline = trace::monotonicNs() + waitNs;
  while (m_ring.tail() < target) {
    if (drainSome(kBatch)) continue;
    if (trace::monotonicNs() >= deadline) return false;
    sched_yield();  // a producer is still copying its record
  }
  return true;
}

void RecordStream::wake() {
  m_wakeWord.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&m_wakeWord), FUTEX_WAKE_PRIVATE, 1, nullptr,
          nullptr, 0);
}

void RecordStream::sleep(uint64_t ns) {
  const uint32_t word = m_wakeWord.load(std::memory_order_acquire);
  m_sleeping.store(true, std::memory_order_seq_cst);
  // Records that came meanwhile, a flush or a stop: no sleep. A wake missed in between costs
  // at most this one sleep.
  if (m_ring.empty() && !m_stop.load(std::memory_order_acquire) &&
      m_flushRequests.load(std::memory_order_acquire) ==
          m_flushesDone.load(std::memory_order_relaxed)) {
    const timespec t{static_cast<time_t>(ns / 1000000000ull),
                     static_cast<long>(ns % 1000000000ull)};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&m_wakeWord), FUTEX_WAIT_PRIVATE, word, &t,
            nullptr, 0);
  } else if (!m_ring.empty()) {
    nap(ns);  // a batch's worth to come: sleep anyway, the producers are not waiting
  }
  m_sleeping.store(false, std::memory_order_relaxed);
}

void RecordStream::serveFlush() {
  const uint64_t request = m_flushRequests.load(std::memory_order_acquire);
  const uint64_t target = m_flushTarget.load(std::memory_order_acquire);
  {
    std::lock_guard<std::mutex> guard(m_lock);
    const uint64_t deadline = trace::monotonicNs() + kFlushGapNs;
    while (m_ring.tail() < target) {
      if (drainSome(kBatch)) continue;
      if (trace::monotonicNs() >= deadline) break;  // a record its thread may never finish
      sched_yield();
    }
    try {
      if (m_flushFinishes.load(std::memory_order_acquire)) {
        m_sink.finish();
        m_stop.store(true, std::memory_order_release);
      } else {
        m_sink.snapshot();
      }
    } catch (...) {  // out of memory: the last snapshot on disk stays
    }
  }
  m_flushesDone.store(request, std::memory_order_release);
}

bool RecordStream::flushFromSignal(uint64_t waitNs, bool finish) {
  if (!m_running.load(std::memory_order_acquire) || m_threadless.load(std::memory_order_relaxed) ||
      m_exited.load(std::memory_order_acquire) || pthread_equal(pthread_self(), m_thread))
    return false;
  m_flushTarget.store(m_ring.head(), std::memory_order_release);
  m_flushFinishes.store(finish, std::memory_order_release);
  const uint64_t request = m_flushRequests.fetch_add(1, std::memory_order_acq_rel) + 1;
  wake();
  for (uint64_t waited = 0; waited < waitNs; waited += 1000000) {
    if (m_flushesDone.load(std::memory_order_acquire) >= request) return true;
    nap(1000000);
  }
  return m_flushesDone.load(std::memory_order_acquire) >= request;
}

bool RecordStream::finishAtExit(uint64_t waitNs) {
  if (flushFromSignal(waitNs, true)) return true;
  // A process that made no OpenCL call (a shell that runs the program, a launcher) queues nothing
  // and starts no thread; without this, every one that ends through _exit (dash does) would leave
  // a trace that reads as if the program had been killed.
  if (m_running.load(std::memory_order_acquire) || !m_ring.empty() || !m_lock.try_lock())
    return false;
  std::lock_guard<std::mutex> guard(m_lock, std::adopt_lock);
  // _exit may come from a signal handler that interrupted malloc: what finishing allocates comes
  // from the shim's static reserve, as for a fatal signal's snapshot.
  ++t_depth;
  t_inSignalSnapshot = true;
  if (hetopt_shim_signal_allocations) hetopt_shim_signal_allocations(true);
  bool done = true;
  try {
    m_sink.finish();
  } catch (...) {  // the reserve ran out: the last snapshot on disk stays
    done = false;
  }
  if (hetopt_shim_signal_allocations) hetopt_shim_signal_allocations(false);
  t_inSignalSnapshot = false;
  --t_depth;
  return done;
}

void RecordStream::stop(uint64_t waitNs) {
  std::lock_guard<std::mutex> guard(m_startMutex);
  if (!m_running.load(std::memory_order_acquire) || m_threadless.load(std::memory_order_relaxed))
    return;
  m_stop.store(true, std::memory_order_release);
  wake();
  // Short naps first: once woken, the thread is gone within tens of microseconds, and every
  // traced program's exit waits here (a first nap of 1 ms was most of the wait).
  for (uint64_t waited = 0, step = 20000;
       waited < waitNs && !m_exited.load(std::memory_order_acquire);
       waited += step, step = std::min<uint64_t>(step * 2, 1000000))
    nap(step);
}

void RecordStream::forkPrepare() {
  m_startMutex.lock();
  m_forkHead = m_ring.close();
  m_lock.lock();
  // Bounded: a record whose writer never finishes (it cannot, short of a signal handler that
  // records inside a push) must not hang fork(); the child then drops it (forkChild).
  const uint64_t deadline = trace::monotonicNs() + 10000000000ull;
  while (m_ring.tail() < m_forkHead && trace::monotonicNs() < deadline)
    if (!drainSome(kBatch)) sched_yield();
}

void RecordStream::forkParent() {
  m_lock.unlock();
  m_ring.open();
  m_startMutex.unlock();
}

void RecordStream::forkChild() {
  m_lock.unlock();
  m_ring.reset();
  m_running.store(false, std::memory_order_relaxed);
  m_threadless.store(false, std::memory_order_relaxed);
  m_sleeping.store(false, std::memory_order_relaxed);
  m_flushesDone.store(m_flushRequests.load(std::memory_order_relaxed), std::memory_order_relaxed);
  m_startMutex.unlock();
}

}  // namespace hetopt::shim
