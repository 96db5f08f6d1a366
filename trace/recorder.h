// SPDX-License-Identifier: MIT
/**
 * @file The recording side of a trace: the object model (host segments from allocation events,
 * untracked host memory, SVM allocations, OpenCL handles, SSA versions), one folding Compressor
 * per thread, and the writer. The shim's trace mode drives it; tests drive it with synthetic
 * streams. Every member function except elapsedNs(), sinceStart() and stamp() requires the caller
 * to hold lock(); in trace mode one thread at a time records (the recording thread, or a program
 * thread helping it drain a full record stream: shim/core/record_stream.h), so the lock is rarely
 * contended and the program's threads never wait for it per call.
 */
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace/compressor.h"
#include "trace/objects.h"
#include "trace/trace_clock.h"
#include "trace/writer.h"

namespace hetopt::trace {

/// Where a code address lies, as the process's module map knows it.
struct ModuleRecord {
  uint64_t start = 0, end = 0, bias = 0;
  std::string path;
  std::string buildId;  ///< hex
};
/// Looks up the module holding `address`; false when none.
using ModuleLookup = bool (*)(uint64_t address, ModuleRecord* out);

struct RecorderConfig {
  std::string path;
  FileHeader header;
  unsigned maxBody = 32;          ///< longest loop body folded (top-level nodes)
  unsigned stampsPerLeaf = 32;    ///< calls whose times each leaf keeps (HETOPT_TIMELINE_CALLS)
  size_t chunkBytes = 64 * 1024;  ///< uncompressed bytes per Records chunk
  uint64_t checkpointNs = 1000000000;  ///< tail snapshot at least this often while events arrive
  ModuleLookup modules = nullptr;      ///< null: no module records (tests)
  /// An address inside the program's executable: its module is recorded at open(), so the trace
  /// names the program's build id even when no site lies in it. 0: none.
  uint64_t programAddress = 0;
  bool classifyRegions = true;  ///< read /proc/self/maps for untracked memory
  /// Called once (recorder lock held) when the file cannot take more (full disk, file size
  /// limit): the trace ends with what was written, marked incomplete; recording goes on unsaved.
  void (*writeFailed)(const std::string& path, const std::string& error) = nullptr;
};

/// A host pointer resolved to an object and an offset inside it.
struct HostTarget {
  ObjectId obj = kNoObject;
  uint64_t offset = 0;
};

class Recorder {
 public:
  Recorder() = default;
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(m_mutex); }
  std::mutex& mutex() { return m_mutex; }

  /// Creates the file and writes the header. False with *error when it cannot.
  bool open(const RecorderConfig& config, std::string* error);
  bool isOpen() const { return m_writer.isOpen(); }

  /// Index of the thread with system id `tid`, registering it (Thread record) on first use.
  uint32_t thread(uint64_t tid);

  ObjectTable& objects() { return m_objects; }

  // ---- OpenCL handles ----
  /// A handle returned as a new object (return:new, out_handles of creation calls): always a new
  /// object, replacing whatever the handle value meant before (the driver may reuse addresses).
  ObjectId createHandle(ObjectKind kind, uint64_t handle);
  /// The object a handle names; a handle seen for the first time (platforms, devices, objects
  /// created before tracing) becomes a new object and *created is set.
  ObjectId handle(ObjectKind kind, uint64_t handle, bool* created = nullptr);
  /// The object of a handle if known (no creation), else kNoObject.
  ObjectId findHandle(uint64_t handle) const;

