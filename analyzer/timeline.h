// SPDX-License-Identifier: MIT
/**
 * @file A timeline of the traced run in Chrome's trace-event JSON format, which Perfetto
 * (ui.perfetto.dev) and chrome://tracing open: kernels and transfers on one track per device queue,
 * OpenCL API calls on one track per host thread. Times are relative to the trace's start.
 */
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hetopt::analyzer {

struct TimelineEvent {
  enum class Track : uint8_t { DeviceQueue, HostThread };
  Track track = Track::HostThread;
  uint64_t trackId = 0;  ///< queue index or thread id
  std::string name;      ///< kernel name, "clEnqueueWriteBuffer", "H2D 256 KiB", ...
  std::string category;  ///< "kernel", "h2d", "d2h", "api", ...
  double startNs = 0;
  double durationNs = 0;
  std::vector<std::pair<std::string, std::string>> args;  ///< shown in the event's details
};

struct TimelineInfo {
  std::string program;
  std::string device;
  uint64_t pid = 0;
  /// Track names; unnamed tracks are called "queue N" / "thread N".
  std::vector<std::pair<uint64_t, std::string>> queueNames, threadNames;
};

/// The JSON document (object form, with "traceEvents" and "displayTimeUnit").
std::string timelineJson(const TimelineInfo& info, const std::vector<TimelineEvent>& events);

/// Writes it to `path` (0600). False with *error on failure.
bool writeTimeline(const std::string& path, const TimelineInfo& info,
                   const std::vector<TimelineEvent>& events, std::string* error);

}  // namespace hetopt::analyzer
