// SPDX-License-Identifier: MIT
/**
 * @file Reading trace files: the one reader every tool uses (`hetopt show`, the `hetopt trace`
 * summary, the analyzer, tests); the format is specified in trace/FORMAT.md. Counts, bytes and
 * times in leaves are exact totals over every call the leaf stands for: they never need
 * multiplying by loop counts.
 */
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trace/compressor.h"
#include "trace/format.h"
#include "trace/objects.h"
#include "trace/writer.h"

namespace hetopt::trace {

/// The format version this reader reads (trace/FORMAT_VERSION).
uint32_t supportedFormatVersion();
/// The oldest format version it still reads (older ones differ only in fields it defaults).
uint32_t oldestFormatVersion();

struct TraceModule {
  uint64_t start = 0, end = 0, bias = 0;
  std::string path;
  std::string buildId;
};

struct TraceFrame {
  uint64_t pc = 0;
  int32_t module = -1;  ///< index into Trace::modules, -1 when unknown
  uint64_t offset = 0;  ///< pc - bias of its module (the pc when no module)
};

struct TraceSite {
  std::vector<TraceFrame> frames;  ///< innermost first
};

struct TraceObject {
  ObjectId id = kNoObject;
  ObjectKind kind = ObjectKind::Segment;
  ObjectInfo info;  ///< info.site: site index + 1; info.module: module index + 1
};

struct TraceNode {
  bool loop = false;
  uint32_t thread = 0;
  bool provisional = false;  ///< from the last checkpoint of an unfinished trace
  // leaves
  LeafType type = LeafType::Call;
  uint16_t code = 0;  ///< api::ApiId for calls; AllocFn (contracts/alloc_fn.h) for allocations
  uint32_t site = 0;  ///< site index + 1 (0: none)
  Agg host;           ///< host time per call (ns); host.count = number of calls
  /// Device times of sampled traces (format 2) are estimates: use DeviceAgg::execNs() and friends,
  /// never exec.total, for a leaf's device time. A leaf whose commands were all sampled out gets
  /// the means of the timed leaves of the same call on the same OpenCL objects (DeviceAgg::lent).
  DeviceAgg device;
  std::vector<ArgAgg> args;  ///< in the API table's parameter order (alloc: size, alignment)
  ArgAgg result;
  /// Which objects the calls touched and how (kRefRead/Write/Create/Destroy, SSA versions of the
  /// first and last call), and for host memory which range and how many bytes moved in which
  /// direction (HostAccess). To attribute a transfer to an allocation site: take a ref with
  /// kRefHost and access Read/Write, look up its object; a Segment's info.site (id + 1) names
  /// sites[site - 1]; siteKey-style identity is (module build id or path, pc - bias) of each frame.
  std::vector<Ref> refs;  ///< Ref::obj are object ids of Trace::objects
  /// The first calls' times (format 6): host start and duration in ns since tracing started, the
  /// device command's start and end on its device's clock (deviceEnd 0: not timed; map it with
  /// Trace::clocks of the call's queue). A prefix of the calls: the rest are in the aggregates.
  std::vector<Stamp> stamps;
  uint64_t endNs = 0;  ///< when the leaf's last call ended (format 6; 0: unknown)
  // loops
  uint64_t iterations = 0;
  uint64_t instances = 0;
  std::vector<uint32_t> body;  ///< indices into Trace::nodes
};

struct TraceThread {
  uint32_t index = 0;
  uint64_t tid = 0;
  std::vector<uint32_t> entries;  ///< top-level nodes, in order
};

/// Fewest timed calls from which the recording cost of every call is estimated.
inline constexpr uint64_t kRecordingCostMinSample = 8;

/// How a queue's device clock maps to the trace's (format 6): trace ns = device ns + offsetNs,
/// give or take uncertaintyNs.
struct TraceClock {
  ClockMethod method = ClockMethod::Estimated;
  int64_t offsetNs = 0;
  uint64_t uncertaintyNs = 0;
};

/// A whole trace:
///  - header facts (pid, program, start time, writer version) and whether the trace is complete
///    (the program exited normally) or a prefix (killed / crashed: the last checkpoint's state);
///  - modules (path, build id, load range, bias) and allocation sites (raw return addresses, each
///    with the module it lies in), for symbolization;
///  - objects by id: host segments (address, size, allocation site, allocator), untracked host
///    memory (range, where it lies: static/stack/heap/mmap/file, mapping), SVM allocations and
///    OpenCL objects (kernel names and device names as labels);
///  - per thread, the compressed call tree: a sequence of nodes, each a leaf (one OpenCL call,
///    allocation, free or realloc, standing for host.count calls) or a loop (a body of nodes
///    repeated; `iterations` summed over `instances` runs).
struct Trace {
  uint32_t formatVersion = 0;
  std::string writerVersion;
  FileHeader header;
  bool complete = false;  ///< the End record was found: the program exited normally
  /// Without an End record, the process exec'd another program (format 7): the trace holds all
  /// it did until then, and the same pid went on as that program (`hetopt trace`: FILE.<pid>).
  bool endedByExec = false;
  uint64_t execNs = 0;      ///< when, in ns since tracing started
  std::string execProgram;  ///< what it exec'd, as it named it (a path, or a name PATH finds)
  uint64_t durationNs = 0;  ///< traced wall time (to the last checkpoint when incomplete)
  uint64_t fileBytes = 0;
  /// What recording cost the program's threads (format 3, complete traces): the time the shim
  /// spent recording after `recordingSampledCalls` of the calls, about one in 64 (every call with
  /// HETOPT_DEBUG=1). Per call: recordingSampledNs / recordingSampledCalls.
  uint64_t recordingSampledCalls = 0, recordingSampledNs = 0;
  /// When the program made its first OpenCL call and began its first context creation, in ns
  /// since tracing started (format 4, complete traces; 0: unknown, or no context made).
  uint64_t firstCallNs = 0, firstContextNs = 0;
  std::vector<TraceModule> modules;
  std::vector<TraceSite> sites;
  std::map<ObjectId, TraceObject> objects;
  std::vector<TraceNode> nodes;
  std::vector<TraceThread> threads;
  std::map<ObjectId, TraceClock> clocks;  ///< by queue object (format 6)

