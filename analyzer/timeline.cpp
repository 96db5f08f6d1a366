// SPDX-License-Identifier: MIT
/** @file Timeline events of a trace and their Chrome trace-event JSON; see timeline.h.
 * The Chrome trace-event JSON, then the TimelineBuilder that lays a trace's calls out in time. */
#include "analyzer/timeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "analyzer/analysis.h"
#include "api_table.h"
#include "common/json_writer.h"
#include "common/paths.h"
#include "common/units.h"

namespace hetopt::analyzer {
namespace {

// Three "processes" in the viewer: the device, the host and the host's loops, each with its tracks.
constexpr int64_t kDevicePid = 1;
constexpr int64_t kHostPid = 2;
constexpr int64_t kLoopsPid = 3;

int64_t pidOf(TimelineEvent::Track t) {
  return t == TimelineEvent::Track::DeviceQueue  ? kDevicePid
         : t == TimelineEvent::Track::HostThread ? kHostPid
                                                 : kLoopsPid;
}

void metadata(JsonWriter& j, const char* what, int64_t pid, const int64_t* tid,
              const std::string& name) {
  j.beginObject().member("ph", "M").member("name", what).member("pid", pid);
  if (tid) j.member("tid", *tid);
  j.key("args").beginObject().member("name", name).endObject();
  j.endObject();
}

}  // namespace

std::string timelineJson(const TimelineInfo& info, const std::vector<TimelineEvent>& events) {
  std::string out;
  JsonWriter j(&out);
  j.beginObject();
  j.member("displayTimeUnit", "ns");
  j.key("otherData").beginObject();
  j.member("program", info.program).member("device", info.device).member("pid", info.pid);
  for (const auto& [k, v] : info.facts) j.member(k, v);
  j.endObject();
  j.key("traceEvents").beginArray();
  metadata(j, "process_name", kDevicePid, nullptr,
           "device" + (info.device.empty() ? std::string() : ": " + info.device));
  metadata(j, "process_name", kHostPid, nullptr,
           "host" + (info.pid ? " (pid " + std::to_string(info.pid) + ")" : std::string()));
  std::set<uint64_t> queues, threads, loops;
  for (const TimelineEvent& e : events)
    (e.track == TimelineEvent::Track::DeviceQueue  ? queues
     : e.track == TimelineEvent::Track::HostThread ? threads
                                                   : loops)
        .insert(e.trackId);
  if (!loops.empty()) metadata(j, "process_name", kLoopsPid, nullptr, "host: loops (aggregated)");
  auto nameOf = [](const std::vector<std::pair<uint64_t, std::string>>& names, uint64_t id,
                   const char* kind) {
    for (const auto& [k, v] : names)
      if (k == id) return v;
    return std::string(kind) + " " + std::to_string(id);
  };
  for (uint64_t q : queues) {
    int64_t tid = static_cast<int64_t>(q);
    metadata(j, "thread_name", kDevicePid, &tid, nameOf(info.queueNames, q, "queue"));
  }
  for (uint64_t t : threads) {
    int64_t tid = static_cast<int64_t>(t);
    metadata(j, "thread_name", kHostPid, &tid, nameOf(info.threadNames, t, "thread"));
  }
  for (uint64_t t : loops) {
    int64_t tid = static_cast<int64_t>(t);
    metadata(j, "thread_name", kLoopsPid, &tid, "thread " + std::to_string(t) + ": loops");
  }
  for (const TimelineEvent& e : events) {
    j.beginObject();
    j.member("name", e.name).member("cat", e.category).member("ph", e.instant ? "i" : "X");
    j.member("pid", pidOf(e.track));
    j.member("tid", static_cast<int64_t>(e.trackId));
    // The format's unit is microseconds; fractions keep nanosecond detail.
    j.member("ts", e.startNs / 1e3);
    if (e.instant)
      j.member("s", "t");  // a mark on its thread's track
    else
      j.member("dur", e.durationNs > 0 ? e.durationNs / 1e3 : 0.0);
    if (!e.args.empty()) {
      j.key("args").beginObject();
      for (const auto& [k, v] : e.args) j.member(k, v);
      j.endObject();
    }
    j.endObject();
  }
  j.endArray();
  j.endObject();
  out += '\n';
  return out;
}

bool writeTimeline(const std::string& path, const TimelineInfo& info,
                   const std::vector<TimelineEvent>& events, std::string* error) {
  return writePrivateFile(path, timelineJson(info, events), error);
}

// ---- laying a trace out -------------------------------------------------------------------------

namespace {

using trace::ObjectKind;
using trace::Trace;
using trace::TraceNode;
using trace::TraceObject;

class TimelineBuilder {
 public:
  TimelineBuilder(const Trace& t, const std::set<uint32_t>& candidateSites,
                  std::vector<TimelineEvent>* out)
      : m_t(t), m_candidates(candidateSites), m_out(out) {}

  /// Format 6 on: each kept call at its wall-clock time, its device command at the device's time
  /// on the trace's clock, each top-level loop as one span beside.
  void realThread(const trace::TraceThread& th) {
    for (uint32_t e : th.entries) realNode(e, th.tid, 0);
  }

