// SPDX-License-Identifier: MIT
/**
 * @file In-place registration (optimize mode): pins memory that malloc never made, where it is:
 * the plan's static ranges (module identity + offset + size) and anonymous private mappings of a
 * size range (contracts/plan.h). Each is covered by a CL_MEM_USE_HOST_PTR buffer (policies:
 * adoptHostMemory), which pins its pages for exactly the buffer's lifetime. The one hard rule: the
 * buffer over a range is always released before the program's munmap/mremap/MAP_FIXED
 * mmap/discarding madvise of any overlapping range reaches the kernel, so the driver never holds
 * pages the program has given back.
 */
#pragma once
#include <sys/mman.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "common/json_writer.h"
#include "contracts/plan.h"
#include "policies/policy.h"
#include "shim/core/refusals.h"

namespace hetopt::shim {

/// Transfers from registered memory in the program's own context run at the pinned rate, also for
/// sub-ranges at any offset. Static ranges and mappings already made are registered on the pool
/// thread right after the shim's context exists (off the critical path); a mapping made later is
/// registered on its first transfer. Failures (OpenCL errors, full table) are counted and leave
/// the memory pageable; nothing here is fatal, and no memory the plan does not name is touched.
///
/// Thread safety: any thread may map, unmap or transfer. One mutex guards a fixed table (no
/// allocation: mmap hooks can run inside another allocator); no OpenCL call is made while it is
/// held. A range being registered is marked so: an unmap of it waits until the buffer exists, then
/// releases it.
class InplaceRegistry {
 public:
  /// Takes the plan's static ranges and mapping sizes; registers nothing until contextReady().
  explicit InplaceRegistry(const Plan& plan);

  /// The shim's context (and the OpenCL entry points) exist: finds the static ranges in this
  /// process (page-aligned, inside the main executable's loaded image) and registers them and the
  /// mappings known so far. Called once, on the pool thread; `env` is copied. Ranges larger than
  /// `maxBufferBytes` (the device's CL_DEVICE_MAX_MEM_ALLOC_SIZE; 0: unknown) are refused without
  /// asking the driver: the spec forbids such a buffer, and NVIDIA's pins all of it anyway (a
  /// 40 GiB MAP_NORESERVE mapping, faulted in and locked in 18 s on an H100).
  void contextReady(const PolicyEnv& env, uint64_t maxBufferBytes = 0);

  /// Whether a mapping of `len` bytes with mmap `flags` is one the plan names: anonymous, private,
  /// its size in the plan's range.
  bool wants(size_t len, int flags) const {
    return m_plan.registersMappings() &&
           (flags & (MAP_ANONYMOUS | MAP_PRIVATE | MAP_SHARED)) == (MAP_ANONYMOUS | MAP_PRIVATE) &&
           len >= m_plan.mmapMinBytes && len <= m_plan.mmapMaxBytes;
  }
  /// An application mmap succeeded: mappings wants() are tracked (registered on their first
  /// transfer, or when the context comes).
  void mapped(void* addr, size_t len, int flags);
  /// Before [addr, addr+len) is unmapped, remapped or replaced (`discard` false: the range is
  /// forgotten) or its contents discarded by madvise (`discard` true: it stays tracked and is
  /// registered again on its next transfer): releases every buffer over an overlapping range
  /// first. Returns true when a tracked mapping overlapped (mremap re-tracks the new address).
  bool unmapping(void* addr, size_t len, bool discard);
  /// A transfer's host pointer (H2D: `h2d`): registers the tracked range holding it on its first
  /// transfer; true (and counted) when it lies in registered memory.
  bool transfer(const void* host, uint64_t bytes, bool h2d);

  /// The program creates its own CL_MEM_USE_HOST_PTR buffer over [host, host+bytes): the driver
  /// may refuse a second registration of the same pages (CUDA does), so ours over it is released
  /// first and not made again (the program's own buffer pins it anyway).
  void yieldTo(const void* host, size_t bytes);
  /// The fork protocol (shim/core/lifecycle.cpp): the table's mutex is held across fork(), so that
  /// the child's copy is whole and unlocked.
  void lockForFork() { m_mutex.lock(); }
  void unlockAfterFork() { m_mutex.unlock(); }
  /// In the child after fork(): the shim's context is the parent's; track and release nothing.
  void forkChild() { m_disabled.store(true, std::memory_order_release); }
  /// Lines for HETOPT_STATS (a heading, then one fact per indented line).
  std::string stats() const;
  /// The same counts as members of the JSON object `json` is in (HETOPT_STATS_JSON).
  void statsJson(JsonWriter& json) const;

  static constexpr size_t kMaxRanges = 64;  ///< fixed table: no allocation in mmap hooks

 private:
  enum class State : uint8_t { Free, Known, Registering, Registered, Failed };
  struct Range {
    uintptr_t start = 0, end = 0;  ///< page-aligned
    State state = State::Free;
    bool isStatic = false;
    Allocation registration;  ///< the USE_HOST_PTR buffer while Registered
  };

  /// Registers range `i` (Known) with the lock held in `lock`; unlocks for the OpenCL call.
  void registerRange(size_t i, std::unique_lock<std::mutex>& lock);
  /// A free table slot for [start, end) in state Known, or kMaxRanges (counted) when full.
  size_t addRange(uintptr_t start, uintptr_t end, bool isStatic);
  void findStaticRanges();

  Plan m_plan;
  PolicyEnv m_env;
  uint64_t m_maxBufferBytes = 0;                 ///< set by contextReady(); 0: no limit known
  std::unique_ptr<AllocationPolicy> m_register;  ///< release() of registrations
  std::atomic<bool> m_ready{false}, m_disabled{false};
  std::atomic<size_t> m_inUse{0};  ///< non-free slots: hooks skip the lock when 0

  mutable std::mutex m_mutex;
  std::condition_variable m_registered;  ///< a Registering range finished
  Range m_ranges[kMaxRanges];

  std::atomic<uint64_t> m_staticRegistered{0}, m_mmapRegistered{0}, m_registeredBytes{0};
  std::atomic<uint64_t> m_notFound{0}, m_tableFull{0}, m_unpinned{0};
  std::atomic<uint64_t> m_mappingsSeen{0}, m_registerNs{0}, m_yielded{0};
  std::atomic<uint64_t> m_h2d{0}, m_h2dBytes{0}, m_d2h{0}, m_d2hBytes{0};
  Refusals m_refusals;  ///< its last reason under m_mutex
};

}  // namespace hetopt::shim
