// SPDX-License-Identifier: MIT
/**
 * @file Online loop folding of one thread's event stream (the "compressed trace"): repetitions at
 * the end of a short window of nodes fold into loops as events arrive, so the window, not the
 * trace, is what stays in memory, and a loop is one node whatever its trip count. Also the
 * aggregates a leaf keeps over every call it stands for (Agg, ArgAgg, DeviceAgg, Stamp).
 */
#pragma once
#include <cstdint>
#include <vector>

#include "common/compiler.h"
#include "trace/format.h"
#include "trace/objects.h"

namespace hetopt::trace {

/// count/total/min/max of a series of values.
struct Agg {
  uint64_t count = 0, total = 0, min = 0, max = 0;
  void add(uint64_t v) {
    if (count == 0 || v < min) min = v;
    if (count == 0 || v > max) max = v;
    ++count;
    total += v;
  }
  void merge(const Agg& o) {
    if (o.count == 0) return;
    if (count == 0 || o.min < min) min = o.min;
    if (count == 0 || o.max > max) max = o.max;
    count += o.count;
    total += o.total;
  }
};

/// One argument (or the return value) over every call a leaf stands for.
struct ArgAgg {
  uint64_t first = 0, min = 0, max = 0;
  bool varies = false;
  static ArgAgg of(uint64_t v) { return ArgAgg{v, v, v, false}; }
  void merge(const ArgAgg& o) {
    varies = varies || o.varies || o.first != first;
    if (o.min < min) min = o.min;
    if (o.max > max) max = o.max;
  }
};

/// Device-side timing from OpenCL profiling (nanoseconds of the device clock). With sampling
/// (trace/time_sampler.h) only some commands are timed: exec and the two sums cover the timed
/// ones, `unsampled` counts the others, and the *Ns() estimates extrapolate to every command.
struct DeviceAgg {
  Agg exec;                     ///< end - start of each timed command
  uint64_t queuedToSubmit = 0;  ///< sum of submit - queued over timed commands
  uint64_t submitToStart = 0;   ///< sum of start - submit over timed commands
  uint64_t missing = 0;         ///< commands whose profiling info could not be read
  uint64_t unsampled = 0;       ///< commands not timed on purpose (sampling)
  /// Sampling weights (1 / the probability a command was timed: 1 in a key's census, the period
  /// after it) summed over the timed commands, and the three times weighted by them. The first
  /// commands of a loop are often slower (first touch, caches); weighting keeps the always-timed
  /// census from counting for more than its share in the estimates (a Hajek estimator).
  uint64_t weight = 0, weightedExec = 0, weightedQueuedToSubmit = 0, weightedSubmitToStart = 0;
  /// Reader only, never in a file: for a leaf none of whose commands was timed, per-command means
  /// lent by the timed leaves of the same call on the same OpenCL objects (trace/reader.cpp), so
  /// that a short later loop over sampled-out calls still gets an estimate.
  bool lent = false;
  double lentExecMean = 0, lentQueuedToSubmitMean = 0, lentSubmitToStartMean = 0;
  void merge(const DeviceAgg& o) {
    exec.merge(o.exec);
    queuedToSubmit += o.queuedToSubmit;
    submitToStart += o.submitToStart;
    missing += o.missing;
    unsampled += o.unsampled;
    weight += o.weight;
    weightedExec += o.weightedExec;
    weightedQueuedToSubmit += o.weightedQueuedToSubmit;
    weightedSubmitToStart += o.weightedSubmitToStart;
  }
  /// One timed command (end - start, submit - queued, start - submit) of sampling weight `w`.
  static DeviceAgg command(uint64_t exec, uint64_t queuedToSubmit, uint64_t submitToStart,
                           uint64_t w) {
    DeviceAgg d;
    d.exec.add(exec);
    d.queuedToSubmit = queuedToSubmit;
    d.submitToStart = submitToStart;
    d.weight = w;
    d.weightedExec = w * exec;
    d.weightedQueuedToSubmit = w * queuedToSubmit;
    d.weightedSubmitToStart = w * submitToStart;
    return d;
  }
  /// Commands the estimates stand for: the timed ones and those sampling skipped.
  uint64_t commands() const { return exec.count ? exec.count + unsampled : lent ? unsampled : 0; }
  bool sampled() const { return unsampled != 0; }
  /// A sum over timed commands scaled to every command: the (weighted) mean of the timed ones x
  /// commands(); exact when nothing was sampled out. `lentMean` serves a leaf without timed
  /// commands.
  double extrapolate(uint64_t timedSum, uint64_t weightedSum, double lentMean) const {
    if (!exec.count) return lent ? lentMean * static_cast<double>(unsampled) : 0;
    if (!unsampled) return static_cast<double>(timedSum);
    const double all = static_cast<double>(exec.count + unsampled);
    if (weight) return static_cast<double>(weightedSum) / static_cast<double>(weight) * all;
    return static_cast<double>(timedSum) / static_cast<double>(exec.count) * all;
  }
  /// The per-command mean of the timed commands (weighted when sampled).
  double meanExecNs() const {
    if (weight && unsampled) return static_cast<double>(weightedExec) / static_cast<double>(weight);
    return exec.count ? static_cast<double>(exec.total) / static_cast<double>(exec.count)
                      : lentExecMean;
  }
  double execNs() const { return extrapolate(exec.total, weightedExec, lentExecMean); }
  double submitToStartNs() const {
    return extrapolate(submitToStart, weightedSubmitToStart, lentSubmitToStartMean);
  }
  double queuedToStartNs() const {
    return extrapolate(queuedToSubmit + submitToStart,
                       weightedQueuedToSubmit + weightedSubmitToStart,
                       lentQueuedToSubmitMean + lentSubmitToStartMean);
  }
};

struct Ref {
  ObjectId obj = kNoObject;
  uint8_t arg = 0;    ///< argument index, kRefArgReturn or kRefArgBound
  uint8_t flags = 0;  ///< RefFlag bits
  HostAccess access = HostAccess::None;
  uint32_t vFirst = 0, vLast = 0;   ///< version used/defined by the first and the last call
  uint64_t offMin = 0, endMax = 0;  ///< host refs: range touched, relative to the object start
  uint64_t bytes = 0;               ///< host refs: bytes moved, summed over calls
};

/// The wall-clock times of one call that a leaf keeps for the timeline (format 6): each leaf keeps
/// its first calls' (RecorderConfig::stampsPerLeaf: a thread's first calls and a loop's first
/// iterations). A device command timed by profiling adds its start and end on the device's clock
/// (deviceEnd 0: none); a Clock record maps that clock to the trace's.
struct Stamp {
  uint64_t startNs = 0;  ///< host: when the call began, ns since tracing started
  uint64_t hostNs = 0;   ///< host: how long it took
  uint64_t deviceStart = 0, deviceEnd = 0;
  uint32_t slot = 0;  ///< in memory only: the timing slot whose delivery fills the device times
};

struct Leaf {
  LeafType type = LeafType::Call;
  uint16_t code = 0;
  uint32_t site = 0;  ///< allocation site id + 1 (0: none)
  uint32_t thread = 0;
  Agg host;  ///< host time of each call in ns; host.count is the number of calls
  DeviceAgg device;
  std::vector<ArgAgg> args;
  ArgAgg result;
  std::vector<Ref> refs;
  std::vector<Stamp> stamps;  ///< the first calls' times, in call order (a prefix of the calls)
  uint64_t endNs = 0;         ///< when the last call ended, ns since tracing started (format 6)
  /// This (empty) leaf becomes `from`, and `from` gets this one's empty vectors with their
  /// memory: cheaper than std::swap, which moves every field three times.
  void take(Leaf& from) {
    args.swap(from.args);
    refs.swap(from.refs);
    stamps.swap(from.stamps);
    endNs = from.endNs;
    type = from.type;
    code = from.code;
    site = from.site;
    thread = from.thread;
    host = from.host;
    device = from.device;
    result = from.result;
  }
  /// Empty again, keeping the vectors' memory: a recycled leaf costs no allocation.
  void reset() {
    args.clear();
    refs.clear();
    stamps.clear();
    endNs = 0;
    type = LeafType::Call;
    code = 0;
    site = thread = 0;
    host = Agg{};
    device = DeviceAgg{};
    result = ArgAgg{};
  }
};

using NodeId = uint32_t;
inline constexpr NodeId kNoNode = 0;

struct Node {
  bool loop = false;
  bool live = false;     ///< allocated in the arena
  uint32_t pending = 0;  ///< timing slots that point at this leaf
  uint64_t hash = 0;
  Leaf leaf;                 ///< leaves
  uint64_t iterations = 0;   ///< loops: iterations summed over every time the loop ran
  uint64_t instances = 0;    ///< loops: how many times it ran
  std::vector<NodeId> body;  ///< loops
  /// Empty again, keeping the vectors' memory (the compressor recycles nodes).
  void reset() {
    loop = live = false;
    pending = 0;
    hash = iterations = instances = 0;
    leaf.reset();
    body.clear();
  }
};

/// Events arrive as leaves. The compressor keeps a short window of top-level nodes (leaves and
/// loops) and, after each append, folds repetitions at the end of the window:
///  1. the last k nodes equal the body of the loop right before them: that loop gets one more
///     iteration (the k nodes are merged into its body);
///  2. the last k nodes equal the k nodes before them: both become one loop of 2 iterations.
/// Both repeat until nothing folds, so nested loops emerge inner first (Ketterlin & Clauss's
/// nested-loop recognition, restricted to exact repetition of structure, which is what OpenCL host
/// code produces). k is bounded (maxBody), so a step costs O(maxBody) hash compares plus one
/// structural compare per candidate. Nodes that fall more than 2*maxBody+1 places behind the end
/// can no longer fold and leave the window.
///
/// Equality ("same function, same objects"): leaves match when type, function/allocator, site and
/// the list of references (argument, flags, host access, object) match; scalars, offsets, sizes,
/// versions and timings do not take part, they are aggregated (first/min/max, sums). Objects are
/// compared up to renaming of objects created inside the compared sequences (a loop that allocates
/// and frees a temporary each iteration folds; a loop that alternates between two pre-existing
/// buffers does not fold into one). Loops match when their bodies do; their trip counts add up,
/// and a lone call matches a loop of that one call (an inner loop that ran once).
class Compressor {
 public:
  /// Top-level nodes kept in memory behind one whose device timing is still pending (at least 4x
  /// the window): a bound on memory, large enough for deep queues of non-blocking commands.
  static constexpr size_t kHoldForTimings = 4096;