  /// Older traces keep no timestamps: the thread's calls laid end to end in call order.
  void condensedThread(const trace::TraceThread& th) {
    double cursor = 0;
    for (uint32_t e : th.entries) cursor = condensedNode(e, th.tid, cursor, 0);
  }

  uint64_t unaligned() const { return m_unaligned; }

 private:
  std::string labelOf(const TraceNode& n, ObjectKind kind) const {
    for (const trace::Ref& r : n.refs) {
      const TraceObject* o = m_t.object(r.obj);
      if (o && o->kind == kind && !o->info.label.empty()) return o->info.label;
    }
    return {};
  }
  uint64_t queueOf(const TraceNode& n) const {
    for (const trace::Ref& r : n.refs) {
      const TraceObject* o = m_t.object(r.obj);
      if (o && o->kind == ObjectKind::Queue) return o->id;
    }
    return 0;
  }
  const TraceNode* node(uint32_t id, int depth) const {
    return id < m_t.nodes.size() && depth <= 64 ? &m_t.nodes[id] : nullptr;
  }

  /// A device command of leaf `n` on its queue's track (times left to the caller).
  TimelineEvent deviceEvent(const TraceNode& n, const std::string& name) const {
    TimelineEvent d;
    d.track = TimelineEvent::Track::DeviceQueue;
    d.trackId = queueOf(n);
    const api::ApiKind kind = api::apiInfo(static_cast<api::ApiId>(n.code)).kind;
    if (kind == api::ApiKind::Launch) {
      d.category = "kernel";
      d.name = labelOf(n, ObjectKind::Kernel);
      if (d.name.empty()) d.name = "kernel";
    } else {
      d.category = kind == api::ApiKind::H2d || kind == api::ApiKind::Unmap ? "h2d"
                   : kind == api::ApiKind::D2h || kind == api::ApiKind::Map ? "d2h"
                                                                            : "device";
      d.name = name;
    }
    d.args = {{"enqueued by", name}};
    return d;
  }
  TimelineEvent hostEvent(uint64_t tid, std::string name, const char* category, double start,
                          double duration) const {
    TimelineEvent e;
    e.track = TimelineEvent::Track::HostThread;
    e.trackId = tid;
    e.name = std::move(name);
    e.category = category;
    e.startNs = start;
    e.durationNs = duration;
    return e;
  }

  // ---- real time ----

  struct Span {
    uint64_t first = UINT64_MAX, end = 0;  ///< first kept call's start, last call's end
    uint64_t calls = 0, shown = 0;
    double deviceNs = 0;
  };
  void spanOf(uint32_t id, int depth, Span* s) const {
    const TraceNode* n = node(id, depth);
    if (!n) return;
    if (n->loop) {
      for (uint32_t b : n->body) spanOf(b, depth + 1, s);
      return;
    }
    if (!n->stamps.empty()) s->first = std::min(s->first, n->stamps[0].startNs);
    s->end = std::max(s->end, n->endNs);
    s->calls += n->host.count;
    s->shown += n->stamps.size();
    if (n->type == trace::LeafType::Call) s->deviceNs += n->device.execNs();
  }

  void realNode(uint32_t id, uint64_t tid, int depth) {
    const TraceNode* n = node(id, depth);
    if (!n) return;
    if (n->loop) {
      for (uint32_t b : n->body) realNode(b, tid, depth + 1);
      if (depth == 0) loopSpan(*n, id, tid);
      return;
    }
    const std::string name = m_t.leafName(*n);
    if (n->type == trace::LeafType::Alloc || n->type == trace::LeafType::Realloc) {
      if (!n->site || !m_candidates.count(n->site)) return;
      for (const trace::Stamp& s : n->stamps) {
        TimelineEvent e = hostEvent(tid, name, "alloc", static_cast<double>(s.startNs), 0);
        e.instant = true;
        if (!n->args.empty()) e.name += " " + formatBytes(n->args[0].first);
        e.args = {{"candidate site", std::to_string(n->site - 1)},
                  {"allocations at this place", std::to_string(n->host.count)}};
        m_out->push_back(std::move(e));
      }
      return;
    }
    if (n->type != trace::LeafType::Call) return;
    const trace::TraceClock* clock = nullptr;
    if (auto it = m_t.clocks.find(static_cast<trace::ObjectId>(queueOf(*n)));
        it != m_t.clocks.end())
      clock = &it->second;
    for (size_t i = 0; i < n->stamps.size(); ++i) {
      const trace::Stamp& s = n->stamps[i];
      TimelineEvent e = hostEvent(tid, name, "api", static_cast<double>(s.startNs),
                                  static_cast<double>(s.hostNs));
      e.args = {{"occurrence", std::to_string(i + 1) + " of " + std::to_string(n->host.count)}};
      if (s.deviceEnd) {
        if (clock) {
          TimelineEvent d = deviceEvent(*n, name);
          // Exact in integers; saturating, as a corrupt trace's stamps and offset may overflow.
          d.startNs = static_cast<double>(
              saturatingAdd(static_cast<int64_t>(s.deviceStart), clock->offsetNs));
          d.durationNs =
              s.deviceEnd > s.deviceStart ? static_cast<double>(s.deviceEnd - s.deviceStart) : 0;
          m_out->push_back(std::move(d));
        } else {
          ++m_unaligned;
        }
      }
      m_out->push_back(std::move(e));
    }
  }

