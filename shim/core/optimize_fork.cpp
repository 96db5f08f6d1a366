// SPDX-License-Identifier: MIT
/**
 * @file Optimize mode's part of the shim's fork protocol (see optimize_interceptor.h and
 * shim/core/lifecycle.cpp): its locks around fork(), the child's own copy of pinned memory fork()
 * would share (policies/fork_copies.h), what the child keeps and serves, and the mark a forked
 * copy's first OpenCL call leaves beside the plan. What fork() waits for first is
 * Preparation::beforeFork's.
 */
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "common/log.h"
#include "policies/os_memory.h"
#include "shim/core/optimize_interceptor.h"

namespace hetopt::shim {

// The fork protocol's order (shim/core/lifecycle.cpp): preparation, context choice, programs built
// ahead, pool, registry, heap blocks, direct table, ledger. None of them is held while another is
// taken, nor across a wait for another thread.
void OptimizeInterceptor::forkPrepare() {
  m_prep.lockForFork();
  m_context.lockForFork();
  m_ahead.lockForFork();
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
  const bool ready = m_prep.pool() == Preparation::Pool::Ready;
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
  m_ahead.unlockAfterFork();
  m_context.unlockAfterFork();
  m_prep.unlockAfterFork();
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
  const int fd =
      open(m_forkMarker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  const bool markedHere =
      fd >= 0 || errno != EEXIST;  // the run's first such copy (or no mark at all)
  if (fd >= 0) close(fd);
  // Natively this child would have had a driver of its own (its parent had made no OpenCL call):
  // if it hangs or fails now, that is hetopt's doing, and the user should hear it, once per run
  // (a program forking twenty workers warned twenty times).
  if (m_forkedBeforeProgramsFirstCall && markedHere)
    warn(
        "a forked copy of this program calls OpenCL, but hetopt started the driver early in its "
        "parent, "
        "and a forked child cannot use that driver (it may hang or fail); the next `hetopt run` of "
        "this "
        "program leaves the driver to it");
}

void OptimizeInterceptor::forkChild() {
  // forkPrepare holds the preparation's mutex: what the parent's driver thread did is read under
  // it.
  const Preparation::Inherited parent = m_prep.forkChild();
  m_markAtFirstCall.store(parent.driverStarted && !m_forkMarker.empty(), std::memory_order_relaxed);
  m_forkedBeforeProgramsFirstCall = parent.driverStarted && !parent.programCalledOpenCL;
  const bool placed = m_forkCopies.placeInChild();
  m_poolShared =
      m_region.ptr && os::needsCopyForChild(m_regionInheritance) && !(m_regionCopied && placed);
  if (m_registry) m_registry->forkChild();
  m_blocks.forkChild();
  // The parent's contexts are no contexts in the child: never handed out nor offered there. It
  // keeps using (and freeing) the pool blocks it inherited and serves nothing new
  // (Preparation::forkChild).
  m_context.forkChild();
  m_ahead.forkChild();
  if (m_direct) m_direct->forkChild();
  unlockAfterFork();
}

}  // namespace hetopt::shim
