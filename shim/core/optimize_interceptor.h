// SPDX-License-Identifier: MIT
/**
 * @file HETOPT_MODE=optimize: pins the memory of the plan's candidate allocation sites, each site
 * the way the plan says (contracts/plan.h): served from a pre-pinned pool, or registered in place.
 *
 * Nothing waits on the program's critical path for pinning longer than pageable memory would have
 * cost. A background thread started at shim start-up enumerates the devices, does what needs no
 * OpenCL context (a hybrid pool's pages, mlock'ed), then waits for the program's first context on
 * the plan's device (offered from `callEnd` of `clCreateContext[FromType]`, retained) and pins in
 * it: in-place registrations first (BlockRegistration's worker, InplaceRegistry), then the pool.
 * In a process that may fork (driver_start.h) that thread starts at the program's first OpenCL
 * call instead, and only the driver's libraries are loaded at start-up.
 * A `register` site's blocks come from the system allocator and are registered where they are
 * (block_registration.h); so is a pool site's block that comes before its pool is ready or finds
 * it full, when registering it costs less than one of its transfers saves: real programs allocate
 * their buffers before they create a context, and a context of our own for the pool would cost
 * them 100-270 ms on NVIDIA. With HETOPT_POOL_CONTEXT=own the pool is made in a context of the
 * shim's own at start-up and a pool site's allocation waits up to HETOPT_POOL_WAIT_MS for it (the
 * way before 2026-11-24, kept to measure against).
 * Everything else goes to the system allocator untouched. Nothing here is ever fatal: no plan, a
 * plan for another program, no device, a policy that fails, a full pool: the program runs with
 * ordinary memory, and HETOPT_STATS=1 says what happened.
 *
 * With `pool-mode direct` in the plan there is no pool: the policy makes every candidate block on
 * the calling thread (policies/direct.h), the source's naive variant, for comparison; the context
 * is still prepared in the background (its own when a candidate allocation comes first). Either
 * way a Conformance check (conformance.h) stops redirecting new allocations once the program no
 * longer behaves like its profile.
 *
 * Memory malloc never made (static arrays, anonymous mappings) that the plan names is registered
 * in place by an InplaceRegistry on the same thread and context; a plan may hold only those.
 */
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "contracts/plan.h"
#include "policies/direct.h"
#include "policies/fork_copies.h"
#include "policies/os_memory.h"
#include "policies/policy.h"
#include "policies/pool.h"
#include "shim/core/block_registration.h"
#include "shim/core/conformance.h"
#include "shim/core/driver_start.h"
#include "shim/core/inplace_registry.h"
#include "shim/core/interceptor.h"
#include "shim/core/site_ledger.h"
#include "shim/core/svm_ranges.h"

namespace hetopt::shim {

class OptimizeInterceptor final : public Interceptor {
 public:
  /// Reads and checks the plan; null (with one warning, or a debug line for a child process the
  /// plan was not made for) when there is nothing to optimize. Starts the pool preparation.
  static OptimizeInterceptor* create();

  /// Only sizes some plan site takes (Plan::find) are worth an unwind: the union of their ranges.
  /// No allocated()/freeing(): serve() sees what it needs. Mappings with in-place registrations.
  Wants wants() const override {
    return Wants{.allocations = false, .mappings = m_registry != nullptr, .serveMin = m_serveMin,
                 .serveMax = m_serveMax};
  }
  void* serve(AllocFn fn, size_t size, size_t alignment, const CallSite& site) override;
  bool owns(const void* ptr) const override {
    return m_pool.owns(ptr) || (m_direct && m_direct->owns(ptr)) || m_blocks.owns(ptr);
  }
  void release(void* ptr) override;
  size_t usableSize(const void* ptr) const override;
  /// Owned blocks are kept, resized or moved out to the system allocator (the pool is full); a
  /// system block growing at a candidate site moves into served memory.
  bool reallocate(void* ptr, size_t size, const CallSite* site, void** result) override;
  void callBegin(CallRecord& call) override;
  void callEnd(CallRecord& call) override;
  // In-place registration of the plan's static ranges and mappings (inplace_registry.h).
  void mapped(void* addr, size_t len, int flags, uintptr_t caller) override;
  bool unmapping(void* addr, size_t len, bool discard) override {
    return m_registry && m_registry->unmapping(addr, len, discard);
  }
  void forkPrepare() override;
  void forkParent() override;
  void forkChild() override;
  void beforeFork() override;
  void beforeExit() override;
  void processExit() override;

 private:
  enum class PoolState : int { Preparing, Ready, Failed };

