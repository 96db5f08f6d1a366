// SPDX-License-Identifier: MIT
/**
 * @file Optimize mode: which OpenCL context the pinned memory is made in (early, the program's,
 * or its own: ContextChoice). The driver thread's await() decides; offers after it are ignored.
 * Any member may be called from any thread: the state is under one mutex and its condition
 * variable, and no OpenCL call is made while it is held. OpenCL comes through realClFunction
 * (below.h), which unit tests point at a fake table.
 */
#pragma once
#include <CL/cl.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "policies/policy.h"
#include "shim/core/interceptor.h"

namespace hetopt::shim {

/// The policies' OpenCL entry points (the next layer's or the loader's), in `context`.
PolicyEnv policyEnvIn(cl_context context);

/// One of three:
///  - early (plan `context early`: the profile saw one context on one device): hetopt's driver
///    thread makes it right after enumeration and hands it to the program's first
///    clCreateContext[FromType] that asks for exactly it (this device alone, at most this
///    platform); the real call is skipped and the program's error callback is called through ours;
///  - the program's: its first context on the plan's device, offered from callEnd and retained for
///    the process's life;
///  - its own: made by the driver thread when a candidate allocation comes before any context (the
///    direct variant) or with HETOPT_POOL_CONTEXT=own (made at start-up, not waited for).
class ContextChoice {
 public:
  /// Before any thread starts: `ownOnly` is HETOPT_POOL_CONTEXT=own; `early` says the driver thread
  /// will make the early context (else hand-outs never wait for one).
  void configure(bool ownOnly, bool early);
  bool ownOnly() const { return m_ownOnly; }
  /// The driver thread is to make the early context (configured, not failed meanwhile).
  bool earlyWanted();

  /// Enumeration found the plan's device: offers may be taken from now on.
  void setDevice(cl_platform_id platform, cl_device_id device);

  // ---- the early context ------------------------------------------------------------------------
  /// Driver thread: makes the early context (retained: our reference beside the program's, so the
  /// pinned memory lives as long as the process). The context, or null when it failed.
  cl_context makeEarly(decltype(&clCreateContext) createContext);
  /// Driver thread: no early context will come (it failed before making one).
  void abandonEarly();
  /// callBegin of clCreateContext[FromType]: waits while the early context is being made, then
  /// answers the call with it (CallRecord::skip) when the call asks for exactly it. Once.
  void handOut(CallRecord& call);

  // ---- the program's context --------------------------------------------------------------------
  /// callEnd of a successful clCreateContext[FromType]: retains and takes the context when it holds
  /// the plan's device and nothing was chosen yet. The context taken, else null.
  cl_context offer(const CallRecord& call);
  /// A candidate allocation needs memory before any context exists (the direct variant): the
  /// driver thread stops waiting and makes its own.
  void requestOwn();

  /// Driver thread: waits for the program's context (or the early one), unless own-only. The
  /// choice is made: the context, or null when the driver thread must make its own.
  cl_context await();
  /// The pinning context exists or the choice is made.
  bool exists();
  /// Which context the pinned memory is (being) made in, for the stats: "the program's context",
  /// "the early context (the program's)", "its own context", ...
  const char* origin();

  /// The program got the early context.
  bool earlyHandedOut();
  /// How long the program's context creation waited for the early context (ms).
  double handOutWaitMs() const { return m_handOutWaitMs.load(std::memory_order_relaxed); }

  /// The fork protocol (lifecycle.cpp): the mutex is held across fork().
  void lockForFork() { m_mutex.lock(); }
  void unlockAfterFork() { m_mutex.unlock(); }
  /// In the child (mutex held): the parent's contexts are no contexts there; nothing is handed out
  /// or taken.
  void forkChild();

 private:
  using Notify = void(CL_CALLBACK*)(const char*, const void*, size_t, void*);
  enum class Early { Making, Made, Failed };

  static void CL_CALLBACK earlyNotify(const char* info, const void* data, size_t size, void* self);
  /// The properties name this platform and nothing else (null: `nullOk`).
  bool propertiesMatch(const cl_context_properties* props, bool nullOk) const;

  std::mutex m_mutex;
  std::condition_variable m_changed;
  bool m_ownOnly = false;
  cl_platform_id m_platform = nullptr;  ///< set before offers are taken, never changed
  cl_device_id m_device = nullptr;
  Early m_early = Early::Making;
  cl_context m_earlyContext = nullptr;
  bool m_earlyHandedOut = false;
  std::atomic<double> m_handOutWaitMs{0};
  std::atomic<Notify> m_programNotify{nullptr};  ///< the program's callback, once handed out
  std::atomic<void*> m_programNotifyData{nullptr};
  cl_context m_programContext = nullptr;  ///< the pinning context: the program's (or the early one)
  bool m_ownWanted = false;               ///< a candidate allocation came before any context
  bool m_chosen = false;                  ///< await() returned: later offers are ignored
};

}  // namespace hetopt::shim
