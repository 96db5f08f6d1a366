// SPDX-License-Identifier: MIT
/**
 * @file HETOPT_MODE=optimize: pins the memory of the plan's candidate allocation sites, each site
 * the way the plan says (contracts/plan.h): served from a pre-pinned pool, or registered in place.
 * Nothing waits on the program's critical path for pinning longer than pageable memory would have
 * cost, and nothing here is ever fatal (no plan, no device, a failing policy, a full pool): the
 * program runs with ordinary memory, and HETOPT_STATS=1 says what happened. This class is glue
 * over its parts, each with its own header and test (docs/ARCHITECTURE.md, "The map").
 */
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "contracts/plan.h"
#include "policies/direct.h"
#include "policies/fork_copies.h"
#include "policies/os_memory.h"
#include "policies/policy.h"
#include "policies/pool.h"
#include "shim/core/block_registration.h"
#include "shim/core/conformance.h"
#include "shim/core/context_choice.h"
#include "shim/core/inplace_registry.h"
#include "shim/core/interceptor.h"
#include "shim/core/optimize_stats.h"
#include "shim/core/preparation.h"
#include "shim/core/programs_ahead.h"
#include "shim/core/site_ledger.h"
#include "shim/core/svm_ranges.h"

namespace hetopt::shim {

/// Optimize mode's interceptor. Its parts: Preparation (how far the driver thread got, and the
/// program's waits on it), ContextChoice (which context pinning happens in), BlockRegistration and
/// InplaceRegistry (pinning in place), policies::PinnedPool and policies::DirectAllocator (served
/// memory), Conformance, SiteLedger and OptimizeCounters (what the run did, written at exit by
/// optimize_stats.h). Here: the plan, serving and freeing, and the transfers of each call; the
/// driver thread's steps in order (optimize_prepare.cpp); the fork protocol's part
/// (optimize_fork.cpp). Allocations at no plan site go to the system allocator untouched.
class OptimizeInterceptor final : public Interceptor {
 public:
  /// Reads and checks the plan (HETOPT_PLAN_FILE); null (with one warning, or a debug line for a
  /// process the plan was not made for) when there is nothing to optimize.
  static OptimizeInterceptor* create();
  /// The same with the plan given (`planPath`: where its run record goes; empty: none). Starts the
  /// driver thread, or in a process that may fork the loading of the driver's libraries.
  static OptimizeInterceptor* createFor(Plan plan, std::string planPath);

