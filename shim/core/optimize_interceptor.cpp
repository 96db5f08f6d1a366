// SPDX-License-Identifier: MIT
/** @file Optimize mode; see optimize_interceptor.h.
 * Sections: the plan, serving, exit, calls (the driver thread and fork in their own files). */
#include "shim/core/optimize_interceptor.h"

#include <CL/cl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "common/cl_select.h"
#include "common/clock.h"
#include "common/elf_imports.h"
#include "common/log.h"
#include "common/options.h"
#include "common/sigxfsz_block.h"
#include "contracts/run_record.h"
#include "contracts/site_key.h"
#include "shim/core/callsite.h"
#include "shim/core/host_ranges.h"
#include "shim/core/modes.h"
#include "shim/core/self_identity.h"
#include "shim/core/state.h"
#include "shim/core/stats_text.h"
#include "trace/call_model.h"

namespace hetopt::shim {
namespace {

/// What callBegin found about a call's host<->device transfers (CallRecord::callState), counted
/// by callEnd once the call's outcome is known.
struct TransferState {
  struct Moved {
    uint64_t bytes;
    uint32_t site;  ///< SiteLedger's (kNoSite: memory of no plan site)
    SiteLedger::Outcome outcome;
    bool h2d;
    bool fromPool;  ///< pool or direct memory (its own `--stats` line)
  };
  Moved moved[api::kMaxHostRanges];
  uint8_t count;
};

// HETOPT_PLAN_FILE names one plan, or several separated by ':' (a launcher's descendants: one
// plan each). Each names the program it was made for; the launcher, other children and wrapper
// scripts inherit the environment, and only the planned program may use a plan. False (having
// said why) when none is for this process.
bool findPlan(const char* files, Plan* out, std::string* usedPath) {
  SelfIdentity self;
  std::string list = files, mismatch;
  for (size_t start = 0; start <= list.size();) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    const std::string path = list.substr(start, end - start);
    start = end + 1;
    if (path.empty()) continue;
    Plan plan;
    std::string error;
    if (!readPlanFile(path, &plan, &error)) {
      warn("cannot use the optimization plan (%s); running unoptimized", error.c_str());
      return false;
    }
    if (self.matches(plan, &error)) {
      *out = std::move(plan);
      *usedPath = path;
      return true;
    }
    mismatch += (mismatch.empty() ? "" : "; ") + error;
  }
  debug("not optimizing this process: %s", mismatch.c_str());
  return false;
}

}  // namespace

// ---- the plan -------------------------------------------------------------------------------

OptimizeInterceptor::OptimizeInterceptor(Plan plan, std::string planPath)
    : m_plan(std::move(plan)),
      m_planPath(std::move(planPath)),
      m_clock(RunClock::start()),
      m_ledger(m_plan.sites.size()),
      m_blocks(m_plan) {
  if (!m_planPath.empty()) m_forkMarker = forkMarkerPath(m_planPath);
  if (m_plan.sites.empty()) return;
  m_serveMin = UINT64_MAX;
  for (const PlanSite& s : m_plan.sites) {
    m_serveMin = std::min(m_serveMin, s.minBytes);
    m_serveMax = std::max(m_serveMax, s.maxBytes);
  }
}

OptimizeInterceptor* OptimizeInterceptor::create() {
  const char* path = optionString(Option::PLAN_FILE);
  if (!*path) {
    warn("optimize mode without HETOPT_PLAN_FILE; running unoptimized");
    return nullptr;
  }
  Plan plan;
  std::string planPath;
  if (!findPlan(path, &plan, &planPath)) return nullptr;
  return createFor(std::move(plan), std::move(planPath));
}

