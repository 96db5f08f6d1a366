// SPDX-License-Identifier: MIT
/**
 * @file Optimize mode's part of the shim's fork protocol (see optimize_interceptor.h and
 * shim/core/lifecycle.cpp): its locks around fork(), the child's own copy of pinned memory fork()
 * would share (policies/fork_copies.h), what the child keeps and serves, and the mark a forked
 * copy's first OpenCL call leaves beside the plan.
 */
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "common/log.h"
#include "policies/os_memory.h"
#include "shim/core/optimize_interceptor.h"

namespace hetopt::shim {

// A fork() before the program's first OpenCL call, while hetopt's thread is inside the driver
// (enumerating, making the early context, or the pool in a context of its own) or loading its
// libraries: the child would inherit the loader, the driver or the dynamic loader's lock in the
// middle of it, with no thread to finish it; ocl-icd 2.3's clGetPlatformIDs then spins for ever
// in the child on the "initializing" flag the parent's thread had set. Natively the program's
// child would start a driver of its own, so fork() waits until that thread is out (bounded: a
// driver thread forking while the pool thread waits for it must not stop both). A fork() before
// that thread began calls its start-up off: the driver is left to the program in this process
// (driver_start.h). After the program's first call the driver is the program's.
void OptimizeInterceptor::beforeFork() {
  if (m_programCalledOpenCL.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> lock(m_stateMutex);
  if (m_programCalledOpenCL.load(std::memory_order_relaxed)) return;
  const bool wasLate = m_driver.late();
  if (m_driver.forkMustWait()) return waitOutOfDriver(lock, "fork()");
  lock.unlock();
  if (wasLate == m_driver.late()) return;
  m_stateChanged.notify_all();  // a call waiting for the early driver starts the late one
  debug("fork() before hetopt's thread started the driver: the driver is left to the program");
}

// The fork protocol's order (shim/core/lifecycle.cpp): state, pool, registry, heap blocks, direct
// table, ledger. None of them is held while another is taken, nor across a wait for another thread.
void OptimizeInterceptor::forkPrepare() {
  m_stateMutex.lock();
  m_pool.lockForFork();
  if (m_registry) m_registry->lockForFork();
  m_blocks.lockForFork();
  if (m_direct) m_direct->lockForFork();
  m_ledger.lockForFork();
  prepareChildCopies();
}

// The locks above keep the pool's headers still while the copy is taken. A fork from the pool
// thread itself cannot happen, and one before the pool is ready has no region to copy.
void OptimizeInterceptor::prepareChildCopies() {
  m_regionCopied = false;
  const bool ready = m_state.load(std::memory_order_acquire) == static_cast<int>(PoolState::Ready);
  if (ready && m_region.ptr && os::needsCopyForChild(m_regionInheritance)) {
    if (void* copy = m_forkCopies.add(m_region.ptr, m_region.size)) {
      m_pool.copyForChild(m_region.ptr, m_region.size, copy);
      m_regionCopied = true;
    }
  }
  if (m_direct) m_direct->copyForChild(m_forkCopies);
}

void OptimizeInterceptor::unlockAfterFork() {
  m_ledger.unlockAfterFork();
  if (m_direct) m_direct->unlockAfterFork();
  m_blocks.unlockAfterFork();
  if (m_registry) m_registry->unlockAfterFork();
  m_pool.unlockAfterFork();
  m_stateMutex.unlock();
}

void OptimizeInterceptor::forkParent() {
  m_forkCopies.dropInParent();
  unlockAfterFork();
}

// A forked copy of the program calls OpenCL: its driver is the one hetopt started early in the
// parent, which a forked child cannot use (PoCL's child hangs, CUDA's fails). Say so beside the
// plan, once, for the next `hetopt run` (driver late). Children that only exec or never call
// OpenCL leave the early driver to later runs. No allocation (the path was made at start).
void OptimizeInterceptor::noteForkedCopyCallsOpenCL() {
  if (!m_markAtFirstCall.exchange(false, std::memory_order_relaxed)) return;
  const int fd = open(m_forkMarker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  const bool markedHere = fd >= 0 || errno != EEXIST;  // the run's first such copy (or no mark at all)
  if (fd >= 0) close(fd);
  // Natively this child would have had a driver of its own (its parent had made no OpenCL call):
  // if it hangs or fails now, that is hetopt's doing, and the user should hear it, once per run
  // (a program forking twenty workers warned twenty times).
  if (m_forkedBeforeProgramsFirstCall && markedHere)
    warn("a forked copy of this program calls OpenCL, but hetopt started the driver early in its parent, "
         "and a forked child cannot use that driver (it may hang or fail); the next `hetopt run` of this "
         "program leaves the driver to it");
}

void OptimizeInterceptor::forkChild() {
  // forkPrepare holds m_stateMutex: m_driver is read under it.
  m_markAtFirstCall.store(m_driver.driverStarted() && !m_forkMarker.empty(),
                          std::memory_order_relaxed);
  m_forkedBeforeProgramsFirstCall =
      m_driver.driverStarted() && !m_programCalledOpenCL.load(std::memory_order_relaxed);
  const bool placed = m_forkCopies.placeInChild();
  m_poolShared = m_region.ptr && os::needsCopyForChild(m_regionInheritance) && !(m_regionCopied && placed);
  if (m_registry) m_registry->forkChild();
  m_blocks.forkChild();
  // The parent's context is no context in the child: never handed out there.
  m_earlyHandedOut = true;
  m_earlyState = EarlyState::Failed;
  // The child has the pool's pages but not the shim's OpenCL context nor the pool thread: it
  // keeps using (and freeing) what it inherited and serves nothing new. Nothing in it waits for
  // the pool thread: m_stateChanged's waiters, if any, were the parent's threads.
  m_state.store(static_cast<int>(PoolState::Failed), std::memory_order_release);
  snprintf(m_failure, sizeof m_failure, "forked child");
  m_enumerated.store(true, std::memory_order_release);
  m_driver.forkChild();
  m_contextChosen = true;  // a context the child creates is not offered
  if (m_direct) m_direct->forkChild();
  unlockAfterFork();
}

}  // namespace hetopt::shim
