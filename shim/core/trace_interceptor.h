// SPDX-License-Identifier: MIT
/**
 * @file HETOPT_MODE=trace: records every OpenCL call and every tracked host allocation into a
 * compressed, SSA-versioned trace (trace/recorder.h) with host and device timings.
 *
 * Glue over four parts: the call model (trace/call_model.h) turns a call and its API-table entry
 * into a leaf with its references; twin_queues.h decides how each queue is timed and keeps what
 * the program sees of its queues and events as it would be natively; device_timing.h samples,
 * injects and reads the events of timed commands; the recorder (trace/recorder.h) folds and
 * writes. Here: the per-call state between callBegin and callEnd, thread indices, the trace
 * file's name, fork restart, the recording's own cost and the start-up times.
 *
 * Files: HETOPT_TRACE_FILE (default ./hetopt-<prog>-<pid>.trace); "%p" in it is replaced by the
 * pid. Exec'd children inherit "<file>.%p" and forked children switch to it, so every process
 * writes its own file.
 */
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "shim/core/device_timing.h"
#include "shim/core/interceptor.h"
#include "shim/core/twin_queues.h"
#include "trace/call_model.h"
#include "trace/recorder.h"

namespace hetopt::shim {

class TraceInterceptor final : public Interceptor {
 public:
  /// Opens the trace file; null (after one warning) when it cannot be created.
  static TraceInterceptor* create();

  void callBegin(CallRecord& call) override;
  void callEnd(CallRecord& call) override;
  void allocated(const AllocEvent& event) override;
  void freeing(void* ptr) override;
  void processExit() override;
  /// The fork protocol (state.cpp): the recorder's mutex is held across fork(); a forked child
  /// then starts its own trace file.
  void forkPrepare() override;
  void forkParent() override;
  void forkChild() override;

  /// A thread that recorded something ended.
  void threadExit(uint32_t thread, uint32_t generation);
  /// In a fatal signal's handler (fatal_signals.h): writes what was recorded, unless another
  /// thread keeps the recorder for more than ~0.1 s or this one was inside it.
  void signalSnapshot();

 private:
  TraceInterceptor();
  uint32_t threadIndex();  ///< recorder lock held
  void recordCall(CallRecord& call, uint64_t hostNs);
  void noteStartup(api::ApiId id);

  trace::Recorder m_recorder;
  trace::RecorderConfig m_config;
  trace::CallModel m_model;
  TwinQueues m_queues;
  DeviceTiming m_timing;
  std::string m_childPattern;  ///< path for children, with %p
  static constexpr uint32_t kSelfTimePeriod = 64;  ///< recording timed on about one call in this many
  bool m_measureSelf = false;  ///< HETOPT_DEBUG: time the recording after every call
  std::atomic<uint64_t> m_selfNs{0}, m_selfCalls{0};
  /// The Startup record: ns since tracing started at the first OpenCL call and at the first
  /// context creation (0: not yet).
  std::atomic<uint64_t> m_firstCallNs{0}, m_firstContextNs{0};
  std::atomic<bool> m_active{true};  ///< false after exit or a failed restart; read lock-free by free()
};

}  // namespace hetopt::shim
