// SPDX-License-Identifier: MIT
/**
 * @file HETOPT_MODE=trace: records every OpenCL call and every tracked host allocation into a
 * compressed, SSA-versioned trace (trace/recorder.h) with host and device timings. The program's
 * threads only copy each event into one ordered stream and a recording thread does the rest, so a
 * program's thread pays for little more than a copy. Files: HETOPT_TRACE_FILE (default
 * ./hetopt-<prog>-<pid>.trace; "%p" in it is replaced by the pid); exec'd children inherit
 * "<file>.%p" and forked children switch to it, so every process writes its own file.
 */
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "shim/core/device_timing.h"
#include "shim/core/interceptor.h"
#include "shim/core/program_capture.h"
#include "shim/core/record_stream.h"
#include "shim/core/trace_records.h"
#include "shim/core/twin_queues.h"
#include "trace/address_set.h"
#include "trace/call_model.h"
#include "trace/recorder.h"

namespace hetopt::shim {

/// Glue over its parts: twin_queues.h decides how each queue is timed and keeps what the program
/// sees of its queues and events as it would be natively; device_timing.h samples, injects and
/// reads the events of timed commands (both on the program's threads, at call time); each call,
/// tracked allocation and free is copied into a raw record (trace_records.h) and queued in one
/// ordered stream (record_stream.h); the recording thread turns the records into leaves through
/// the call model (trace/call_model.h) and the recorder (trace/recorder.h), which folds and
/// writes. Here: the per-call state between callBegin and callEnd, thread ids, the filter of
/// tracked block starts that free() asks, the trace file's name, fork restart, exit (also _exit
/// and exec), the recording's own cost and the start-up times.
class TraceInterceptor final : public Interceptor, private DeviceTiming::Sink, private RecordSink {
 public:
  /// Opens the trace file; null (after one warning) when it cannot be created.
  static TraceInterceptor* create();

  void callBegin(CallRecord& call) override;
  void callEnd(CallRecord& call) override;
  void allocated(const AllocEvent& event) override;
  void freeing(void* ptr) override;
  void processExit() override;
  /// _exit/_Exit: the recording thread finishes the trace (this thread only waits, ~2 s at most:
  /// it may be a signal handler), or this thread when none ever ran (RecordStream::finishAtExit);
  /// not after a fatal signal's snapshot (that trace stays incomplete, as the program was killed).
  void quickExit() override;
  /// Every tracked allocation and free; and unmapping, only to record what is queued first: an
  /// untracked region is classified (/proc/self/maps) while its mapping is still there.
  Wants wants() const override { return Wants{.allocations = true, .mappings = true}; }
  bool unmapping(void* addr, size_t len, bool discard) override;
  /// Before exec (the process image is replaced, no exit handlers run): what is queued is
  /// recorded and a snapshot written.
  void beforeExec(const char* program) override;
  /// The fork protocol (lifecycle.cpp): the stream is drained and the recorder's mutex held across
  /// fork(); a forked child then starts its own trace file and recording thread.
  void forkPrepare() override;
  void forkParent() override;
  void forkChild() override;

  /// A thread that recorded something ended.
  void threadExit(uint32_t tid, uint32_t generation);
  /// In a fatal signal's handler (fatal_signals.h): has the recording thread record what is
  /// queued and write a snapshot (waiting at most ~1 s); where it cannot, writes what was
  /// recorded, unless another thread keeps the recorder for more than ~0.1 s or this one was
  /// inside it.
  void signalSnapshot();
  /// Tests: the stream between the program's threads and the recording thread.
  RecordStream& stream() { return m_stream; }

 private:
  TraceInterceptor();
  uint32_t threadId();  ///< this thread's system id, announced in the stream on first use
  uint32_t registerThread(uint32_t generation);
  void recordCall(CallRecord& call, uint64_t hostNs);
  void noteStartup(api::ApiId id, uint64_t startNs);
  void push(const unsigned char* record, size_t bytes) { m_stream.push(record, bytes); }
  void timed(uint64_t timingId, const trace::DeviceAgg* timing, uint64_t deviceStart,
             uint64_t deviceEnd) override;
  void clock(uint64_t queue, trace::ClockMethod method, int64_t offsetNs,
             uint64_t uncertaintyNs) override;
  void apply(const unsigned char* record, size_t bytes) override { m_applier.apply(record, bytes); }
  void snapshot() override { m_recorder.snapshot(); }
  void finish() override;  ///< recorder lock held: the End record, file closed

  trace::Recorder m_recorder;
  trace::RecorderConfig m_config;
  LabelCache m_labels;
  RecordApplier m_applier;
  RecordStream m_stream;
  std::mutex m_timingMutex;  ///< the twin queues' maps and the device timings' lists
  TwinQueues m_queues;
  ProgramCapture m_programs;  ///< what `hetopt run` builds ahead: `<trace>.programs`
  std::string m_path;         ///< this process's trace file
  DeviceTiming m_timing;
  /// Starts of the tracked blocks alive, as the program's threads see them (free() asks it
  /// lock-free; updated at each tracked malloc and free, in program order, under m_blocksMutex).
  trace::AddressSet m_blocks;
  std::mutex m_blocksMutex;
  std::atomic<uint32_t> m_generation{
      1};  ///< changes in a forked child: thread ids are announced again
  std::atomic<uint64_t> m_nextTimingId{0};
  std::atomic<int> m_pid{0};   ///< the process this trace is of (a vfork child shares our memory)
  std::string m_childPattern;  ///< path for children, with %p
  bool m_measureSelf = false;  ///< HETOPT_DEBUG: time the recording after every call
  std::atomic<uint64_t> m_selfNs{0}, m_selfCalls{0};
  bool m_tscAllowed =
      true;  ///< HETOPT_CALL_CLOCK is not "monotonic" (a forked child starts it anew)
  /// The Startup record: ns since tracing started at the first OpenCL call and at the first
  /// context creation (0: not yet).
  std::atomic<uint64_t> m_firstCallNs{0}, m_firstContextNs{0};
  std::atomic<bool> m_signalled{false};  ///< a fatal signal's snapshot was written
  std::atomic<bool> m_active{
      true};  ///< false after exit or a failed restart; read lock-free by free()
};

}  // namespace hetopt::shim
