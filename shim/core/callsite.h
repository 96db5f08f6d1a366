// SPDX-License-Identifier: MIT
/**
 * @file Where an allocation came from, cheaply and stable across runs despite ASLR.
 *
 * A site is the return addresses of the first frames outside libc, libstdc++, libgcc and the shim
 * (operator new, std::vector and malloc wrappers in those libraries say nothing about the caller).
 * Addresses stay raw in the trace together with the module map (no symbolizer in the shim); the
 * analyzer symbolizes. For matching across runs, siteKey() turns them into (module identity,
 * offset) pairs. Only allocations of at least HETOPT_MIN_TRACKED_SIZE pay for unwinding.
 */
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace hetopt::shim {

inline constexpr unsigned kMaxSiteDepth = 16;

struct CallSite {
  unsigned depth = 0;
  bool fromDriver = false;       ///< the first frame outside the runtime is OpenCL driver code
  uintptr_t pcs[kMaxSiteDepth];  ///< return addresses, innermost first
};

/// One loaded object (executable or shared library).
struct Module {
  uintptr_t start = 0;  ///< lowest mapped address of its PT_LOAD segments
  uintptr_t end = 0;    ///< one past the highest
  uintptr_t bias = 0;   ///< load bias: file offset of a pc = pc - bias
  std::string path;
  std::string buildId;   ///< hex of NT_GNU_BUILD_ID, empty when absent
  bool skipped = false;  ///< libc/libstdc++/libgcc/ld.so/the shim: never a site frame
  bool driver = false;   ///< the OpenCL loader or an implementation (PoCL, NVIDIA, ...): its
                         ///< allocations are the driver's own, not the application's
  uint64_t identity =
      0;  ///< moduleIdentity(buildId, path) (contracts/site_key.h): stable across runs
};

/// The process's loaded objects. Lookups read an immutable snapshot without locking; a miss
/// (a library dlopen()ed since) rebuilds it under a mutex. Old snapshots are kept, never freed, so
/// a concurrent reader is never left with a dangling pointer; they are few (one per dlopen seen).
class ModuleMap {
 public:
  static ModuleMap& instance();
  /// The module containing `pc`, or null.
  const Module* find(uintptr_t pc);
  /// Every module, and a number that grows whenever the set changed (for re-emitting the map).
  std::vector<Module> modules(uint64_t* generation);
  uint64_t generation() const { return m_generation.load(std::memory_order_acquire); }
  /// Rebuilds when libraries were loaded or unloaded since the last snapshot.
  void refresh();
  /// The fork protocol (lifecycle.cpp): fork() waits for a rebuild in progress, so that a child
  /// never inherits the mutex held (alloc_torture's forked child hung in optimize mode).
  void lockForFork() { m_refreshMutex.lock(); }
  void unlockAfterFork() { m_refreshMutex.unlock(); }

 private:
  using Snapshot = std::vector<Module>;
  std::atomic<const Snapshot*> m_current{nullptr};
  std::atomic<uint64_t> m_generation{0};
  std::mutex m_refreshMutex;
  uint64_t m_loadStamp = 0;  ///< loader's dlopen+dlclose count at the last rebuild
};

/// Fills `site` with up to `depth` (<= kMaxSiteDepth) application frames of the calling thread.
/// Must run inside ScopedInternal (the unwinder and the module map may allocate).
void captureCallSite(CallSite* site, unsigned depth);

/// ASLR-independent identity of a site: contracts/site_key.h over (module identity, pc - bias) of
/// its frames; the analyzer computes the same key from a trace.
uint64_t siteKey(const CallSite& site);

}  // namespace hetopt::shim
