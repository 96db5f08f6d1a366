// SPDX-License-Identifier: MIT
/**
 * @file Optimize mode's driver thread (see optimize_interceptor.h): the steps from enumeration to
 * ready pinned memory, listed in order in prepare(). A step that fails says why once
 * (Preparation::fail) and the program runs with ordinary memory; a new step (say, work to do on the
 * early context before the program asks for it) goes into that list, with what it needs in
 * DriverRun.
 */
#include <CL/cl.h>

#include <cstdio>
#include <memory>
#include <string>

#include "common/cl_select.h"
#include "common/clock.h"
#include "common/log.h"
#include "shim/core/optimize_interceptor.h"
#include "shim/core/state.h"
#include "shim/core/stats_text.h"

namespace hetopt::shim {
struct OptimizeInterceptor::DriverRun {
  double startMs = 0;
  ClQueryFunctions query{};
  decltype(&clCreateContext) createContext = nullptr;
  decltype(&clCreateCommandQueueWithProperties) createQueue = nullptr;
  decltype(&clReleaseContext) releaseContext = nullptr;
  decltype(&clReleaseCommandQueue) releaseQueue = nullptr;
  PolicyEnv env;  ///< the policies' OpenCL functions; its context and queue once made
  ClDevice dev;   ///< the plan's device
  PolicyKind kind = PolicyKind::OpenCL;  ///< the pool's (or the direct variant's) policy
  bool pooled = false;                   ///< there is a pool to make
};

// The steps in order; each returns false (having said why) when the preparation stops there.
void OptimizeInterceptor::prepare(bool early) {
  ScopedInternal internal;  // this thread's OpenCL calls and allocations are the shim's own
  if (!m_prep.enterDriver(early)) return;
  struct LeaveDriver {  // on every way out of here (fork and exit wait for it)
    Preparation& prep;
    ~LeaveDriver() { prep.setInDriver(false); }
  } leave{m_prep};
  DriverRun run;
  run.startMs = monotonicMs();
  if (!findOpenCL(run)) return failPool("no OpenCL loader in this process");
  if (!enumerate(run)) return;
  makeEarlyContext(run);
  m_prep.setInDriver(false);  // out of the driver until the context is taken
  // A start-up-only plan: the early context and what is built on it were all there was to do.
  if (m_plan.startupOnly()) return m_prep.markReady(run.startMs);
  if (!prepareHostPages(run)) return;
  if (!takeContext(run)) return;
  // Blocks adopted so far (allocated before the context, as real programs do) are registered now,
  // on a thread of their own, while the pool below is still being made (already started when the
  // program's context was offered).
  if (!m_direct) m_blocks.start(run.env, run.dev.maxAllocBytes);
  if (!makeQueue(run)) return;
  if (m_registry) m_registry->contextReady(run.env, run.dev.maxAllocBytes);
  if (!run.pooled && !m_direct) return m_prep.markReady(run.startMs);  // registrations only
  if (m_direct) return startDirect(run);
  makePool(run);
}

void OptimizeInterceptor::failPool(const char* why) {
  m_prep.fail(why);
  m_context.abandonEarly();
}

bool OptimizeInterceptor::findOpenCL(DriverRun& run) {
  using api::ApiId;
  run.query = {realClFunction<decltype(&clGetPlatformIDs)>(ApiId::clGetPlatformIDs),
               realClFunction<decltype(&clGetPlatformInfo)>(ApiId::clGetPlatformInfo),
               realClFunction<decltype(&clGetDeviceIDs)>(ApiId::clGetDeviceIDs),
               realClFunction<decltype(&clGetDeviceInfo)>(ApiId::clGetDeviceInfo)};
  run.createContext = realClFunction<decltype(&clCreateContext)>(ApiId::clCreateContext);
  run.createQueue = realClFunction<decltype(&clCreateCommandQueueWithProperties)>(
      ApiId::clCreateCommandQueueWithProperties);
  run.releaseContext = realClFunction<decltype(&clReleaseContext)>(ApiId::clReleaseContext);
  run.releaseQueue = realClFunction<decltype(&clReleaseCommandQueue)>(ApiId::clReleaseCommandQueue);
  run.env = policyEnvIn(nullptr);
  const ClQueryFunctions& q = run.query;
  const ClPolicyFunctions& cl = run.env.cl;
  return q.getPlatformIDs && q.getPlatformInfo && q.getDeviceIDs && q.getDeviceInfo &&
         run.createContext && run.createQueue && cl.createBuffer && cl.releaseMemObject &&
         cl.enqueueMapBuffer && cl.enqueueUnmapMemObject && cl.finish;
}

// The program's OpenCL calls wait until this is done (Preparation::awaitEnumeration).
bool OptimizeInterceptor::enumerate(DriverRun& run) {
  std::string error;
  if (!selectClDevice(m_plan.device, &run.dev, &error, run.query)) {
    failPool(error.c_str());
    return false;
  }
  m_context.setDevice(run.dev.platform, run.dev.device);
  m_maxAllocBytes = run.dev.maxAllocBytes;
  m_prep.markEnumerated();
  return true;
}

// Plan `context early`: made now, handed to the program's matching clCreateContext[FromType].
void OptimizeInterceptor::makeEarlyContext(DriverRun& run) {
  if (!m_context.earlyWanted()) return;
  if (cl_context early = m_context.makeEarly(run.createContext)) {
    m_ahead.start(early, run.dev.device);  // the program's kernels, on a thread of their own
    if (!m_plan.startupOnly()) m_blocks.start(policyEnvIn(early), m_maxAllocBytes);
  }
}

// What needs no context is done while the program creates its own: a hybrid pool's pages and
// their mlock, its expensive half.
bool OptimizeInterceptor::prepareHostPages(DriverRun& run) {
  policyFromName(m_plan.poolPolicy.c_str(), &run.kind);
  run.pooled = m_plan.hasPoolSites() && !m_direct;
  if (!run.pooled || run.kind != PolicyKind::Hybrid) return true;
  const PolicyStatus st = prepareHybridHost(m_plan.poolBytes, &m_region);
  if (st) return true;
  makePolicy(run.kind, run.env)->release(&m_region);  // pages only: no OpenCL involved
  failPool(st.reason);
  return false;
}

// The early context or the program's (waited for), else one of its own.
bool OptimizeInterceptor::takeContext(DriverRun& run) {
  run.env.context = m_context.await();
  m_prep.setInDriver(true);  // a context, a queue and the pinned memory next
  if (run.env.context) return true;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(run.dev.platform), 0};
  cl_int err = CL_SUCCESS;
  run.env.context = run.createContext(props, 1, &run.dev.device, nullptr, nullptr, &err);
  if (err == CL_SUCCESS) return true;
  // Not released: PoCL's dummy context from a failed call aborts when released (see callEnd).
  if (m_region.base || m_region.buffer) makePolicy(run.kind, run.env)->release(&m_region);
  char why[96];
  snprintf(why, sizeof why, "clCreateContext failed (OpenCL status %d)", err);
  failPool(why);
  return false;
}