  /// `stampsPerLeaf`: how many of its first calls' times each leaf keeps (Stamp).
  explicit Compressor(ObjectTable* objects, unsigned maxBody = 32, unsigned stampsPerLeaf = 32);

  /// Appends one event and folds. With `wantSlot`, returns a timing slot that follows the event's
  /// statistics wherever folding moves them (deliver() later), else 0. `leaf` comes back empty
  /// with a recycled leaf's memory: a caller that reuses it records without allocating.
  uint32_t append(Leaf&& leaf, bool wantSlot = false);

  /// Top-level nodes that can no longer fold, oldest first. With `all`, the whole window (end of
  /// the thread or of the trace). Nodes with pending device timings are held back unless the
  /// window is over kHoldForTimings or `all` is set; their pending timings then count as missing
  /// (a later deliver() of such a slot only frees it).
  std::vector<NodeId> takeFinal(bool all);
  /// Releases nodes returned by takeFinal() after they were written.
  void release(const std::vector<NodeId>& roots);

  const std::vector<NodeId>& window() const { return m_window; }
  const Node& node(NodeId id) const { return m_nodes[id]; }
  Node& node(NodeId id) { return m_nodes[id]; }

  /// Delivers the device timing of a slot from append() (null: not available) to the leaf that
  /// holds the event's statistics now, and frees the slot. Dropped when that leaf was written out.
  /// `deviceStart`/`deviceEnd` (device clock) go to the call's Stamp when the leaf kept it.
  void deliver(uint32_t slot, const DeviceAgg* timing, uint64_t deviceStart = 0,
               uint64_t deviceEnd = 0);
  size_t pendingSlots() const { return m_slots.size() - m_freeSlots.size() - 1; }

