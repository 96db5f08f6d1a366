// SPDX-License-Identifier: MIT
/**
 * @file Trace mode's record stream: the program's threads queue raw records (trace_records.h)
 * into one ordered ring (trace/record_ring.h) and the recording thread applies them to the
 * recorder, under the recorder's lock, in ticket order. Program threads take no lock and allocate
 * nothing; while the ring is full they apply records themselves (back-pressure: nothing is
 * dropped, nobody waits on a thread that waits on it).
 */
#pragma once
#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "trace/record_ring.h"

namespace hetopt::shim {

/// What the stream hands its records to. Both run with the recorder's lock held.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void apply(const unsigned char* record, size_t bytes) = 0;
  virtual void snapshot() = 0;
  virtual void finish() = 0;
};

/// The recording thread (started at the first record, again in a forked child; every signal
/// blocked, its own work never recorded) applies each record where it lies in the ring, then frees
/// its cells; it drains in batches, sleeping a millisecond between them while records come and
/// longer while none do; producers wake it when the ring fills a quarter. The recorder writes its
/// checkpoints as events arrive, so this thread writes them.
class RecordStream {
 public:
  /// `lock`: the recorder's; `sink` applies what it guards.
  RecordStream(std::mutex& lock, RecordSink& sink) : m_lock(lock), m_sink(sink) {}

  /// Program thread: claims the place of a record of `bytes` (at most RecordRing::kMaxRecord),
  /// waiting while the ring is full; write the record at the reservation's `data`, then end().
  /// While the ring is full it wakes the recording thread and, when it gets the recorder's lock,
  /// applies records itself. Between begin() and end() the thread must queue nothing else (a full
  /// ring would wait on the record it holds).
  trace::RecordRing::Reservation begin(size_t bytes);
  void end(const trace::RecordRing::Reservation& r);
  /// Program thread: queues a copy of one record (one over kMaxRecord bytes is dropped).
  void push(const void* record, size_t bytes);

  /// Lock held: applies every record claimed so far, waiting up to `waitNs` for the ones still
  /// being written; false when some were left (timed out at one).
  bool drainLocked(uint64_t waitNs);
  /// Ends the recording thread (waits up to `waitNs` for it); records left stay queued. At exit
  /// the caller then drains (drainLocked) and finishes.
  void stop(uint64_t waitNs);
  /// In a fatal signal's handler or at _exit: has the recording thread drain up to the head seen
  /// then (not past a record a thread is still writing, waiting for it at most 50 ms) and write a
  /// snapshot, waiting at most `waitNs`; false when it cannot (the caller is the recording thread
  /// itself, none runs, or it did not answer). The caller takes no lock and allocates nothing: it
  /// may be a signal handler. `finish`: finish the trace (the process ends) instead of a
  /// snapshot; the recording thread then ends.
  bool flushFromSignal(uint64_t waitNs, bool finish = false);
  /// At _exit: flushFromSignal(waitNs, true); and when no recording thread ever ran here (nothing
  /// was queued: the trace on disk holds everything but its end), this thread finishes the trace
  /// itself, if the recorder's lock is free at once (never waited for: it may be a signal
  /// handler). False when the trace stays at its last checkpoint.
  bool finishAtExit(uint64_t waitNs);

  /// The shim's fork protocol: forkPrepare closes the ring's gate, takes the recorder's lock and
  /// drains every record claimed before it (the child's object model must have them; the child
  /// has no recording thread and no half-written record); forkParent/forkChild reopen.
  void forkPrepare();  ///< gate closed, recorder's lock held and the ring drained on return
  void forkParent();
  void forkChild();  ///< the child has no recording thread: the next push starts one

  /// Records the recording thread (or a helper) applied; for tests and debugging.
  uint64_t applied() const { return m_applied.load(std::memory_order_relaxed); }
  /// CPU time the recording thread used, known once it has stopped (0 before, or without one).
  uint64_t threadCpuNs() const { return m_threadCpuNs.load(std::memory_order_acquire); }
  /// Tests: the ring itself (e.g. to leave a record half-written, as a thread killed in it would).
  trace::RecordRing& ring() { return m_ring; }

 private:
  static void* threadMain(void* self);
  static void stall(void* self);
  void startThread();
  void run();
  /// Lock held: applies up to `max` published records; how many.
  size_t drainSome(size_t max);
  void wake();
  void sleep(uint64_t ns);
  void serveFlush();

  std::mutex& m_lock;
  RecordSink& m_sink;
  trace::RecordRing m_ring;
  std::mutex m_startMutex;  ///< thread start and stop (held across fork)
  pthread_t m_thread{};
  std::atomic<bool> m_running{false};  ///< a recording thread runs (or its start failed for good)
  std::atomic<bool> m_threadless{false};  ///< its start failed: producers drain when the ring fills
  std::atomic<bool> m_stop{false};
  std::atomic<bool> m_exited{false};
  std::atomic<uint32_t> m_wakeWord{0};  ///< futex the recording thread sleeps on
  std::atomic<bool> m_sleeping{false};
  std::atomic<uint64_t> m_flushTarget{0}, m_flushRequests{0}, m_flushesDone{0};
  std::atomic<bool> m_flushFinishes{false};
  std::atomic<uint64_t> m_applied{0};
  std::atomic<uint64_t> m_threadCpuNs{0};
  uint64_t m_forkHead = 0;  ///< forkPrepare's
};

}  // namespace hetopt::shim