OptimizeInterceptor* OptimizeInterceptor::createFor(Plan plan, std::string planPath) {
  const std::string contextOption = optionString(Option::POOL_CONTEXT);
  const bool ownOnly = contextOption == "own";
  // A start-up-only plan pins nothing: without the early context it has nothing to do.
  if (plan.startupOnly() && (!plan.earlyContext || plan.directAllocation || ownOnly)) {
    debug("the plan pins nothing and makes no context early; running unoptimized");
    return nullptr;
  }
  PolicyKind kind;
  if ((plan.hasPoolSites() || (plan.directAllocation && !plan.sites.empty())) &&
      (!policyFromName(plan.poolPolicy.c_str(), &kind) || kind == PolicyKind::Register)) {
    warn("plan names pool policy '%s', which cannot back a pool; running unoptimized",
         plan.poolPolicy.c_str());
    return nullptr;
  }
  bool waitOk = true;
  optionUnsigned(Option::POOL_WAIT_MS, 0, 600000, &waitOk);
  if (!waitOk)
    warn("ignoring invalid HETOPT_POOL_WAIT_MS (0-600000); using %s",
         optionInfo(Option::POOL_WAIT_MS).defaultValue);
  auto* self = new OptimizeInterceptor(std::move(plan), std::move(planPath));
  const Plan& p = self->m_plan;
  if (contextOption != "program" && contextOption != "own")
    warn("ignoring invalid HETOPT_POOL_CONTEXT '%s' (program or own); using program",
         contextOption.c_str());
  // The early context only where the driver thread will make it.
  self->m_context.configure(ownOnly, p.earlyContext && !p.directAllocation && !ownOnly);
  if (p.earlyContext && !p.directAllocation && !ownOnly && !p.buildAheadRecipe.empty())
    self->m_ahead.configure(p.buildAheadRecipe);
  self->m_conformance.expect(p);
  if (p.directAllocation) {
    // Room for what the conformance check lets live (4x the profiled peak) with a margin.
    uint64_t peak = 0;
    bool profiled = true;
    for (const PlanSite& s : p.sites) {
      peak += s.profile.peakLiveBlocks;
      profiled = profiled && s.profiled;
    }
    unsigned maxLive =
        profiled ? static_cast<unsigned>(std::clamp<uint64_t>(8 * peak, 256, 1 << 16)) : 4096;
    self->m_direct = std::make_unique<policies::DirectAllocator>(maxLive);
  }
  if (p.hasRegistrations()) self->m_registry = new InplaceRegistry(p);
  // Prepared off the critical path; the thread ends when the pool is ready (or failed). In a
  // process that may fork it starts at the program's first OpenCL call (callBegin), and only the
  // driver's libraries are loaded now (driver_start.h).
  const double checkStart = monotonicMs();
  self->m_prep.decide(p.driverLate,
                      p.driverLate ? std::string() : loadedModuleImporting(kForkFunctions));
  debug("driver start: %s (decided in %.0f us)", self->m_prep.describeDriver().c_str(),
        (monotonicMs() - checkStart) * 1e3);
  if (!self->m_prep.late())
    std::thread([self] { self->prepare(true); }).detach();
  else if (optionFlag(Option::DRIVER_PRELOAD))
    std::thread([self] { self->loadDriverLibraries(); }).detach();
  return self;
}

// ---- serving ------------------------------------------------------------------------------------