  size_t liveNodes() const { return m_live; }

 private:
  struct Bijection {
    std::vector<std::pair<ObjectId, ObjectId>> pairs;
  };
  NodeId alloc();
  void freeTree(NodeId id);
  void retire(NodeId id, NodeId into);
  uint64_t leafHash(const Leaf& l) const;
  uint64_t loopHash(const std::vector<NodeId>& body) const;
  bool equal(NodeId x, NodeId y, Bijection& bij) const;
  bool equalLeaf(const Leaf& x, const Leaf& y, Bijection& bij) const;
  bool equalSeq(const NodeId* x, const NodeId* y, size_t k, Bijection& bij) const;
  /// Merges the statistics of `y` into `x` (equal structure) and retires `y`.
  void merge(NodeId x, NodeId y);
  /// `l` keeps the times of `o`'s calls while it has room (Stamp).
  HETOPT_NOINLINE void keepStamps(Leaf& l, const Leaf& o);
  bool foldOnce();
  bool hasPending(NodeId id) const;
  /// A node leaving for the file: timings still pending on its leaves become `missing`.
  void settlePending(NodeId id);

  ObjectTable* m_objects;
  unsigned m_maxBody;
  unsigned m_stampsPerLeaf;
  std::vector<Node> m_nodes;
  std::vector<NodeId> m_free;
  std::vector<NodeId> m_window;
  /// Beside m_window, what folding scans on every append, packed: each entry's hash and, for a
  /// loop, its body's length (0 for a leaf). Scanning these touches a few cache lines instead of
  /// one node per candidate.
  struct WindowKey {
    uint64_t hash;
    uint32_t loopBody;
  };
  std::vector<WindowKey> m_windowKeys;
  void windowPush(NodeId id);
  void windowTruncate(size_t n);
  std::vector<NodeId> m_slots{kNoNode};  ///< timing slot -> leaf (slot 0 unused)
  std::vector<uint32_t> m_freeSlots;
  size_t m_live = 0;
};

}  // namespace hetopt::trace
