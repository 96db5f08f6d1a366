// SPDX-License-Identifier: MIT
/** @file Optimize mode; see optimize_interceptor.h. */
#include "shim/core/optimize_interceptor.h"

#include <CL/cl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/cl_select.h"
#include "common/elf_imports.h"
#include "common/log.h"
#include "common/options.h"
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
    uint32_t site;               ///< SiteLedger's (kNoSite: memory of no plan site)
    SiteLedger::Outcome outcome;
    bool h2d;
    bool fromPool;  ///< pool or direct memory (its own `--stats` line)
  };
  Moved moved[api::kMaxHostRanges];
  uint8_t count;
};

double nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

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

OptimizeInterceptor::OptimizeInterceptor(Plan plan, std::string planPath)
    : m_plan(std::move(plan)), m_planPath(std::move(planPath)), m_ledger(m_plan.sites.size()),
      m_blocks(m_plan) {
  startRunClock();
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
  if (plan.sites.empty() && !plan.hasRegistrations()) {
    debug("the plan has no candidate sites; running unoptimized");
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
  const std::string contextOption = optionString(Option::POOL_CONTEXT);
  if (contextOption != "program" && contextOption != "own")
    warn("ignoring invalid HETOPT_POOL_CONTEXT '%s' (program or own); using program",
         contextOption.c_str());
  self->m_ownContextOnly = contextOption == "own";
  // Nothing to wait for unless the pool thread will make the early context.
  if (!self->m_plan.earlyContext || self->m_plan.directAllocation || self->m_ownContextOnly)
    self->m_earlyState = EarlyState::Failed;
  self->m_conformance.expect(self->m_plan);
  if (self->m_plan.directAllocation) {
    // Room for what the conformance check lets live (4x the profiled peak) with a margin.
    uint64_t peak = 0;
    bool profiled = true;
    for (const PlanSite& s : self->m_plan.sites) {
      peak += s.profile.peakLiveBlocks;
      profiled = profiled && s.profiled;
    }
    unsigned maxLive = profiled ? static_cast<unsigned>(std::clamp<uint64_t>(8 * peak, 256, 1 << 16))
                                : 4096;
    self->m_direct = std::make_unique<policies::DirectAllocator>(maxLive);
  }
  if (self->m_plan.hasRegistrations()) self->m_registry = new InplaceRegistry(self->m_plan);
  // Prepared off the critical path; the thread ends when the pool is ready (or failed). In a
  // process that may fork it starts at the program's first OpenCL call (callBegin), and only the
  // driver's libraries are loaded now (driver_start.h).
  const double checkStart = nowMs();
  const bool planLate = self->m_plan.driverLate;
  self->m_driver.decide(planLate, planLate ? std::string() : loadedModuleImporting(kForkFunctions));
  debug("driver start: %s (decided in %.0f us)", self->m_driver.describe().c_str(),
        (nowMs() - checkStart) * 1e3);
  if (!self->m_driver.late())
    std::thread([self] { self->preparePool(true); }).detach();
  else if (optionFlag(Option::DRIVER_PRELOAD))
    std::thread([self] { self->loadDriverLibraries(); }).detach();
  return self;
}

void OptimizeInterceptor::markEnumerated() {
  {
    std::lock_guard<std::mutex> lock(m_stateMutex);
    m_enumerated.store(true, std::memory_order_release);
  }
  m_stateChanged.notify_all();
}

void OptimizeInterceptor::failPool(const char* why) {
  snprintf(m_failure, sizeof m_failure, "%s", why);
  // Said before the state is published: a program woken by it may exit at once, and exit ends
  // this thread wherever it is (the warning was lost now and then).
  warn("pinned pool unavailable (%s); candidate allocations use ordinary memory", why);
  {
    std::lock_guard<std::mutex> lock(m_stateMutex);
    m_state.store(static_cast<int>(PoolState::Failed), std::memory_order_release);
    m_enumerated.store(true, std::memory_order_release);
    if (m_earlyState == EarlyState::Making) m_earlyState = EarlyState::Failed;
  }
  m_stateChanged.notify_all();
}

void OptimizeInterceptor::setPoolThreadInDriver(bool inDriver) {
  {
    std::lock_guard<std::mutex> lock(m_stateMutex);
    m_driver.setInDriver(inDriver);
  }
  if (!inDriver) m_stateChanged.notify_all();
}

void OptimizeInterceptor::waitOutOfDriver(std::unique_lock<std::mutex>& lock, const char* what) {
  if (!m_stateChanged.wait_for(lock, std::chrono::milliseconds(kDriverWaitMs),
                               [this] { return !m_driver.busy(); }))
    debug("%s went ahead after %d ms with hetopt's thread still inside the driver", what, kDriverWaitMs);
}

// A program that ends before it made a context (a usage error, --help, a launcher, a platform
// query) while hetopt's thread is loading the driver or making a context: exit's handlers, among
// them the destructors that the driver's libraries registered as they loaded (LLVM's, under PoCL),
// run while that thread is still inside their constructors or their lazy start-up. On PoCL 14
// immediate exits in 100 died of SIGSEGV or SIGABRT that way, and 14 in 100 exits right after
// clGetPlatformIDs under an early-context plan (faults.exit_while_loading). Natively the program
// never starts that much of the driver. Once it made a context, exits during the pool's making
// did not crash (0 of 200).
void OptimizeInterceptor::beforeExit() {
  if (m_programMadeContext.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> lock(m_stateMutex);
  waitOutOfDriver(lock, "exit()");
}

void OptimizeInterceptor::loadDriverLibraries() {
  ScopedInternal internal;  // what the libraries' constructors allocate is not the program's
  {
    std::lock_guard<std::mutex> lock(m_stateMutex);
    // A fork() came first, or the program's own first call is loading them already.
    if (m_programCalledOpenCL.load(std::memory_order_relaxed) || !m_driver.beginLoading()) return;
  }
  const double start = nowMs();
  const unsigned loaded = loadVendorLibraries();
  {
    std::lock_guard<std::mutex> lock(m_stateMutex);
    m_driver.endLoading();
  }
  m_stateChanged.notify_all();
  debug("%u OpenCL implementation(s) loaded early in %.0f ms, none called", loaded,
        nowMs() - start);
}

void OptimizeInterceptor::preparePool(bool early) {
  ScopedInternal internal;  // this thread's OpenCL calls and allocations are the shim's own
  {
    std::lock_guard<std::mutex> lock(m_stateMutex);
    // A fork() before this thread began: the driver is the program's, and its first OpenCL call
    // starts this again as the late driver's thread (callBegin).
    if (early && !m_driver.enterDriver()) return;
    m_driver.setInDriver(true);
  }
  struct InDriver {  // on every way out of here (fork and exit wait for it)
    OptimizeInterceptor* self;
    ~InDriver() { self->setPoolThreadInDriver(false); }
  } inDriver{this};
  double start = nowMs();
  ClQueryFunctions query{realClFunction<decltype(&clGetPlatformIDs)>(api::ApiId::clGetPlatformIDs),
                         realClFunction<decltype(&clGetPlatformInfo)>(api::ApiId::clGetPlatformInfo),
                         realClFunction<decltype(&clGetDeviceIDs)>(api::ApiId::clGetDeviceIDs),
                         realClFunction<decltype(&clGetDeviceInfo)>(api::ApiId::clGetDeviceInfo)};
  auto createContext = realClFunction<decltype(&clCreateContext)>(api::ApiId::clCreateContext);
  auto createQueue = realClFunction<decltype(&clCreateCommandQueueWithProperties)>(
      api::ApiId::clCreateCommandQueueWithProperties);
  auto releaseContext = realClFunction<decltype(&clReleaseContext)>(api::ApiId::clReleaseContext);
  auto releaseQueue =
      realClFunction<decltype(&clReleaseCommandQueue)>(api::ApiId::clReleaseCommandQueue);
  PolicyEnv env = policyEnv(nullptr);
  if (!query.getPlatformIDs || !query.getPlatformInfo || !query.getDeviceIDs ||
      !query.getDeviceInfo || !createContext || !createQueue || !env.cl.createBuffer ||
      !env.cl.releaseMemObject || !env.cl.enqueueMapBuffer || !env.cl.enqueueUnmapMemObject ||
      !env.cl.finish)
    return failPool("no OpenCL loader in this process");

  ClDevice dev;
  std::string error;
  if (!selectClDevice(m_plan.device, &dev, &error, query)) return failPool(error.c_str());
  m_device = dev.device;
  m_platform = dev.platform;
  m_maxAllocBytes = dev.maxAllocBytes;
  markEnumerated();
  if (m_earlyState == EarlyState::Making) makeEarlyContext(createContext);
  setPoolThreadInDriver(false);  // out of the driver until awaitContext (a hybrid pool's pages)
  PolicyKind kind = PolicyKind::OpenCL;
  policyFromName(m_plan.poolPolicy.c_str(), &kind);
  const bool pooled = m_plan.hasPoolSites() && !m_direct;
  // What needs no context is done while the program creates its own: a hybrid pool's pages and
  // their mlock, its expensive half.
  if (pooled && kind == PolicyKind::Hybrid) {
    PolicyStatus st = prepareHybridHost(m_plan.poolBytes, &m_region);
    if (!st) {
      makePolicy(kind, env)->release(&m_region);  // pages only: no OpenCL involved
      return failPool(st.reason);
    }
  }
  auto releaseRegion = [&] {
    if (m_region.base || m_region.buffer) makePolicy(kind, env)->release(&m_region);
  };
  cl_int err = CL_SUCCESS;
  char why[96];
  env.context = awaitContext();
  if (!env.context) {
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                     reinterpret_cast<cl_context_properties>(dev.platform), 0};
    env.context = createContext(props, 1, &dev.device, nullptr, nullptr, &err);
    if (err != CL_SUCCESS) {
      // Not released: PoCL's dummy context from a failed call aborts when released (see callEnd).
      releaseRegion();
      snprintf(why, sizeof why, "clCreateContext failed (OpenCL status %d)", err);
      return failPool(why);
    }
  }
  // Blocks adopted so far (allocated before the context, as real programs do) are registered now,
  // on a thread of their own, while the pool below is still being made (already started when the
  // program's context was offered).
  if (!m_direct) m_blocks.start(env, dev.maxAllocBytes);
  env.queue = createQueue(env.context, dev.device, nullptr, &err);
  if (err != CL_SUCCESS) {
    releaseRegion();
    if (releaseContext) releaseContext(env.context);
    snprintf(why, sizeof why, "clCreateCommandQueueWithProperties failed (OpenCL status %d)", err);
    return failPool(why);
  }
  if (m_registry) m_registry->contextReady(env, dev.maxAllocBytes);  // ~5 ms per 64 MiB (design notes)
  if (!pooled && !m_direct) return markReady(start);  // registrations only: no pool

  std::unique_ptr<AllocationPolicy> policy = makePolicy(kind, env);
  if (m_direct) return startDirect(std::move(policy), start);
  PolicyStatus st = m_region.base ? finishHybrid(env, &m_region)
                                  : policy->allocate(m_plan.poolBytes, &m_region);
  if (!st) {
    failPool(st.reason);
    policy->release(&m_region);  // what a failed allocate left (nothing) or the prepared pages
    policy.reset();
    if (releaseQueue) releaseQueue(env.queue);
    if (releaseContext) releaseContext(env.context);
    return;
  }
  if (!m_pool.addRegion(m_region.ptr, m_region.size)) return failPool("pool rejected its region");
  m_regionInheritance = os::forkInheritance(m_region.ptr);  // published by markReady
  // The context, queue and policy stay alive with the region (released at exit by the driver).
  policy.release();
  markReady(start);
  debug("pinned pool ready: %s %s on %s in %s after %.0f ms; fork() would give a child its pages %s",
        m_plan.poolPolicy.c_str(), mib(m_plan.poolBytes).c_str(), dev.deviceName.c_str(), contextOrigin(),
        m_readyAfterMs, os::forkInheritanceName(m_regionInheritance));
}

cl_context OptimizeInterceptor::awaitContext() {
  std::unique_lock<std::mutex> lock(m_stateMutex);
  if (!m_ownContextOnly)
    m_stateChanged.wait(lock, [this] { return m_programContext || m_ownContextWanted; });
  m_driver.setInDriver(true);  // a context, a queue and the pinned memory next
  m_contextChosen = true;
  return m_programContext;
}

const char* OptimizeInterceptor::contextOrigin() {
  std::lock_guard<std::mutex> lock(m_stateMutex);
  if (!m_programContext) return m_contextChosen ? "its own context" : "no context yet";
  if (m_programContext != m_earlyContext) return "the program's context";
  return m_earlyHandedOut ? "the early context (the program's)" : "the early context (not the program's)";
}

void OptimizeInterceptor::markReady(double startMs) {
  m_readyAfterMs = nowMs() - startMs;
  {
    std::lock_guard<std::mutex> lock(m_stateMutex);
    m_state.store(static_cast<int>(PoolState::Ready), std::memory_order_release);
  }
  m_stateChanged.notify_all();
}

bool OptimizeInterceptor::waitForPool() {
  int st = m_state.load(std::memory_order_acquire);
  if (HETOPT_LIKELY(st == static_cast<int>(PoolState::Ready))) return true;
  if (st == static_cast<int>(PoolState::Failed)) return false;
  static const uint64_t waitMs = optionUnsigned(Option::POOL_WAIT_MS, 0, 600000);
  std::unique_lock<std::mutex> lock(m_stateMutex);
  // Never for a pool whose thread waits for the program's first OpenCL call (a late driver): the
  // program would wait here instead of making that call, each allocation the whole wait.
  m_stateChanged.wait_for(lock, std::chrono::milliseconds(waitMs), [this] {
    return m_state.load(std::memory_order_acquire) != static_cast<int>(PoolState::Preparing) ||
           (m_driver.late() && !m_lateStarted);
  });
  return m_state.load(std::memory_order_acquire) == static_cast<int>(PoolState::Ready);
}

void* OptimizeInterceptor::serve(AllocFn fn, size_t size, size_t alignment, const CallSite& site) {
  const PlanSite* planned = m_plan.find(siteKey(site), size);
  if (!planned) return nullptr;
  if (!m_conformance.admit(*planned, size, usage())) {
    m_afterDivergence.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  const int state = m_state.load(std::memory_order_acquire);
  if (m_direct) {
    // The naive variant as it was measured: a context of its own when the program has none yet.
    if (HETOPT_UNLIKELY(state == static_cast<int>(PoolState::Preparing))) requestOwnContext();
    if (!waitForPool()) {
      m_noPool.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    return serveDirect(fn, size, alignment, siteIndex(*planned));
  }
  if (state == static_cast<int>(PoolState::Failed)) {
    m_noPool.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  if (planned->strategy == SiteStrategy::Register) return serveInPlace(fn, size, alignment, *planned);
  // A pool site: waits for a pool in preparation only as long as HETOPT_POOL_WAIT_MS says (by
  // default not at all), and never for a context the program has not made yet.
  const bool ready = state == static_cast<int>(PoolState::Ready) ||
                     ((m_ownContextOnly || contextExists()) && waitForPool());
  if (ready) {
    void* p = fn == AllocFn::Calloc ? m_pool.allocateZeroed(1, size) : m_pool.allocate(size, alignment);
    if (p) {
      m_served.fetch_add(1, std::memory_order_relaxed);
      m_servedBytes.fetch_add(size, std::memory_order_relaxed);
      m_liveBytes.fetch_add(m_pool.usableSize(p), std::memory_order_relaxed);
      m_ledger.served(p, m_pool.usableSize(p), siteIndex(*planned));
      return p;
    }
    m_poolFull.fetch_add(1, std::memory_order_relaxed);
  } else {
    m_noPool.fetch_add(1, std::memory_order_relaxed);
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
  m_served.fetch_add(1, std::memory_order_relaxed);
  m_servedBytes.fetch_add(size, std::memory_order_relaxed);
  m_inPlace.fetch_add(1, std::memory_order_relaxed);
  m_inPlaceBytes.fetch_add(size, std::memory_order_relaxed);
  m_liveBytes.fetch_add(m_blocks.usableSize(p), std::memory_order_relaxed);
  return p;
}

size_t OptimizeInterceptor::usableSize(const void* ptr) const {
  if (m_pool.owns(ptr)) return m_pool.usableSize(ptr);
  if (m_direct && m_direct->owns(ptr)) return m_direct->usableSize(ptr);
  if (size_t n = m_blocks.usableSize(ptr)) return n;
  return g_below->allocator.usableSize(const_cast<void*>(ptr));
}

void OptimizeInterceptor::release(void* ptr) {
  m_released.fetch_add(1, std::memory_order_relaxed);
  m_liveBytes.fetch_sub(usableSize(ptr), std::memory_order_relaxed);
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
    p = nullptr;  // the parent's pages: moved out, never resized there
  else if (m_conformance.diverged())  // in place only: moving would be a new redirection
    p = m_pool.owns(ptr) ? (m_pool.resizeInPlace(ptr, size) ? ptr : nullptr)
                         : (size <= old ? ptr : nullptr);
  else
    p = m_pool.owns(ptr) ? m_pool.reallocate(ptr, size) : m_direct->reallocate(ptr, size);
  if (!p) {
    m_movedOut.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  const unsigned site = m_ledger.siteOf(ptr);
  m_ledger.released(ptr);
  m_ledger.served(p, usableSize(p), site);
  m_liveBytes.fetch_add(usableSize(p) - old, std::memory_order_relaxed);  // modulo 2^64
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
  m_liveBytes.fetch_add(usable - old, std::memory_order_relaxed);  // modulo 2^64
  // Kept in place unless the program diverged from its profile (then it is ordinary memory; its
  // free still finds no owner and goes to the system).
  if (!m_conformance.diverged() && !m_blocks.adopt(block, p ? size : old, usable, wait, site)) {
    m_liveBytes.fetch_sub(usable, std::memory_order_relaxed);
    m_released.fetch_add(1, std::memory_order_relaxed);
  }
  if (!p) m_movedOut.fetch_add(1, std::memory_order_relaxed);
  return p;
}

// ---- the naive variant and conformance -------------------------------------------------------

void OptimizeInterceptor::startDirect(std::unique_ptr<AllocationPolicy> policy, double startMs) {
  // One page made and released now: a policy that cannot work here fails once, in the background,
  // not on every candidate allocation.
  PolicyStatus st = probePolicy(*policy);
  if (!st) return failPool(st.reason);
  m_directPolicy = std::move(policy);
  m_direct->setPolicy(m_directPolicy.get());
  markReady(startMs);
  debug("direct %s allocation (no pool) ready after %.0f ms", m_plan.poolPolicy.c_str(),
        m_readyAfterMs);
}

void* OptimizeInterceptor::serveDirect(AllocFn fn, size_t size, size_t alignment, unsigned site) {
  void* p = m_direct->allocate(size, alignment, fn == AllocFn::Calloc);
  if (!p) {
    m_directFailed.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  m_served.fetch_add(1, std::memory_order_relaxed);
  m_servedBytes.fetch_add(size, std::memory_order_relaxed);
  m_liveBytes.fetch_add(m_direct->usableSize(p), std::memory_order_relaxed);
  m_ledger.served(p, m_direct->usableSize(p), site);
  return p;
}

bool OptimizeInterceptor::isRedirectedMemory(const void* host) const {
  return m_pool.owns(host) || (m_direct && m_direct->contains(host));
}

Conformance::Usage OptimizeInterceptor::usage() const {
  Conformance::Usage u;
  u.served = m_served.load(std::memory_order_relaxed);
  uint64_t released = m_released.load(std::memory_order_relaxed);
  u.liveBlocks = u.served > released ? u.served - released : 0;
  u.liveBytes = m_liveBytes.load(std::memory_order_relaxed);
  u.transfers = m_pinnedH2d.load(std::memory_order_relaxed) +
                m_pinnedD2h.load(std::memory_order_relaxed) + m_blocks.pinnedTransfers();
  return u;
}

std::string OptimizeInterceptor::conformanceStats() const {
  if (!m_conformance.diverged()) return "conformant";
  return std::string("deactivated: ") + m_conformance.reason() + "\n  " +
         std::to_string(m_afterDivergence.load()) + " allocations not redirected after deactivation";
}

void OptimizeInterceptor::callBegin(CallRecord& call) {
  if (HETOPT_UNLIKELY(m_markAtFirstCall.load(std::memory_order_relaxed))) noteForkedCopyCallsOpenCL();
  if (HETOPT_UNLIKELY(!m_programCalledOpenCL.load(std::memory_order_relaxed)))
    m_programCalledOpenCL.store(true, std::memory_order_relaxed);
  if (HETOPT_UNLIKELY(!m_enumerated.load(std::memory_order_acquire))) {
    std::unique_lock<std::mutex> lock(m_stateMutex);
    // In a loop: a fork() on another thread may make the driver late while this call waits.
    while (!m_enumerated.load(std::memory_order_acquire)) {
      if (m_driver.late() && !m_lateStarted) {
        m_lateStarted = true;
        std::thread([this] { preparePool(false); }).detach();
      }
      m_stateChanged.wait(lock);
    }
  }
  if (HETOPT_UNLIKELY(m_plan.earlyContext) &&
      (call.id == api::ApiId::clCreateContext || call.id == api::ApiId::clCreateContextFromType))
    handOutEarlyContext(call);
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
    if (m.fromPool) {
      (m.h2d ? m_pinnedH2d : m_pinnedD2h).fetch_add(1, std::memory_order_relaxed);
      (m.h2d ? m_pinnedH2dBytes : m_pinnedD2hBytes).fetch_add(bytes, std::memory_order_relaxed);
    } else if (m.outcome != SiteLedger::Outcome::Pinned) {
      (m.h2d ? m_otherH2d : m_otherD2h).fetch_add(1, std::memory_order_relaxed);
      (m.h2d ? m_otherH2dBytes : m_otherD2hBytes).fetch_add(bytes, std::memory_order_relaxed);
    }
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
  m_programMadeContext.store(true, std::memory_order_relaxed);
  offerContext(call);
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