void* OptimizeInterceptor::serve(AllocFn fn, size_t size, size_t alignment, const CallSite& site) {
  const PlanSite* planned = m_plan.find(siteKey(site), size);
  if (!planned) return nullptr;
  if (!m_conformance.admit(*planned, size, usage())) {
    OptimizeCounters::bump(m_counters.afterDivergence);
    return nullptr;
  }
  const Preparation::Pool state = m_prep.pool();
  if (m_direct) {
    // The naive variant as it was measured: a context of its own when the program has none yet.
    if (HETOPT_UNLIKELY(state == Preparation::Pool::Preparing)) m_context.requestOwn();
    if (!m_prep.waitReady()) {
      OptimizeCounters::bump(m_counters.noPool);
      return nullptr;
    }
    return serveDirect(fn, size, alignment, siteIndex(*planned));
  }
  if (state == Preparation::Pool::Failed) {
    OptimizeCounters::bump(m_counters.noPool);
    return nullptr;
  }
  if (planned->strategy == SiteStrategy::Register)
    return serveInPlace(fn, size, alignment, *planned);
  // A pool site: waits for a pool in preparation only as long as HETOPT_POOL_WAIT_MS says (by
  // default not at all), and never for a context the program has not made yet.
  const bool ready = state == Preparation::Pool::Ready ||
                     ((m_context.ownOnly() || m_context.exists()) && m_prep.waitReady());
  if (ready) {
    void* p =
        fn == AllocFn::Calloc ? m_pool.allocateZeroed(1, size) : m_pool.allocate(size, alignment);
    if (p) {
      m_counters.servedBlock(size, m_pool.usableSize(p));
      m_ledger.served(p, m_pool.usableSize(p), siteIndex(*planned));
      return p;
    }
    OptimizeCounters::bump(m_counters.poolFull);
  } else {
    OptimizeCounters::bump(m_counters.noPool);
  }
  // No pool memory now: registered where it is when that costs less than one transfer saves.
  const uint64_t registerNs = m_plan.registerNs(size);
  const double savingNs = static_cast<double>(planned->waitNsPerMiB) * size / (1 << 20);
  if (registerNs == 0 || static_cast<double>(registerNs) > savingNs) return nullptr;
  return serveInPlace(fn, size, alignment, *planned);
}

void* OptimizeInterceptor::serveInPlace(AllocFn fn, size_t size, size_t alignment,
                                        const PlanSite& site) {
  const SystemAllocator& sys = g_below->allocator;
  void* p = nullptr;
  if (fn == AllocFn::Calloc)
    p = sys.calloc(1, size);
  else if (alignment > 16 && sys.posixMemalign(&p, alignment, size) != 0)
    p = nullptr;
  else if (alignment <= 16)
    p = sys.malloc(size);
  if (!p) return nullptr;
  // A full table leaves it an ordinary block; it is the program's either way.
  if (!m_blocks.adopt(p, size, sys.usableSize(p), site.waitNsPerMiB, siteIndex(site))) return p;
  m_counters.servedBlock(size, m_blocks.usableSize(p));
  OptimizeCounters::bump(m_counters.inPlace);
  OptimizeCounters::bump(m_counters.inPlaceBytes, size);
  return p;
}

size_t OptimizeInterceptor::usableSize(const void* ptr) const {
  if (m_pool.owns(ptr)) return m_pool.usableSize(ptr);
  if (m_direct && m_direct->owns(ptr)) return m_direct->usableSize(ptr);
  if (size_t n = m_blocks.usableSize(ptr)) return n;
  return g_below->allocator.usableSize(const_cast<void*>(ptr));
}

void OptimizeInterceptor::release(void* ptr) {
  OptimizeCounters::bump(m_counters.released);
  m_counters.liveBytes.fetch_sub(usableSize(ptr), std::memory_order_relaxed);
  if (m_pool.owns(ptr)) {
    m_ledger.released(ptr);
    if (!m_poolShared) m_pool.deallocate(ptr);
  } else if (m_direct && m_direct->owns(ptr)) {
    m_ledger.released(ptr);
    m_direct->deallocate(ptr);
  } else {
    m_blocks.release(ptr, g_below->allocator.free);  // unregistered before the allocator gets it
  }
}

