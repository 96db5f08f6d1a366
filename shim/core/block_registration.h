// SPDX-License-Identifier: MIT
/**
 * @file The register strategy (optimize mode): the program's own heap blocks, pinned where they
 * are. Real programs allocate their large buffers, fill them, and only then create their OpenCL
 * context; a pool cannot serve them without a context of its own (a second NVIDIA context costs
 * the program 100-270 ms), and pinning at the transfer puts the pinning on the critical path. So
 * such blocks are made by the system allocator as usual, adopted here, and pinned by a worker
 * thread as soon as the pinning context exists, off the program's thread.
 */
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/json_writer.h"
#include "contracts/plan.h"
#include "policies/block_table.h"
#include "policies/policy.h"
#include "shim/core/refusals.h"

namespace hetopt::shim {

/// A block from a `register` site (and a pool site's block that came before its pool was ready)
/// is adopted here; the worker covers each with a CL_MEM_USE_HOST_PTR buffer in the pinning
/// context (policies: adoptHostMemory), in allocation order. That faults in and pins the pages off
/// the program's thread, usually long before the block's first transfer (an output block the
/// program never touched is pre-faulted by it too). free/realloc first release the buffer
/// (waiting for a registration in flight), so the driver never holds pages the program gave back.
///
/// Thread safety: ownership (every free()) is a lock-free BlockTable lookup; everything else takes
/// one mutex, never held across an OpenCL call. The table is fixed (kMaxBlocks): a block beyond it
/// stays ordinary memory, counted.
class BlockRegistration {
 public:
  static constexpr unsigned kMaxBlocks = 1024;
  static constexpr unsigned kNoSite = ~0u;  ///< a block adopted for no plan site in particular

  /// `plan` gives the register cost (Plan::registerNs); it must outlive this object.
  explicit BlockRegistration(const Plan& plan);
  /// Stops and joins the worker. The shim never destroys one (hooks may run until the process
  /// ends); tests do.
  ~BlockRegistration();
  BlockRegistration(const BlockRegistration&) = delete;
  BlockRegistration& operator=(const BlockRegistration&) = delete;

  /// Program thread: a block the system allocator just made (`bytes` asked, `usable` bytes
  /// there) for a site whose transfers may wait `waitNsPerMiB`; `site` (the plan site's index)
  /// comes back from transfer(). False when the table is full: the block stays ordinary memory.
  bool adopt(void* ptr, size_t bytes, size_t usable, uint64_t waitNsPerMiB,
             unsigned site = kNoSite);
  bool owns(const void* ptr) const { return m_blocks.owns(ptr); }
  size_t usableSize(const void* ptr) const { return m_blocks.usableSize(ptr); }
  /// What the block was adopted with (its wait; its site in *site), for a realloc that adopts
  /// its successor.
  uint64_t waitOf(const void* ptr, unsigned* site = nullptr);
  /// Before the program reallocates a block owns() says is here: releases the buffer over it
  /// (after a registration in flight finished) and forgets the block.
  void forget(void* ptr);
  /// The program frees a block owns() says is here: forgotten at once, and its buffer released
  /// and the block given back with `freeFn` on the worker, off the program's thread (an
  /// unregistration costs ~2 ms per 64 MiB on an H100); on the calling thread when there is no
  /// worker, in a forked child or once the process exits.
  void release(void* ptr, void (*freeFn)(void*));

  /// The pinning context exists: starts the worker thread, which registers adopted blocks until
  /// the process ends. `env` is copied; ranges above `maxBufferBytes` (the device's
  /// CL_DEVICE_MAX_MEM_ALLOC_SIZE; 0: unknown) are refused without asking the driver.
  void start(const PolicyEnv& env, uint64_t maxBufferBytes);

  /// The program makes its own CL_MEM_USE_HOST_PTR buffer over [host, host+bytes): a driver may
  /// refuse to register pages twice (CUDA does), so ours over any block it touches is released
  /// first and not made again (the program's buffer pins the memory anyway).
  void yieldTo(const void* host, size_t bytes);
  /// Program thread, a transfer of `bytes` from/to `host`: true (counted) when `host` lies in a
  /// registered block, after registering or waiting; false for memory that is not here or went
  /// ahead pageable (counted). *site (when given) is the block's site when the memory is here,
  /// pinned or not, else kNoSite. A transfer from a block not pinned yet (a read or write, or a
  /// buffer or image made from it with CL_MEM_COPY_HOST_PTR) never waits longer than the pageable
  /// transfer would take more than the pinned one (the plan's `wait`, measured in the trace): it
  /// registers the block itself when the plan's register cost says that is cheaper, waits for the
  /// worker within that budget, or goes ahead pageable.
  bool transfer(const void* host, uint64_t bytes, bool h2d, unsigned* site = nullptr);