  OptimizeInterceptor(Plan plan, std::string planPath);
  /// hetopt's driver thread: enumeration, the early context, then the pool. `early`: started at
  /// start-up (it does nothing when a fork() came first), else at the program's first OpenCL call.
  void preparePool(bool early);
  /// The late driver's fork-safe part, on a thread of its own at start-up (driver_start.h).
  void loadDriverLibraries();
  /// The pool thread's wait for a context: the program's (retained), or null when one of our own
  /// must be made (a candidate allocation came first, or HETOPT_POOL_CONTEXT=own).
  cl_context awaitContext();
  /// A context the program has just created: taken for the pool when it holds the plan's device
  /// and the pool thread still waits for one.
  void offerContext(const CallRecord& call);
  /// A candidate allocation while the pool thread still waits for the program's context.
  void requestOwnContext();
  // The early context (plan `context early`): made on the pool thread right after enumeration,
  // given to the program's first clCreateContext[FromType] that asks for exactly it (this device,
  // at most this platform as property); the program's error callback is called through ours.
  void makeEarlyContext(decltype(&clCreateContext) createContext);
  void handOutEarlyContext(CallRecord& call);
  bool propertiesMatch(const cl_context_properties* props, bool nullOk) const;
  static void CL_CALLBACK earlyNotify(const char* info, const void* data, size_t size, void* self);
  /// The policies' OpenCL entry points (the next layer's or the loader's), in `context`.
  static PolicyEnv policyEnv(cl_context context);
  bool contextChosen();
  /// Which context the pinned memory is made in, for the stats line.
  const char* contextOrigin();
  /// The pinning context exists or is being used: the program's was offered, or ours chosen.
  bool contextExists();
  bool waitForPool();
  void failPool(const char* why);
  void markEnumerated();
  /// Whether the pool thread is inside the driver (m_driver, under m_stateMutex; fork and exit
  /// wait it out).
  void setPoolThreadInDriver(bool inDriver);
  /// Before the program's fork() or exit(): waits (at most kDriverWaitMs) while hetopt's threads
  /// are inside the driver or loading it (m_driver.busy()). `what` names the event for the log.
  void waitOutOfDriver(std::unique_lock<std::mutex>& lock, const char* what);
  /// callBegin of a call with host-range arguments: each transfer classified (and, from a block
  /// not pinned yet, registered or waited for) into the call's TransferState, counted by
  /// countTransfers() in callEnd; a CL_MEM_USE_HOST_PTR buffer over memory registered in place
  /// makes ours go first.
  void noteHostRanges(CallRecord& call, const api::ApiInfo& info);
  void countTransfers(CallRecord& call);
  /// The register strategy: system memory, adopted by m_blocks to be pinned where it is.
  void* serveInPlace(AllocFn fn, size_t size, size_t alignment, const PlanSite& site);
  void* resizeInPlace(void* ptr, size_t size);
  /// realloc() of owned memory to `size` (> 0) where it can stay served; null when it cannot
  /// (ptr is then unchanged).
  void* resize(void* ptr, size_t size);
  // The naive variant (plan `pool-mode direct`, `hetopt run --no-pool`) and trace conformance.
  void markReady(double startMs);
  void startDirect(std::unique_ptr<AllocationPolicy> policy, double startMs);
  void* serveDirect(AllocFn fn, size_t size, size_t alignment, unsigned site);
  bool isRedirectedMemory(const void* host) const;
  Conformance::Usage usage() const;
  /// "conformant", or "deactivated: why" and a line of what was not redirected after it.
  std::string conformanceStats() const;
  // At exit (optimize_stats.cpp): the run record next to the plan, HETOPT_STATS' lines and
  // HETOPT_STATS_JSON's file, all from the same counters.
  void startRunClock();
  unsigned siteIndex(const PlanSite& site) const {
    return static_cast<unsigned>(&site - m_plan.sites.data());
  }
  /// The heading (which pool, or none and why).
  std::string poolStats();
  std::string statsText();
  std::string statsJson(const std::string& text);
  void writeRunRecord();
  /// Releases what forkPrepare() took, in reverse order (parent and child alike).
  void unlockAfterFork();
  /// forkPrepare(), its locks held: private copies for the child of pinned memory fork() would
  /// share or leave out (fork_copies.h).
  void prepareChildCopies();
  void noteForkedCopyCallsOpenCL();

