// SPDX-License-Identifier: MIT
/** @file Chrome trace-event JSON; see timeline.h. */
#include "analyzer/timeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "analyzer/json_writer.h"
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

}  // namespace hetopt::analyzer