bool OptimizeInterceptor::reallocate(void* ptr, size_t size, const CallSite* site, void** result) {
  const SystemAllocator& sys = g_below->allocator;
  if (!site) {  // a block served here
    *result = nullptr;
    if (size == 0) {
      release(ptr);
      return true;
    }
    if (void* kept = resize(ptr, size)) {
      *result = kept;
      return true;
    }
    void* moved = sys.malloc(size);  // the pool is full: the block moves to the system
    if (!moved) return true;         // C semantics: ptr stays valid
    memcpy(moved, ptr, std::min(size, usableSize(ptr)));
    release(ptr);
    *result = moved;
    return true;
  }
  // A candidate site growing a system block (or realloc(NULL)): moved into served memory.
  void* served = serve(AllocFn::Realloc, size, 0, *site);
  if (!served) return false;
  if (ptr) {
    memcpy(served, ptr, std::min(size, sys.usableSize(ptr)));
    sys.free(ptr);
  }
  *result = served;
  return true;
}

void* OptimizeInterceptor::resize(void* ptr, size_t size) {
  if (m_blocks.owns(ptr)) return resizeInPlace(ptr, size);
  size_t old = usableSize(ptr);
  void* p = nullptr;
  if (m_poolShared && m_pool.owns(ptr))
    p = nullptr;                      // the parent's pages: moved out, never resized there
  else if (m_conformance.diverged())  // in place only: moving would be a new redirection
    p = m_pool.owns(ptr) ? (m_pool.resizeInPlace(ptr, size) ? ptr : nullptr)
                         : (size <= old ? ptr : nullptr);
  else
    p = m_pool.owns(ptr) ? m_pool.reallocate(ptr, size) : m_direct->reallocate(ptr, size);
  if (!p) {
    OptimizeCounters::bump(m_counters.movedOut);
    return nullptr;
  }
  const unsigned site = m_ledger.siteOf(ptr);
  m_ledger.released(ptr);
  m_ledger.served(p, usableSize(p), site);
  m_counters.liveBytes.fetch_add(usableSize(p) - old, std::memory_order_relaxed);  // modulo 2^64
  return p;
}

void* OptimizeInterceptor::resizeInPlace(void* ptr, size_t size) {
  const SystemAllocator& sys = g_below->allocator;
  unsigned site = BlockRegistration::kNoSite;
  const uint64_t wait = m_blocks.waitOf(ptr, &site);
  const size_t old = m_blocks.usableSize(ptr);
  // Unpinned first: the system's realloc may move or unmap the pages.
  m_blocks.forget(ptr);
  void* p = sys.realloc(ptr, size);
  void* block = p ? p : ptr;  // a failed realloc leaves the block as it was
  const size_t usable = sys.usableSize(block);
  m_counters.liveBytes.fetch_add(usable - old, std::memory_order_relaxed);  // modulo 2^64
  // Kept in place unless the program diverged from its profile (then it is ordinary memory; its
  // free still finds no owner and goes to the system).
  if (!m_conformance.diverged() && !m_blocks.adopt(block, p ? size : old, usable, wait, site)) {
    m_counters.liveBytes.fetch_sub(usable, std::memory_order_relaxed);
    OptimizeCounters::bump(m_counters.released);
  }
  if (!p) OptimizeCounters::bump(m_counters.movedOut);
  return p;
}

void* OptimizeInterceptor::serveDirect(AllocFn fn, size_t size, size_t alignment, unsigned site) {
  void* p = m_direct->allocate(size, alignment, fn == AllocFn::Calloc);
  if (!p) {
    OptimizeCounters::bump(m_counters.directFailed);
    return nullptr;
  }
  m_counters.servedBlock(size, m_direct->usableSize(p));
  m_ledger.served(p, m_direct->usableSize(p), site);
  return p;
}

bool OptimizeInterceptor::isRedirectedMemory(const void* host) const {
  return m_pool.owns(host) || (m_direct && m_direct->contains(host));
}

// ---- exit --------------------------------------------------------------------------------------

