// SPDX-License-Identifier: MIT
/** @file Timeline events of a trace and their Chrome trace-event JSON; see timeline.h. */
#include "analyzer/timeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "analyzer/analysis.h"
#include "analyzer/json_writer.h"
#include "api_table.h"
#include "common/paths.h"

namespace hetopt::analyzer {
namespace {

// Two "processes" in the viewer: the device and the host, each with its own tracks.
constexpr int64_t kDevicePid = 1;
constexpr int64_t kHostPid = 2;

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
  j.endObject();
  j.key("traceEvents").beginArray();
  metadata(j, "process_name", kDevicePid, nullptr,
           "device" + (info.device.empty() ? std::string() : ": " + info.device));
  metadata(j, "process_name", kHostPid, nullptr,
           "host" + (info.pid ? " (pid " + std::to_string(info.pid) + ")" : std::string()));
  std::set<uint64_t> queues, threads;
  for (const TimelineEvent& e : events)
    (e.track == TimelineEvent::Track::DeviceQueue ? queues : threads).insert(e.trackId);
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
  for (const TimelineEvent& e : events) {
    j.beginObject();
    j.member("name", e.name).member("cat", e.category).member("ph", "X");
    j.member("pid", e.track == TimelineEvent::Track::DeviceQueue ? kDevicePid : kHostPid);
    j.member("tid", static_cast<int64_t>(e.trackId));
    // The format's unit is microseconds; fractions keep nanosecond detail.
    j.member("ts", e.startNs / 1e3).member("dur", e.durationNs > 0 ? e.durationNs / 1e3 : 0.0);
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

// ---- laying a trace out --------------------------------------------------------------------------

namespace {

using trace::ObjectKind;
using trace::Trace;
using trace::TraceNode;
using trace::TraceObject;

class TimelineBuilder {
 public:
  TimelineBuilder(const Trace& t, std::vector<TimelineEvent>* out) : m_t(t), m_out(out) {}

  void thread(const trace::TraceThread& th) {
    double cursor = 0;
    for (uint32_t e : th.entries) cursor = node(e, th.tid, cursor, 0);
  }

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

  /// Lays node `id` out from `start`; returns where the next one starts.
  double node(uint32_t id, uint64_t tid, double start, int depth) {
    if (id >= m_t.nodes.size() || depth > 64) return start;
    const TraceNode& n = m_t.nodes[id];
    if (n.loop) {
      double end = start;
      for (uint32_t b : n.body) end = node(b, tid, end, depth + 1);
      TimelineEvent e;
      e.track = TimelineEvent::Track::HostThread;
      e.trackId = tid;
      e.name = "loop x" + std::to_string(n.iterations);
      e.category = "loop";
      e.startNs = start;
      e.durationNs = end - start;
      e.args = {{"iterations", std::to_string(n.iterations)},
                {"instances", std::to_string(n.instances)}};
      m_out->push_back(std::move(e));
      return end;
    }
    const std::string name = m_t.leafName(n);
    TimelineEvent e;
    e.track = TimelineEvent::Track::HostThread;
    e.trackId = tid;
    e.name = name;
    e.category = n.type == trace::LeafType::Call ? "api" : "alloc";
    e.startNs = start;
    e.durationNs = static_cast<double>(n.host.total);
    e.args = {{"calls", std::to_string(n.host.count)}};
    if (n.type == trace::LeafType::Call && n.device.commands()) {
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
      d.startNs = start;
      d.durationNs = n.device.execNs();
      d.args = {{"commands", std::to_string(n.device.commands())}, {"enqueued by", name}};
      if (n.device.sampled()) d.args.push_back({"timed", std::to_string(n.device.exec.count)});
      m_out->push_back(std::move(d));
    }
    m_out->push_back(std::move(e));
    return start + static_cast<double>(n.host.total);
  }

  const Trace& m_t;
  std::vector<TimelineEvent>* m_out;
};

}  // namespace

std::vector<TimelineEvent> timelineEvents(const trace::Trace& trace, TimelineInfo* info) {
  std::vector<TimelineEvent> events;
  info->program = trace.header.program;
  info->pid = trace.header.pid;
  info->device = traceDevice(trace);
  TimelineBuilder b(trace, &events);
  for (const trace::TraceThread& th : trace.threads) {
    b.thread(th);
    info->threadNames.push_back({th.tid, "thread " + std::to_string(th.tid) +
                                             " (OpenCL calls, condensed)"});
  }
  return events;
}

}  // namespace hetopt::analyzer
