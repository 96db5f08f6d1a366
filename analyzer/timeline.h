// SPDX-License-Identifier: MIT
/**
 * @file A timeline of the traced run in Chrome's trace-event JSON format, which Perfetto
 * (ui.perfetto.dev) and chrome://tracing open: kernels and transfers on one track per device queue,
 * OpenCL API calls and allocations of candidate sites on one track per host thread, each loop as
 * one aggregated span on a track of its thread's loops. Times are relative to the trace's start.
 */
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hetopt::analyzer {

struct TimelineEvent {
  /// HostLoops: one span per top-level loop of a thread, beside the thread's own track.
  enum class Track : uint8_t { DeviceQueue, HostThread, HostLoops };
  Track track = Track::HostThread;
  uint64_t trackId = 0;  ///< queue index or thread id
  std::string name;      ///< kernel name, "clEnqueueWriteBuffer", "H2D 256 KiB", ...
  std::string category;  ///< "kernel", "h2d", "d2h", "api", ...
  double startNs = 0;
  double durationNs = 0;
  std::vector<std::pair<std::string, std::string>> args;  ///< shown in the event's details
  bool instant = false;                                   ///< a moment (an allocation), not a span
};

struct TimelineInfo {
  std::string program;
  std::string device;
  uint64_t pid = 0;
  /// Track names; unnamed tracks are called "queue N" / "thread N".
  std::vector<std::pair<uint64_t, std::string>> queueNames, threadNames;
  /// Said in the file's "otherData" beside program, device and pid: what the times are, how each
  /// queue's device clock was aligned.
  std::vector<std::pair<std::string, std::string>> facts;
};

/// The JSON document (object form, with "traceEvents" and "displayTimeUnit").
std::string timelineJson(const TimelineInfo& info, const std::vector<TimelineEvent>& events);

/// Writes it to `path` (0600). False with *error on failure.
bool writeTimeline(const std::string& path, const TimelineInfo& info,
                   const std::vector<TimelineEvent>& events, std::string* error);

}  // namespace hetopt::analyzer