  // ---- host memory ----
  /// Resolves [ptr, ptr+len) to a live tracked segment, an SVM allocation or an untracked region
  /// (created or widened here). ptr == 0 gives kNoObject.
  HostTarget resolveHost(uint64_t ptr, uint64_t len);
  /// Interns an allocation site (return addresses, innermost first); returns id + 1.
  uint32_t internSite(const uint64_t* pcs, unsigned depth);
  /// Records an allocation of a tracked block: a new Segment object created by an Alloc leaf.
  /// `atNs`: when it happened (monotonicNs()), 0: now.
  ObjectId recordAlloc(uint32_t thread, uint8_t allocFn, uint64_t ptr, uint64_t size,
                       uint64_t alignment, uint32_t site, uint64_t hostNs, uint64_t atNs = 0);
  /// Records the free of a tracked block; false (nothing recorded) when `ptr` is not one.
  bool recordFree(uint32_t thread, uint64_t ptr, uint64_t atNs = 0);
  /// realloc(oldPtr, size) -> newPtr. `site` is 0 when the new block is too small to track: then
  /// only the old block's end is recorded (if it was tracked).
  void recordRealloc(uint32_t thread, uint64_t oldPtr, uint64_t newPtr, uint64_t size,
                     uint32_t site, uint64_t hostNs, uint64_t atNs = 0);
  /// The stack [lo, hi) of the thread whose call is being recorded, for classifying untracked
  /// memory on it; hi = 0: the recording thread's own (the events are recorded where they
  /// happen).
  void setCallerStack(uint64_t lo, uint64_t hi) {
    m_callerStackLo = lo;
    m_callerStackHi = hi;
  }
  /// An SVM/USM allocation made through OpenCL (kind Svm), or its release.
  ObjectId addSvm(uint64_t ptr, uint64_t size);
  ObjectId removeSvm(uint64_t ptr);

  // ---- events ----
  /// Appends a leaf to `thread`'s stream. With `wantSlot`, returns a slot for its device timing.
  uint32_t append(uint32_t thread, Leaf&& leaf, bool wantSlot = false);
  /// An empty leaf of `thread`'s (index from thread()) to build an event in and append(): it
  /// comes back from append() with a recycled node's memory, so recording allocates nothing. It
  /// lives as long as the recorder (not in thread-local storage, whose destructors run before
  /// the exit-time calls some programs make). Recorder lock held.
  Leaf& scratchLeaf(uint32_t thread) {
    Leaf& l = m_threads[thread]->scratch;
    l.reset();
    return l;
  }
  void deliver(uint32_t thread, uint32_t slot, const DeviceAgg* timing, uint64_t deviceStart = 0,
               uint64_t deviceEnd = 0);
  /// Gives `leaf` (one call) its times for the timeline: it began at `monoStartNs`
  /// (monotonicNs()) and took `hostNs`. No lock needed.
  void stamp(Leaf& leaf, uint64_t monoStartNs, uint64_t hostNs) const {
    const uint64_t start = sinceStart(monoStartNs);
    leaf.stamps.push_back(Stamp{start, hostNs, 0, 0, 0});
    leaf.endNs = start + hostNs;
  }
  /// How the device clock of the queue with handle `queue` maps to the trace's: trace ns = device
  /// ns + offset (a Clock record, written at the next checkpoint).
  void noteClock(uint64_t queue, ClockMethod method, int64_t offsetNs, uint64_t uncertaintyNs);
  /// The thread ended: everything it recorded becomes final.
  void threadExit(uint32_t thread);
  /// Writes what is final and the tail now (a checkpoint): the file reads as an incomplete trace
  /// up to this point. Allocates only through the usual allocator (the shim's signal reserve).
  void snapshot() { checkpoint(true); }
  /// The checkpoint before exec replaces the process image with `program`: its tail ends with an
  /// Exec record, so a trace that ends there says so (after an exec that failed, the next
  /// checkpoint's tail supersedes it).
  void snapshotBeforeExec(const std::string& program) { checkpoint(true, &program); }
  /// Writes everything and the End record, then closes the file.
  void finish();
  /// What recording cost the program's threads, timed on `sampledCalls` of its calls (the shim
  /// times about one call in 64): written in the RecordingCost record at finish().
  void noteRecordingCost(uint64_t sampledCalls, uint64_t sampledNs) {
    m_costCalls = sampledCalls;
    m_costNs = sampledNs;
  }
  /// When (ns since tracing started) the program made its first OpenCL call and began its first
  /// context creation (0: never): written in the Startup record at finish().
  void noteStartup(uint64_t firstCallNs, uint64_t firstContextNs) {
    m_firstCallNs = firstCallNs;
    m_firstContextNs = firstContextNs;
  }
  /// In a forked child: drops the parent's file, windows and pending timings (they are the
  /// parent's), keeps the object model, and starts `config.path`.
  bool restartInChild(const RecorderConfig& config, std::string* error);

  uint64_t eventsRecorded() const { return m_events; }
  /// Nanoseconds since tracing started (the clock of Time, End and Startup records). No lock.
  uint64_t elapsedNs() const;
  /// `monoNs` (monotonicNs()) as ns since tracing started. No lock.
  uint64_t sinceStart(uint64_t monoNs) const {
    return monoNs > m_startMono ? monoNs - m_startMono : 0;
  }
  /// Changes when a forked child restarts: thread indices cached by callers become stale.
  uint32_t generation() const { return m_generation; }