  /// The fork protocol (shim/core/lifecycle.cpp): the mutex is held across fork(), so that the
  /// child's table and entries are whole. It is never held across an OpenCL call or a wait.
  void lockForFork() { m_mutex.lock(); }
  void unlockAfterFork() { m_mutex.unlock(); }
  /// In a forked child (the mutex released after): every block stays valid and freeable, but no
  /// buffer is made or released (the child's OpenCL state is the parent's).
  void forkChild() { m_child.store(true, std::memory_order_relaxed); }

  /// Blocks adopted so far (the conformance check counts them as redirected).
  uint64_t adopted() const { return m_adopted.load(std::memory_order_relaxed); }
  /// Transfers from registered blocks so far.
  uint64_t pinnedTransfers() const {
    return m_h2d.load(std::memory_order_relaxed) + m_d2h.load(std::memory_order_relaxed);
  }
  /// Lines for HETOPT_STATS (a heading, then one fact per indented line).
  std::string stats() const;
  /// The same counts as members of the JSON object `json` is in (HETOPT_STATS_JSON).
  void statsJson(JsonWriter& json) const;

 private:
  enum class State : uint8_t { Free, Queued, Registering, Registered, Failed, Releasing };
  struct Entry {
    uintptr_t start = 0;
    size_t bytes = 0;
    uint64_t waitNsPerMiB = 0;
    uint64_t order = 0;  ///< adoption order: the worker takes the oldest first
    unsigned site = kNoSite;
    State state = State::Free;
    Allocation registration;          ///< the USE_HOST_PTR buffer while Registered (and Releasing)
    void (*freeFn)(void*) = nullptr;  ///< Releasing: what gives the block back
  };

  void workerLoop();
  /// Releases entry `i` (Releasing) with `lock` held; unlocks around the OpenCL call and the free.
  void releaseEntry(unsigned i, std::unique_lock<std::mutex>& lock);
  /// At exit, before the driver's own exit handlers: no new registration, the one in flight
  /// finished, and no buffer released any more (the driver frees them with the process).
  void prepareForExit();
  /// Registers entry `i` (Queued) with `lock` held; unlocks around the OpenCL call.
  void registerEntry(unsigned i, std::unique_lock<std::mutex>& lock);
  bool oldestQueued(unsigned* index) const;

  const Plan& m_plan;
  policies::BlockTable<unsigned> m_blocks{kMaxBlocks};  ///< start -> index into m_entries
  PolicyEnv m_env;
  uint64_t m_maxBufferBytes = 0;
  std::unique_ptr<AllocationPolicy> m_register;  ///< release() of registrations
  std::atomic<bool> m_ready{false}, m_child{false}, m_exiting{false};
  std::atomic<unsigned> m_live{0};  ///< adopted blocks not forgotten: transfers skip the lock at 0

  std::thread m_worker;
  mutable std::mutex m_mutex;
  std::condition_variable m_changed;  ///< a block was queued, or a registration finished
  Entry m_entries[kMaxBlocks];
  unsigned m_queued = 0;
  unsigned m_releasing = 0;
  bool m_workerBusy = false;  ///< the worker is in the driver (or freeing) with the mutex dropped
  uint64_t m_nextOrder = 0;

  std::atomic<uint64_t> m_adopted{0}, m_tableFull{0}, m_registered{0}, m_registeredBytes{0};
  std::atomic<uint64_t> m_inline{0}, m_waited{0}, m_waitNs{0}, m_pageable{0};
  std::atomic<uint64_t> m_registerNs{0}, m_unregistered{0}, m_unregisterNs{0}, m_yielded{0};
  /// Frees handed to the worker, those it has done, and the time they took there.
  std::atomic<uint64_t> m_deferred{0}, m_deferredDone{0}, m_deferredNs{0};
  std::atomic<uint64_t> m_h2d{0}, m_h2dBytes{0}, m_d2h{0}, m_d2hBytes{0};
  Refusals m_refusals;  ///< its last reason under m_mutex
};

}  // namespace hetopt::shim
