// SPDX-License-Identifier: MIT
/**
 * @file The operating-system calls behind the allocation policies: page locking
 * and the limits on it. Declared once here, implemented per platform (os_memory_linux.cpp); nothing
 * else in policies/ calls the OS for memory locking. Allocation-free, so the shim may call them
 * from its malloc hooks.
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

/// mlock: pre-condition `ptr` page-aligned (callers allocate page-aligned so that unlocking one
/// block never unlocks a neighbour sharing its page). Returns 0 or the errno.
int lockMemory(void* ptr, size_t bytes);

/// munlock; returns 0 or the errno.
int unlockMemory(void* ptr, size_t bytes);

/// Bytes of host memory available to new allocations without swapping (MemAvailable); 0 unknown.
uint64_t availableHostMemory();

/// What fork() gives the child of the mapping that holds an address. Drivers make pinned memory
/// their own way: NVIDIA's CL_MEM_ALLOC_HOST_PTR mappings are shared (/dev/zero, MAP_SHARED), so a
/// child would write into the parent's pages, where the program expects a copy.
enum class ForkInheritance : uint8_t {
  Copied,        ///< private memory: the child gets its own copy (on write)
  Shared,        ///< a shared mapping: parent and child would see each other's writes
  NotInherited,  ///< MADV_DONTFORK: nothing would be mapped there in the child
  Unknown,       ///< no mapping holds the address, or /proc/self/smaps is unreadable
};
/// Reads /proc/self/smaps (no allocation; a few ms in a process with many mappings: call it once
/// per mapping, off the program's path).
ForkInheritance forkInheritance(const void* addr);
/// Whether a child must be given its own copy (a shared mapping, or none at all).
inline bool needsCopyForChild(ForkInheritance f) {
  return f == ForkInheritance::Shared || f == ForkInheritance::NotInherited;
}
const char* forkInheritanceName(ForkInheritance f);

/// An anonymous private mapping of `bytes` (pages, untouched until written); null on failure.
void* mapPrivate(size_t bytes);
/// Moves the mapping [from, from + bytes) to `to`, replacing whatever was mapped there (mremap with
/// MREMAP_FIXED). Page-aligned arguments; false (nothing moved) on failure.
bool moveMapping(void* from, size_t bytes, void* to);
void unmap(void* ptr, size_t bytes);

}  // namespace hetopt::os