  /// Checks the object model (lock held): every live segment, SVM allocation and untracked region
  /// names an object of its kind that starts where the map says; every handle names an object;
  /// every reference in the threads' windows names an object at a version it has reached (SSA:
  /// vFirst <= vLast <= the object's current version). False with the first violation in `why`.
  /// At HETOPT_DEBUG_LEVEL 3 after every event appended.
  bool validate(char* why = nullptr, size_t whyBytes = 0) const;

 private:
  struct ThreadState {
    uint64_t tid = 0;
    Compressor compressor;
    Leaf scratch;  ///< scratchLeaf(): recycled through Compressor::append
    ThreadState(ObjectTable* objects, unsigned maxBody, unsigned stamps)
        : compressor(objects, maxBody, stamps) {}
  };
  struct Range {
    uint64_t end;
    ObjectId obj;
  };

  /// A new host segment object for the block at [ptr, ptr+size), replacing a live one at that
  /// address whose free we missed (e.g. freed by a driver thread).
  ObjectId createSegment(uint64_t ptr, uint64_t size, uint32_t site, uint8_t allocFn);
  void afterAppend(uint32_t thread);
  void checkpoint(bool withTail, const std::string* execProgram = nullptr);
  void writeFinal(uint32_t thread, bool all);
  void emitModuleFor(uint64_t address, uint32_t* moduleId);
  void writeModule(uint32_t id);
  void writeSite(uint32_t id, const std::vector<uint64_t>& pcs);
  void emitObject(std::string* out, ObjectId id, bool persistent, int depth = 0);
  void emitObjectsOf(std::string* out, const Compressor& c, NodeId id, bool persistent);
  void writeNode(std::string* out, const Compressor& c, NodeId id);
  void writeEntries(std::string* out, uint32_t thread, const Compressor& c,
                    const std::vector<NodeId>& roots, bool persistent);
  void writeClocks();
  void classify(uint64_t address, ObjectInfo* info);
  bool validateNode(const Compressor& c, NodeId id, char* why, size_t whyBytes) const;

  std::mutex m_mutex;
  RecorderConfig m_config;
  TraceFileWriter m_writer;
  ObjectTable m_objects;
  std::vector<ThreadState*> m_threads;  ///< leaked with the recorder (threads may outlive it)
  std::unordered_map<uint64_t, uint32_t> m_threadByTid;
  std::unordered_map<uint64_t, ObjectId> m_handles;
  std::map<uint64_t, Range> m_segments;   ///< live tracked blocks by start
  std::map<uint64_t, Range> m_svm;        ///< live SVM allocations by start
  std::map<uint64_t, Range> m_untracked;  ///< untracked regions by start
  std::map<std::vector<uint64_t>, uint32_t> m_sites;
  std::map<std::pair<uint64_t, std::string>, uint32_t> m_modules;  ///< (start, path) -> id + 1
  std::vector<ModuleRecord> m_moduleRecords;                       ///< by id - 1
  std::string m_records;  ///< final records not written yet
  uint64_t m_startMono = 0;
  uint64_t m_callerStackLo = 0, m_callerStackHi = 0;  ///< setCallerStack()
  uint64_t m_lastCheckpoint = 0;
  uint64_t m_events = 0;
  uint64_t m_costCalls = 0, m_costNs = 0;
  uint64_t m_firstCallNs = 0, m_firstContextNs = 0;
  struct Clock {
    ClockMethod method;
    int64_t offsetNs;
    uint64_t uncertaintyNs;
    bool written;
  };
  std::map<ObjectId, Clock> m_clocks;  ///< by queue object
  bool m_clocksChanged = false;
  bool m_finished = false;
  uint32_t m_generation = 1;
};

/// CLOCK_MONOTONIC in ns: the trace's clock (through the TSC where it may: trace_clock.h).
inline uint64_t monotonicNs() { return TscClock::nowNs(); }
/// Nanoseconds from `startNs` (monotonicNs()) to now; 0 where a reading on another CPU, or across
/// a new TSC scale, came out a little earlier.
inline uint64_t nsSince(uint64_t startNs) {
  const uint64_t now = monotonicNs();
  return now > startNs ? now - startNs : 0;
}

}  // namespace hetopt::trace
