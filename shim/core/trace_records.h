// SPDX-License-Identifier: MIT
/**
 * @file Trace mode's raw records: what a program thread copies of each call, allocation and free
 * (and of each device timing read and clock learnt) into the record stream (record_stream.h), and
 * how the recording thread applies them to the recorder in the same order. A call's record holds
 * what the call model (trace/call_model.h) will read, as it was when the call returned, so the
 * model reads on the recording thread the same values it would have read on the program's.
 */
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "trace/call_model.h"
#include "trace/record_ring.h"
#include "trace/recorder.h"

namespace hetopt::shim {

/// Names of platform and device handles, read where the handle first appears: asked of the
/// driver on the program's thread the first time a handle appears, into a small append-only table
/// the recording thread reads without a lock. No OpenCL call on the recording thread (a sub-device
/// may be released by then).
class LabelCache {
 public:
  LabelCache();
  /// Whether calls of `id` name platforms or devices (no lock, a table lookup).
  bool names(api::ApiId id) const { return m_names[static_cast<size_t>(id)]; }
  /// Program thread: asks `query` (the driver) for the names of the platform and device handles
  /// `call` names that the table does not hold yet.
  void note(const trace::CallView& call, const trace::CallOutcome& outcome,
            bool (*query)(trace::ObjectKind, uint64_t, char*, size_t));
  /// Any thread, no lock: the name of `handle`; false when none is known.
  bool find(uint64_t handle, char* out, size_t size) const;
  std::mutex& mutex() { return m_mutex; }  ///< inserts (the fork protocol holds it)

 private:
  void add(trace::ObjectKind kind, uint64_t handle,
           bool (*query)(trace::ObjectKind, uint64_t, char*, size_t));
  static constexpr size_t kEntries = 64;  ///< handles named; later ones go without a label
  struct Entry {
    uint64_t handle;
    char label[256];
  };
  bool m_names[api::kApiCount] = {};
  std::mutex m_mutex;
  std::atomic<size_t> m_count{0};
  Entry m_entries[kEntries] = {};
};

/// The records, built on the program's threads. Each returns the record's length in `out`
/// (kMaxRecordBytes at least), or writes the length its own size function gave: the calls,
/// allocations and frees are written straight into their place in the stream.
namespace raw {
inline constexpr size_t kMaxRecordBytes = trace::RecordRing::kMaxRecord;
inline constexpr size_t kMaxArgs = 16;  ///< arguments a call's record holds
/// A thread's first record: its stack, for classifying host memory on it.
size_t thread(unsigned char* out, uint32_t tid, uint64_t stackLo, uint64_t stackHi);
size_t threadExit(unsigned char* out, uint32_t tid);

/// What a call's record copies besides its arguments, gathered before the record's place is
/// claimed (what may ask the shim or the driver is done by then; writing it is copying only): the
/// host memory each pointer argument moves (the driver may be asked for an image's element size)
/// and what other pointer arguments point at and the model reads (handle arrays and the counts the
/// driver filled in, a kernel argument's value, a kernel's name). The recording thread points
/// those arguments at the copies.
struct CallCopies {
  struct Extra {
    const void* data;
    uint16_t bytes;
    uint8_t arg;
  };
  /// Gathers them for `call` as it ended; returns the record's length.
  size_t gather(const trace::CallView& call, const trace::CallOutcome& outcome,
                bool (*hostSpan)(const trace::CallView&, unsigned, trace::HostSpan*));

  unsigned numArgs, numSpans, numExtras;
  trace::HostSpan spans[kMaxArgs];  ///< the host memory pointer arguments move
  uint8_t spanArgs[kMaxArgs];
  Extra extras[2 * kMaxArgs + 1];  ///< what other pointer arguments point at
  uint32_t filled;                 ///< an output count, as the driver filled it in
  char kernelName[256];
};
/// `call` as it ended (event argument as the program passed it), begun at monotonicNs()
/// `startNs`; `timingId`: the id its device timing will come back with (0: none). Writes the
/// length `copies.gather()` returned.
void call(unsigned char* out, const CallCopies& copies, uint32_t tid, const trace::CallView& call,
          const trace::CallOutcome& outcome, uint64_t startNs, uint64_t hostNs, bool unsampled,
          uint64_t timingId);
/// A tracked allocation (site: return addresses, `depth` of them), or a realloc (`oldPtr`).
constexpr size_t allocBytes(unsigned depth) { return 48 + 8 * depth; }
size_t alloc(unsigned char* out, uint32_t tid, uint64_t atNs, uint8_t fn, uint64_t ptr,
             uint64_t size, uint64_t alignment, uint64_t oldPtr, const uint64_t* pcs,
             unsigned depth);
constexpr size_t kFreeBytes = 24;
size_t free(unsigned char* out, uint32_t tid, uint64_t atNs, uint64_t ptr);
/// A device timing read for `timingId` (timing null: missing), and a queue's clock.
size_t timing(unsigned char* out, uint64_t timingId, const trace::DeviceAgg* timing,
              uint64_t deviceStart, uint64_t deviceEnd);
size_t clock(unsigned char* out, uint64_t queue, trace::ClockMethod method, int64_t offsetNs,
             uint64_t uncertaintyNs);
}  // namespace raw

/// The recording side: applies records to the recorder, in stream order (its lock held).
class RecordApplier {
 public:
  RecordApplier(trace::Recorder& recorder, const LabelCache& labels);
  void apply(const unsigned char* record, size_t bytes);
  /// At exit: commands whose timing never came back count as missing.
  void abandonTimings();
  /// In a forked child: the parent's threads and pending timings are the parent's.
  void forkChild();

 private:
  struct ThreadInfo {
    uint32_t index;
    uint64_t stackLo, stackHi;
  };
  ThreadInfo& threadOf(uint32_t tid);
  void applyCall(const unsigned char* record, uint32_t tid, uint64_t startNs);

  trace::Recorder& m_recorder;
  trace::CallModel m_model;
  std::unordered_map<uint32_t, ThreadInfo> m_threads;  ///< by system thread id
  struct Slot {
    uint32_t thread, slot;
  };
  std::unordered_map<uint64_t, Slot> m_timed;  ///< timing id -> the leaf's slot
};

}  // namespace hetopt::shim