  /// A top-level loop: one span from its first call to its last, marked as an aggregate.
  void loopSpan(const TraceNode& n, uint32_t id, uint64_t tid) {
    Span s;
    spanOf(id, 0, &s);
    if (s.first == UINT64_MAX || s.end < s.first) return;
    TimelineEvent e;
    e.track = TimelineEvent::Track::HostLoops;
    e.trackId = tid;
    e.name = "loop x" + std::to_string(n.iterations);
    e.category = "loop";
    e.startNs = static_cast<double>(s.first);
    e.durationNs = static_cast<double>(s.end - s.first);
    e.args = {{"aggregated",
               "one span for the whole loop; its calls beyond each one's first occurrences are not "
               "on the thread's track"},
              {"iterations", std::to_string(n.iterations)},
              {"instances", std::to_string(n.instances)},
              {"calls", std::to_string(s.calls)},
              {"calls shown", std::to_string(s.shown)},
              {"device time (estimate)", formatDuration(static_cast<double>(s.deviceNs))}};
    m_out->push_back(std::move(e));
  }

  // ---- condensed (no timestamps) ----

  /// Lays node `id` out from `start`; returns where the next one starts.
  double condensedNode(uint32_t id, uint64_t tid, double start, int depth) {
    const TraceNode* np = node(id, depth);
    if (!np) return start;
    const TraceNode& n = *np;
    if (n.loop) {
      double end = start;
      for (uint32_t b : n.body) end = condensedNode(b, tid, end, depth + 1);
      TimelineEvent e =
          hostEvent(tid, "loop x" + std::to_string(n.iterations), "loop", start, end - start);
      e.args = {{"iterations", std::to_string(n.iterations)},
                {"instances", std::to_string(n.instances)}};
      m_out->push_back(std::move(e));
      return end;
    }
    const std::string name = m_t.leafName(n);
    TimelineEvent e = hostEvent(tid, name, n.type == trace::LeafType::Call ? "api" : "alloc", start,
                                static_cast<double>(n.host.total));
    e.args = {{"calls", std::to_string(n.host.count)}};
    if (n.type == trace::LeafType::Call && n.device.commands()) {
      TimelineEvent d = deviceEvent(n, name);
      d.startNs = start;
      d.durationNs = n.device.execNs();
      d.args.push_back({"commands", std::to_string(n.device.commands())});
      if (n.device.sampled()) d.args.push_back({"timed", std::to_string(n.device.exec.count)});
      m_out->push_back(std::move(d));
    }
    m_out->push_back(std::move(e));
    return start + static_cast<double>(n.host.total);
  }

  const Trace& m_t;
  const std::set<uint32_t>& m_candidates;
  std::vector<TimelineEvent>* m_out;
  uint64_t m_unaligned = 0;
};

}  // namespace

std::vector<TimelineEvent> timelineEvents(const trace::Trace& trace, TimelineInfo* info,
                                          const std::set<uint32_t>& candidateSites) {
  std::vector<TimelineEvent> events;
  info->program = trace.header.program;
  info->pid = trace.header.pid;
  info->device = traceDevice(trace);
  const bool real = trace.formatVersion >= trace::kTimelineFormatVersion;
  TimelineBuilder b(trace, candidateSites, &events);
  for (const trace::TraceThread& th : trace.threads) {
    if (real) {
      b.realThread(th);
      info->threadNames.push_back({th.tid, "thread " + std::to_string(th.tid)});
    } else {
      b.condensedThread(th);
      info->threadNames.push_back(
          {th.tid, "thread " + std::to_string(th.tid) + " (OpenCL calls, condensed)"});
    }
  }
  if (!real) {
    info->facts.push_back(
        {"time", "condensed: trace format " + std::to_string(trace.formatVersion) +
                     " keeps no timestamps, so each thread's calls are laid end to end"});
    return events;
  }
  // The note names the unit of the file's own ts and dur (the format's microseconds, written by
  // timelineJson), not the trace's nanoseconds they come from.
  info->facts.push_back({"time",
                         "real: ts and dur in microseconds since tracing started; each call's "
                         "first occurrences at their wall-clock time, loops also as one "
                         "aggregated span each"});
  for (const auto& [queue, c] : trace.clocks) {
    // check_timeline.py reads the uncertainty in microseconds: a fixed unit.
    info->facts.push_back({"clock of queue " + std::to_string(queue),
                           std::string(trace::clockMethodName(c.method)) + ", +-" +
                               formatDuration(static_cast<double>(c.uncertaintyNs), TimeUnit::Us)});
  }
  if (b.unaligned())
    info->facts.push_back(
        {"device commands left out",
         std::to_string(b.unaligned()) + " timed commands of queues without a clock"});
  return events;
}

}  // namespace hetopt::analyzer