  Plan m_plan;
  std::string m_planPath;  ///< the plan file this process uses (its run record goes beside it)
  SiteLedger m_ledger;     ///< the run's transfers, per site, for the run record
  uint64_t m_startNs = 0, m_startUnixNs = 0;  ///< when the shim started here (steady, wall clock)
  int m_pid = 0;  ///< the process the plan was taken in (a forked child writes no run record)
  std::string m_forkMarker;  ///< forkMarkerPath(m_planPath): made by a forked copy's first OpenCL call
  std::atomic<bool> m_markAtFirstCall{false};  ///< in a forked child whose driver was started early
  std::atomic<bool> m_programCalledOpenCL{false};  ///< the program itself has made an OpenCL call
  std::atomic<bool> m_programMadeContext{false};   ///< ... and has created a context
  bool m_forkedBeforeProgramsFirstCall = false;    ///< a forked child: its parent had made none
  uint64_t m_serveMin = 1, m_serveMax = 0;  ///< sizes some site takes (empty range: none)
  BlockRegistration m_blocks;  ///< heap blocks pinned in place (register strategy, pool fallback)
  InplaceRegistry* m_registry = nullptr;  ///< null without registrations; never freed (hooks)
  policies::PinnedPool m_pool;
  Allocation m_region;  ///< the pinned memory behind the pool; kept until the process ends
  /// How fork() treats m_region (found once it is made, before the pool is ready).
  os::ForkInheritance m_regionInheritance = os::ForkInheritance::Copied;
  policies::ForkCopies m_forkCopies;  ///< made in forkPrepare, placed or dropped after fork()
  bool m_regionCopied = false;        ///< forkPrepare made the child a copy of m_region
  /// A forked child whose pool pages are still the parent's (no copy could be made): the pool's
  /// headers there are never written, its blocks never reused.
  bool m_poolShared = false;
  std::atomic<int> m_state{static_cast<int>(PoolState::Preparing)};
  /// Set once the pool thread has enumerated platforms and devices. The application's OpenCL calls
  /// wait for it: first use of the ICD loader and of some drivers (PoCL seen crashing) is not safe
  /// from two threads at once. The program would pay that enumeration itself anyway.
  std::atomic<bool> m_enumerated{false};
  std::mutex m_stateMutex;
  std::condition_variable m_stateChanged;
  double m_readyAfterMs = 0;
  char m_failure[256] = {};
  // Which context the pool is made in (under m_stateMutex): see the file comment.
  bool m_ownContextOnly = false;           ///< HETOPT_POOL_CONTEXT=own
  /// When the driver may be started by hetopt's thread, and whether that thread is inside it now
  /// (starting the driver or making pinned memory, or loading the driver's libraries; under
  /// m_stateMutex).
  DriverStart m_driver;
  bool m_lateStarted = false;  ///< late driver: the pool thread was started (under m_stateMutex)
  /// How long a fork() or exit() waits for m_driver.busy(): a driver's start-up with a context,
  /// ~1 s on a cold NVIDIA GPU, and pinned memory for the pool. Past it the fork goes ahead (the
  /// child is warned when it calls OpenCL), and so does the exit.
  static constexpr int kDriverWaitMs = 5000;
  cl_device_id m_device = nullptr;         ///< the plan's device (set before m_enumerated)
  cl_platform_id m_platform = nullptr;     ///< its platform (likewise)
  enum class EarlyState { Making, Made, Failed };
  EarlyState m_earlyState = EarlyState::Making;  ///< (plan `context early` only)
  cl_context m_earlyContext = nullptr;
  bool m_earlyHandedOut = false;
  std::atomic<void(CL_CALLBACK*)(const char*, const void*, size_t, void*)> m_programNotify{nullptr};
  std::atomic<void*> m_programNotifyData{nullptr};
  uint64_t m_maxAllocBytes = 0;            ///< its CL_DEVICE_MAX_MEM_ALLOC_SIZE (likewise)
  cl_context m_programContext = nullptr;   ///< the program's context, once offered and retained
  bool m_ownContextWanted = false;         ///< a candidate allocation came before any context
  bool m_contextChosen = false;            ///< the pool thread has decided; later offers are ignored

  std::atomic<uint64_t> m_served{0}, m_servedBytes{0}, m_released{0};
  std::atomic<uint64_t> m_inPlace{0}, m_inPlaceBytes{0};  ///< of those, adopted by m_blocks
  std::atomic<uint64_t> m_noPool{0}, m_poolFull{0}, m_movedOut{0};
  std::atomic<uint64_t> m_pinnedH2d{0}, m_pinnedH2dBytes{0}, m_pinnedD2h{0}, m_pinnedD2hBytes{0};
  std::atomic<uint64_t> m_otherH2d{0}, m_otherH2dBytes{0}, m_otherD2h{0}, m_otherD2hBytes{0};
  SvmRanges m_svm;  ///< the program's live SVM/USM allocations: copies from them are no transfers

  /// pool-mode direct only: every candidate block made by m_directPolicy on the calling thread.
  std::unique_ptr<policies::DirectAllocator> m_direct;
  std::unique_ptr<AllocationPolicy> m_directPolicy;  ///< set once the context is ready
  Conformance m_conformance;
  std::atomic<uint64_t> m_liveBytes{0};  ///< usable bytes of redirected blocks not yet freed
  std::atomic<uint64_t> m_directFailed{0}, m_afterDivergence{0};
};

}  // namespace hetopt::shim