StatsFacts OptimizeInterceptor::statsFacts() {
  PoolFacts pool;
  pool.poolSites = m_plan.hasPoolSites();
  pool.anySites = !m_plan.sites.empty();
  pool.direct = m_direct != nullptr;
  pool.state = m_prep.pool();
  pool.failure = m_prep.failure();
  pool.readyAfterMs = m_prep.readyAfterMs();
  pool.contextExists = m_context.exists();
  pool.contextOrigin = m_context.origin();
  pool.policy = m_plan.poolPolicy;
  pool.poolBytes = m_plan.poolBytes;
  pool.startupOnly = m_plan.startupOnly();
  StatsFacts f;
  f.plan = &m_plan;
  f.planPath = m_planPath;
  f.heading = poolHeading(pool);
  f.pool = std::move(pool);
  f.direct = m_direct != nullptr;
  if (m_direct) f.directFirstFailure = m_direct->stats().firstFailure;
  f.conformance = &m_conformance;
  f.blocks = m_counters.inPlace.load(std::memory_order_relaxed) ? &m_blocks : nullptr;
  f.registry = m_registry;
  f.ledger = &m_ledger;
  f.startup.context = m_prep.late() ? "late" : m_context.earlyHandedOut() ? "early" : "program";
  f.startup.contextWaitMs = m_context.handOutWaitMs();
  f.startup.buildAhead = m_ahead.wanted();
  f.startup.programs = m_ahead.counts();
  f.wallNs = m_clock.wallNs();
  f.pid = getpid();
  return f;
}

void OptimizeInterceptor::processExit() {
  SigxfszBlock block;  // past a file size limit a record or the JSON is lost, not the program
  writeRunRecord(m_plan, m_planPath, m_ledger, m_clock);
  writeStats([this] { return statsFacts(); }, m_counters, m_clock);
}

// ---- calls --------------------------------------------------------------------------------------

void OptimizeInterceptor::callBegin(CallRecord& call) {
  if (HETOPT_UNLIKELY(m_markAtFirstCall.load(std::memory_order_relaxed)))
    noteForkedCopyCallsOpenCL();
  m_prep.noteProgramCall();
  // With a late driver the program's first call starts hetopt's driver thread.
  m_prep.awaitEnumeration([this] { std::thread([this] { prepare(false); }).detach(); });
  if (HETOPT_UNLIKELY(m_plan.earlyContext)) {
    if (call.id == api::ApiId::clCreateContext || call.id == api::ApiId::clCreateContextFromType)
      m_context.handOut(call);
    else
      m_ahead.callBegin(call);
    if (call.skip) return;
  }
  const api::ApiInfo& info = api::apiInfo(call.id);
  if (info.hostRanges) return noteHostRanges(call, info);
  if (HETOPT_UNLIKELY(info.kind == api::ApiKind::SvmFree))
    m_svm.remove(trace::svmFreed(info, {call.id, call.args, call.result}));
}

void OptimizeInterceptor::noteHostRanges(CallRecord& call, const api::ApiInfo& info) {
  TransferState& st = call.callState<TransferState>();
  for (unsigned i = 0; i < info.numArgs && i < call.numArgs; ++i) {
    HostRange r;
    if (!api::isHostRangeRole(info.args[i].role) || !hostRange(call, info, i, &r)) continue;
    const void* host = reinterpret_cast<const void*>(static_cast<uintptr_t>(r.ptr));
    if (r.access == trace::HostAccess::Wrap) {
      // The program's own CL_MEM_USE_HOST_PTR buffer: ours over that memory goes first.
      m_blocks.yieldTo(host, r.bytes);
      if (m_registry) m_registry->yieldTo(host, r.bytes);
      continue;
    }
    // SVM/USM memory is device memory: a copy to or from it is none (the trace's rule).
    if (!trace::isTransfer(r.access) || m_svm.contains(r.ptr) || st.count == api::kMaxHostRanges)
      continue;
    TransferState::Moved& m = st.moved[st.count++];
    m.bytes = r.bytes;
    m.h2d = r.access == trace::HostAccess::Read;
    m.site = SiteLedger::kNoSite;
    m.outcome = SiteLedger::Outcome::Other;
    unsigned site = SiteLedger::kNoSite;
    if (isRedirectedMemory(host)) {
      m.fromPool = true;
      m.site = m_ledger.siteOf(host);
      m.outcome = SiteLedger::Outcome::Pinned;
    } else if (m_blocks.transfer(host, r.bytes, m.h2d, &site)) {
      m.site = site;  // registered in place (counted by m_blocks)
      m.outcome = SiteLedger::Outcome::Pinned;
    } else if (m_registry && m_registry->transfer(host, r.bytes, m.h2d)) {
      m.outcome = SiteLedger::Outcome::Pinned;  // registered in place (counted by the registry)
    } else if (site != SiteLedger::kNoSite) {
      m.site = site;  // a block adopted for pinning that went ahead pageable
      m.outcome = SiteLedger::Outcome::Pageable;
    }
  }
}