  /// Only sizes some plan site takes (Plan::find) are worth an unwind: the union of their ranges.
  /// No allocated()/freeing(): serve() sees what it needs. Mappings with in-place registrations.
  Wants wants() const override {
    return Wants{.allocations = false,
                 .mappings = m_registry != nullptr,
                 .serveMin = m_serveMin,
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
  void beforeFork() override { m_prep.beforeFork(); }
  void beforeExit() override {
    m_prep.beforeExit();
    m_ahead.beforeExit();
  }
  void processExit() override;

  /// Tests: how far the driver thread got.
  const Preparation& preparation() const { return m_prep; }
  /// Tests: the programs built ahead.
  ProgramsAhead& programsAhead() { return m_ahead; }

 private:
  /// What the driver thread's steps share (optimize_interceptor.cpp).
  struct DriverRun;

  OptimizeInterceptor(Plan plan, std::string planPath);

  // ---- hetopt's driver thread (optimize_prepare.cpp) --------------------------------------------
  /// Enumeration, the early context, then the pinned memory: the steps in order. `early`: started
  /// at start-up (it does nothing when a fork() came first), else at the program's first OpenCL
  /// call (a process that may fork, driver_start.h: only the driver's libraries are loaded at
  /// start-up). What needs no context comes first (a hybrid pool's pages, mlock'ed); then it
  /// waits for the program's first context on the plan's device (offered from `callEnd` of
  /// `clCreateContext[FromType]`, retained) and pins in it: in-place registrations first
  /// (BlockRegistration's worker, InplaceRegistry), then the pool. With HETOPT_POOL_CONTEXT=own
  /// the pool is made in a context of the shim's own at start-up and a pool site's allocation
  /// waits up to HETOPT_POOL_WAIT_MS for it (kept to measure against:
  /// scripts/bench/pool_context.sh).
  void prepare(bool early);
  bool findOpenCL(DriverRun& run);
  bool enumerate(DriverRun& run);
  void makeEarlyContext(DriverRun& run);
  bool prepareHostPages(DriverRun& run);
  bool takeContext(DriverRun& run);
  bool makeQueue(DriverRun& run);
  void startDirect(DriverRun& run);
  void makePool(DriverRun& run);
  /// A step failed: said once, and nothing waits for the early context or the pool any more.
  void failPool(const char* why);
  /// The late driver's fork-safe part, on a thread of its own at start-up (driver_start.h).
  void loadDriverLibraries();

  // ---- serving ----------------------------------------------------------------------------------
  /// The register strategy: system memory, adopted by m_blocks to be pinned where it is. A pool
  /// site's block that comes before its pool is ready or finds it full goes here too, when
  /// registering it costs less than one of its transfers saves: real programs allocate their
  /// buffers before they create a context, and a context of our own for the pool would cost them
  /// 100-270 ms on NVIDIA.
  void* serveInPlace(AllocFn fn, size_t size, size_t alignment, const PlanSite& site);
  /// The naive variant (plan `pool-mode direct`, `hetopt run --no-pool`), for comparison: no
  /// pool, the policy makes every candidate block on the calling thread (policies/direct.h); the
  /// context is still prepared in the background (its own when a candidate allocation comes first).
  void* serveDirect(AllocFn fn, size_t size, size_t alignment, unsigned site);
  /// realloc() of owned memory to `size` (> 0) where it can stay served; null when it cannot
  /// (ptr is then unchanged).
  void* resize(void* ptr, size_t size);
  void* resizeInPlace(void* ptr, size_t size);
  bool isRedirectedMemory(const void* host) const;
  Conformance::Usage usage() const { return m_counters.usage(m_blocks.pinnedTransfers()); }
  unsigned siteIndex(const PlanSite& site) const {
    return static_cast<unsigned>(&site - m_plan.sites.data());
  }

  // ---- transfers --------------------------------------------------------------------------------
  /// callBegin of a call with host-range arguments: each transfer classified (and, from a block
  /// not pinned yet, registered or waited for) into the call's TransferState, counted by
  /// countTransfers() in callEnd; a CL_MEM_USE_HOST_PTR buffer over memory registered in place
  /// makes ours go first.
  void noteHostRanges(CallRecord& call, const api::ApiInfo& info);
  void countTransfers(CallRecord& call);

  // ---- exit and fork ----------------------------------------------------------------------------
  StatsFacts statsFacts();
  /// Releases what forkPrepare() took, in reverse order (parent and child alike).
  void unlockAfterFork();
  /// forkPrepare(), its locks held: private copies for the child of pinned memory fork() would
  /// share or leave out (fork_copies.h).
  void prepareChildCopies();
  void noteForkedCopyCallsOpenCL();

  Plan m_plan;
  std::string m_planPath;  ///< the plan file this process uses (its run record goes beside it)
  RunClock m_clock;        ///< when the run started, and in which process
  SiteLedger m_ledger;     ///< the run's transfers, per site, for the run record
  OptimizeCounters m_counters;
  Preparation m_prep;
  ContextChoice m_context;
  ProgramsAhead m_ahead;  ///< the program's kernels built ahead on the early context
  std::string
      m_forkMarker;  ///< forkMarkerPath(m_planPath): made by a forked copy's first OpenCL call
  std::atomic<bool> m_markAtFirstCall{false};  ///< in a forked child whose driver was started early
  bool m_forkedBeforeProgramsFirstCall = false;  ///< a forked child: its parent had made none
  uint64_t m_serveMin = 1, m_serveMax = 0;       ///< sizes some site takes (empty range: none)
  uint64_t m_maxAllocBytes =
      0;  ///< the device's CL_DEVICE_MAX_MEM_ALLOC_SIZE (set before enumerated)
  BlockRegistration m_blocks;  ///< heap blocks pinned in place (register strategy, pool fallback)
  /// Memory malloc never made (static arrays, anonymous mappings) that the plan names, registered
  /// in place on the driver thread and in its context; a plan may hold only those.
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
  SvmRanges m_svm;  ///< the program's live SVM/USM allocations: copies from them are no transfers
  /// pool-mode direct only: every candidate block made by m_directPolicy on the calling thread.
  std::unique_ptr<policies::DirectAllocator> m_direct;
  std::unique_ptr<AllocationPolicy> m_directPolicy;  ///< set once the context is ready
  /// Stops redirecting new allocations once the program no longer behaves like its profile.
  Conformance m_conformance;
};

}  // namespace hetopt::shim