bool OptimizeInterceptor::makeQueue(DriverRun& run) {
  cl_int err = CL_SUCCESS;
  run.env.queue = run.createQueue(run.env.context, run.dev.device, nullptr, &err);
  if (err == CL_SUCCESS) return true;
  if (m_region.base || m_region.buffer) makePolicy(run.kind, run.env)->release(&m_region);
  if (run.releaseContext) run.releaseContext(run.env.context);
  char why[96];
  snprintf(why, sizeof why, "clCreateCommandQueueWithProperties failed (OpenCL status %d)", err);
  failPool(why);
  return false;
}

// The naive variant: one page made and released now, so that a policy that cannot work here fails
// once, in the background, not on every candidate allocation.
void OptimizeInterceptor::startDirect(DriverRun& run) {
  std::unique_ptr<AllocationPolicy> policy = makePolicy(run.kind, run.env);
  const PolicyStatus st = probePolicy(*policy);
  if (!st) return failPool(st.reason);
  m_directPolicy = std::move(policy);
  m_direct->setPolicy(m_directPolicy.get());
  m_prep.markReady(run.startMs);
  debug("direct %s allocation (no pool) ready after %.0f ms", m_plan.poolPolicy.c_str(),
        m_prep.readyAfterMs());
}

void OptimizeInterceptor::makePool(DriverRun& run) {
  std::unique_ptr<AllocationPolicy> policy = makePolicy(run.kind, run.env);
  const PolicyStatus st = m_region.base ? finishHybrid(run.env, &m_region)
                                        : policy->allocate(m_plan.poolBytes, &m_region);
  if (!st) {
    failPool(st.reason);
    policy->release(&m_region);  // what a failed allocate left (nothing) or the prepared pages
    policy.reset();
    if (run.releaseQueue) run.releaseQueue(run.env.queue);
    if (run.releaseContext) run.releaseContext(run.env.context);
    return;
  }
  if (!m_pool.addRegion(m_region.ptr, m_region.size)) return failPool("pool rejected its region");
  m_regionInheritance = os::forkInheritance(m_region.ptr);  // published by markReady
  // The context, queue and policy stay alive with the region (released at exit by the driver).
  policy.release();
  m_prep.markReady(run.startMs);
  debug(
      "pinned pool ready: %s %s on %s in %s after %.0f ms; fork() would give a child its pages %s",
      m_plan.poolPolicy.c_str(), mib(m_plan.poolBytes).c_str(), run.dev.deviceName.c_str(),
      m_context.origin(), m_prep.readyAfterMs(), os::forkInheritanceName(m_regionInheritance));
}

void OptimizeInterceptor::loadDriverLibraries() {
  ScopedInternal internal;  // what the libraries' constructors allocate is not the program's
  if (!m_prep.beginLoading()) return;
  const double start = monotonicMs();
  const unsigned loaded = loadVendorLibraries();
  m_prep.endLoading();
  debug("%u OpenCL implementation(s) loaded early in %.0f ms, none called", loaded,
        monotonicMs() - start);
}

}  // namespace hetopt::shim