void OptimizeInterceptor::countTransfers(CallRecord& call) {
  const TransferState& st = call.callState<TransferState>();
  // As the trace records it: a call that failed moved no bytes, and is counted all the same.
  const bool ok = trace::CallModel::outcome({call.id, call.args, call.result}).ok;
  for (unsigned k = 0; k < st.count; ++k) {
    const TransferState::Moved& m = st.moved[k];
    const uint64_t bytes = ok ? m.bytes : 0;
    if (m.fromPool)
      m_counters.pinned.add(m.h2d, bytes);
    else if (m.outcome != SiteLedger::Outcome::Pinned)
      m_counters.other.add(m.h2d, bytes);
    m_ledger.count(m.site, bytes, m.outcome, m.h2d);
  }
}

void OptimizeInterceptor::callEnd(CallRecord& call) {
  if (call.callState<TransferState>().count) countTransfers(call);
  const api::ApiInfo& info = api::apiInfo(call.id);
  if (HETOPT_UNLIKELY(info.returnRole == api::ReturnRole::SvmNew)) {
    uint64_t bytes = 0;
    if (const uint64_t start = trace::svmAllocated(info, {call.id, call.args, call.result}, &bytes))
      m_svm.add(start, bytes);
    return;
  }
  // PoCL (3.1) returns a dummy context from a failed clCreateContext[FromType] (e.g. no GPU), and
  // releasing that dummy aborts in pocl_llvm_release_context while another context lives: here
  // the pool's. clinfo does exactly this. The spec says NULL on failure, so the program gets NULL
  // and the dummy is left alone (never released: releasing it is what aborts).
  if (call.id != api::ApiId::clCreateContext && call.id != api::ApiId::clCreateContextFromType)
    return;
  auto* err = reinterpret_cast<const cl_int*>(static_cast<uintptr_t>(call.args[call.numArgs - 1]));
  if (call.result && err && *err != CL_SUCCESS) {
    debug("%s failed (%d) but returned a context; the program gets NULL",
          api::apiInfo(call.id).name, *err);
    call.result = 0;
  }
  if (!call.result) return;
  m_prep.noteProgramContext();
  if (m_plan.startupOnly()) return;  // nothing to pin: the program's context is not taken
  // Registration starts at once, from here: the program's first transfers often come before the
  // driver thread has woken up.
  if (cl_context taken = m_context.offer(call))
    if (!m_direct) m_blocks.start(policyEnvIn(taken), m_maxAllocBytes);
}

void OptimizeInterceptor::mapped(void* addr, size_t len, int flags, uintptr_t caller) {
  if (!m_registry || !m_registry->wants(len, flags)) return;
  // The driver's own mappings (its staging memory) are not the program's: never registered.
  const Module* m = ModuleMap::instance().find(caller);
  if (m && m->driver) return;
  m_registry->mapped(addr, len, flags);
}

Interceptor* makeOptimizeInterceptor() { return OptimizeInterceptor::create(); }

}  // namespace hetopt::shim
