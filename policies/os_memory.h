// SPDX-License-Identifier: MIT
/**
 * @file The operating-system calls behind the allocation policies (style habit 11): page locking and
 * the limits on it. Declared once here, implemented per platform (os_memory_linux.cpp); nothing else
 * in policies/ calls the OS for memory locking. Allocation-free, so the shim may call them from its
 * malloc hooks.
 */
#pragma once
#include <cstddef>
#include <cstdint>

namespace hetopt::os {

/// Size of a virtual-memory page (what mlock rounds to). Never 0.
size_t pageSize();

/// Rounds `bytes` up to whole pages.
size_t roundUpToPages(size_t bytes);

/// Soft RLIMIT_MEMLOCK in bytes; UINT64_MAX when unlimited.
uint64_t memlockLimit();

/// True when the process may lock memory beyond RLIMIT_MEMLOCK (CAP_IPC_LOCK): root in most
/// containers, which is why a small `ulimit -l` alone does not stop mlock there.
bool canLockBeyondLimit();

/// Bytes this process has locked now (VmLck); 0 when unknown.
uint64_t lockedBytes();

/// mlock: pre-condition `ptr` page-aligned (callers allocate page-aligned so that unlocking one block
/// never unlocks a neighbour sharing its page). Returns 0 or the errno.
int lockMemory(void* ptr, size_t bytes);

/// munlock; returns 0 or the errno.
int unlockMemory(void* ptr, size_t bytes);

/// Bytes of host memory available to new allocations without swapping (MemAvailable); 0 unknown.
uint64_t availableHostMemory();

}  // namespace hetopt::os