  const TraceObject* object(ObjectId id) const {
    auto it = objects.find(id);
    return it == objects.end() ? nullptr : &it->second;
  }
  /// "clEnqueueWriteBuffer", "malloc", "free", "realloc", ...
  std::string leafName(const TraceNode& n) const;
};

struct ReadOptions {
  /// Keep what was read before a torn or corrupt chunk instead of failing (the trace is then
  /// marked incomplete, and *error says what was cut off). Default: reject the file, the error
  /// ending with "--salvage reads what precedes it". Salvaging fails too when no call or
  /// allocation precedes the damage: every command that salvages reads the same content.
  bool salvage = false;
};

/// Never crash on bad input: they fail with one clear message in *error (bad magic, unsupported
/// version naming both versions, truncated or corrupt chunk with its offset).
bool parseTrace(const void* data, size_t size, Trace* out, std::string* error,
                const ReadOptions& options = {});
bool readTraceFile(const std::string& path, Trace* out, std::string* error,
                   const ReadOptions& options = {});

/// Totals over a whole trace (every leaf once; counts are exact).
struct TraceSummary {
  uint64_t calls = 0;  ///< OpenCL calls
  std::map<std::string, uint64_t> callsByFunction;
  uint64_t allocations = 0, frees = 0, reallocs = 0;
  /// Host<->device transfers (isTransfer: a host range read or written, not in SVM memory), one
  /// per range per call, and their bytes (0 for a call that failed). Optimize mode's `--stats`
  /// and run records count the same for the same run.
  uint64_t h2dBytes = 0, d2hBytes = 0;
  uint64_t h2dTransfers = 0, d2hTransfers = 0;
  uint64_t mappedBytes = 0, wrappedBytes = 0;  ///< mapped ranges; USE_HOST_PTR memory
  // Device times are estimates for every command when the trace was sampled (DeviceAgg::execNs).
  uint64_t kernels = 0, kernelNs = 0;  ///< device time of kernel launches
  uint64_t transferNs = 0;     ///< device time of transfers (read/write/map/unmap/svm copy/migrate)
  uint64_t otherDeviceNs = 0;  ///< device time of other commands (fill, copy, markers)
  uint64_t launchLatencyNs = 0;    ///< queued -> start summed over commands with timings
  uint64_t hostCallNs = 0;         ///< host time spent inside OpenCL calls
  uint64_t deviceMissing = 0;      ///< commands without profiling information
  uint64_t deviceTimed = 0;        ///< commands whose timestamps were read
  uint64_t deviceUnsampled = 0;    ///< commands not timed on purpose (sampling); estimated
  uint64_t deviceUnestimated = 0;  ///< ... of which without an estimate (DeviceAgg::commands())
  struct ObjectBytes {
    uint64_t h2dBytes = 0, d2hBytes = 0, h2dTransfers = 0, d2hTransfers = 0;
  };
  std::map<ObjectId, ObjectBytes> byObject;  ///< host objects that crossed, by object id
  /// hetopt's own recording after every call: the trace's timed sample (Trace::recordingSampled*)
  /// extrapolated to every call, from kRecordingCostMinSample timed calls up; else 0.
  double recordingNs = 0;
};
TraceSummary summarize(const Trace& trace);

}  // namespace hetopt::trace
