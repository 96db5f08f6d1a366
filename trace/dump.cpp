// SPDX-License-Identifier: MIT
/** @file The trace's text and JSON dumps; see dump.h.
 * The indented text tree and summary of `hetopt show`, and the JSON of `--json`. */
#include "trace/dump.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <string>

#include "api_table.h"
#include "common/json_writer.h"
#include "common/units.h"
#include "contracts/alloc_fn.h"

namespace hetopt::trace {
namespace {

std::string objectName(const Trace& t, ObjectId id) {
  const TraceObject* o = t.object(id);
  std::string s = std::string(o ? objectKindName(o->kind) : "object") + "#" + std::to_string(id);
  if (o && !o->info.label.empty()) s += "(" + o->info.label + ")";
  return s;
}

std::string versions(const Ref& r) {
  if (r.vFirst == r.vLast) return ".v" + std::to_string(r.vFirst);
  return ".v" + std::to_string(r.vFirst) + "..v" + std::to_string(r.vLast);
}

// A trace dump says a digit more than a report ("1.50 MiB", "2.204 s").
std::string bytesText(uint64_t b) { return formatBytes(b, ByteUnit::Auto, Detail::Detailed); }
std::string timeText(double ns) { return formatDuration(ns, TimeUnit::Auto, Detail::Detailed); }

std::string frameText(const Trace& t, const TraceFrame& f) {
  char off[32];
  snprintf(off, sizeof off, "+0x%" PRIx64, f.offset);
  if (f.module < 0) return std::string("?") + off;
  std::string path = t.modules[f.module].path;
  size_t slash = path.rfind('/');
  return path.substr(slash == std::string::npos ? 0 : slash + 1) + off;
}

void printNode(const Trace& t, uint32_t id, int depth, FILE* out) {
  const TraceNode& n = t.nodes[id];
  std::string indent(2 * depth + 2, ' ');
  if (n.loop) {
    std::string count = n.instances > 1 ? std::to_string(n.iterations) + " iterations in " +
                                              std::to_string(n.instances) + " runs"
                                        : "x" + std::to_string(n.iterations);
    fprintf(out, "%sloop %s {\n", indent.c_str(), count.c_str());
    for (uint32_t b : n.body) printNode(t, b, depth + 1, out);
    fprintf(out, "%s}\n", indent.c_str());
    return;
  }
  std::string line = indent + t.leafName(n);
  if (n.type == LeafType::Alloc || n.type == LeafType::Realloc) {
    if (!n.args.empty()) {
      const ArgAgg& size = n.args[0];
      line += " " + (size.varies ? bytesText(size.min) + ".." + bytesText(size.max)
                                 : bytesText(size.first));
    }
    if (n.site) line += " site#" + std::to_string(n.site - 1);
  }
  line += "  x" + std::to_string(n.host.count);
  std::string defs, uses, moved;
  for (const Ref& r : n.refs) {
    std::string name = objectName(t, r.obj) + versions(r);
    if (r.flags & kRefHost) {
      char range[64];
      snprintf(range, sizeof range, "[+%" PRIu64 "..+%" PRIu64 ")", r.offMin, r.endMax);
      name += range;
      if (r.bytes) moved += " " + std::string(hostAccessName(r.access)) + " " + bytesText(r.bytes);
    }
    if (r.flags & kRefDestroy) name = "~" + name;
    ((r.flags & (kRefWrite | kRefCreate)) ? defs : uses) += " " + name;
  }
  if (!defs.empty()) line += "  def" + defs;
  if (!uses.empty()) line += "  use" + uses;
  line += moved;
  if (n.host.count && n.type == LeafType::Call)
    line += "  host " + timeText(static_cast<double>(n.host.total) / n.host.count);
  if (n.device.exec.count) {
    line += "  device " + timeText(n.device.meanExecNs());
    if (n.device.sampled())
      line += " (sampled: " + std::to_string(n.device.exec.count) + " of " +
              std::to_string(n.device.commands()) + " timed)";
  } else if (n.device.lent) {
    line += "  device ~" + timeText(n.device.lentExecMean) + " (sampled: none of " +
            std::to_string(n.device.unsampled) + " timed; the same call's mean elsewhere)";
  } else if (n.device.unsampled) {
    line += "  device ? (sampled: none of " + std::to_string(n.device.unsampled) + " timed)";
  }
  if (!n.stamps.empty()) {  // format 6: when the first call began (the timeline's times)
    line += "  at " + timeText(static_cast<double>(n.stamps[0].startNs));
    if (n.stamps.size() < n.host.count)
      line += " (times of the first " + std::to_string(n.stamps.size()) + ")";
  }
  if (n.result.varies || n.result.first != 0)
    line += "  status " + std::to_string(static_cast<int32_t>(n.result.first)) +
            (n.result.varies ? "(varies)" : "");
  if (n.provisional) line += "  [checkpoint]";
  fprintf(out, "%s\n", line.c_str());
}

// ---- JSON ---------------------------------------------------------------------------------------

void jsonAgg(JsonWriter& j, const char* key, const Agg& a) {
  j.key(key).beginObject().member("count", a.count).member("total", a.total).member("min", a.min);
  j.member("max", a.max).endObject();
}

const char* refAccess(const Ref& r) {
  if (r.flags & kRefCreate) return "create";
  if (r.flags & kRefWrite) return "write";
  if (r.flags & kRefDestroy) return "destroy";
  return "read";
}

void jsonNode(const Trace& t, uint32_t id, JsonWriter& j) {
  const TraceNode& n = t.nodes[id];
  j.beginObject();
  if (n.loop) {
    j.key("loop").beginObject().member("iterations", n.iterations).member("instances", n.instances);
    j.key("body").beginArray();
    for (uint32_t b : n.body) jsonNode(t, b, j);
    j.endArray().endObject().endObject();
    return;
  }
  j.member(n.type == LeafType::Call   ? "call"
           : n.type == LeafType::Free ? "free"
                                      : "alloc",
           t.leafName(n));
  j.member("count", n.host.count);
  if (n.site) j.member("site", n.site - 1);
  if (n.provisional) j.member("provisional", true);
  jsonAgg(j, "host_ns", n.host);
  jsonAgg(j, "device_ns", n.device.exec);
  j.member("queued_to_submit_ns", n.device.queuedToSubmit)
      .member("submit_to_start_ns", n.device.submitToStart);
  j.member("device_missing", n.device.missing).member("device_sampled_out", n.device.unsampled);
  j.member("device_estimated_ns", std::llround(n.device.execNs()));
  j.member("status", static_cast<int32_t>(n.result.first));
  const api::ApiInfo* info =
      n.type == LeafType::Call ? &api::apiInfo(static_cast<api::ApiId>(n.code)) : nullptr;
  j.key("args").beginArray();
  for (size_t i = 0; i < n.args.size(); ++i) {
    const ArgAgg& a = n.args[i];
    j.beginObject().member("name", info ? info->args[i].name : (i == 0 ? "size" : "alignment"));
    j.member("first", a.first)
        .member("min", a.min)
        .member("max", a.max)
        .member("varies", a.varies)
        .endObject();
  }
  j.endArray().key("refs").beginArray();
  for (const Ref& r : n.refs) {
    j.beginObject().member("object", r.obj).key("arg");
    if (r.arg == kRefArgReturn)
      j.value("return");
    else if (r.arg == kRefArgBound)
      j.value("bound");
    else
      j.value(info && r.arg < info->numArgs ? std::string(info->args[r.arg].name)
                                            : std::to_string(r.arg));
    j.member("access", refAccess(r));
    j.key("version").beginArray().value(r.vFirst).value(r.vLast).endArray();
    if (r.flags & kRefHost) {
      j.member("host", hostAccessName(r.access)).member("bytes", r.bytes);
      j.member("offset_min", r.offMin).member("end_max", r.endMax);
    }
    j.endObject();
  }
  j.endArray().endObject();
}

void jsonSummary(const Trace& t, JsonWriter& j) {
  TraceSummary s = summarize(t);
  j.key("summary").beginObject();
  j.member("calls", s.calls).member("allocations", s.allocations).member("frees", s.frees);
  j.member("reallocs", s.reallocs).member("h2d_bytes", s.h2dBytes).member("d2h_bytes", s.d2hBytes);
  j.member("h2d_transfers", s.h2dTransfers).member("d2h_transfers", s.d2hTransfers);
  j.member("mapped_bytes", s.mappedBytes).member("wrapped_bytes", s.wrappedBytes);
  j.member("kernels", s.kernels)
      .member("kernel_ns", s.kernelNs)
      .member("transfer_ns", s.transferNs);
  j.member("other_device_ns", s.otherDeviceNs).member("launch_latency_ns", s.launchLatencyNs);
  j.member("host_call_ns", s.hostCallNs).member("device_missing", s.deviceMissing);
  j.member("device_timed", s.deviceTimed).member("device_sampled_out", s.deviceUnsampled);
  j.member("recording_ns", static_cast<uint64_t>(s.recordingNs));
  j.member("first_call_ns", t.firstCallNs).member("first_context_ns", t.firstContextNs);
  j.key("calls_by_function").beginObject();
  for (const auto& [name, count] : s.callsByFunction) j.member(name, count);
  j.endObject().key("by_object").beginArray();
  for (const auto& [id, b] : s.byObject) {
    j.beginObject()
        .member("object", id)
        .member("h2d_bytes", b.h2dBytes)
        .member("d2h_bytes", b.d2hBytes);
    j.member("h2d_transfers", b.h2dTransfers).member("d2h_transfers", b.d2hTransfers).endObject();
  }
  j.endArray().endObject();
}

void jsonObject(ObjectId id, const TraceObject& o, JsonWriter& j) {
  const ObjectInfo& i = o.info;
  j.beginObject().member("id", id).member("kind", objectKindName(o.kind));
  if (i.fields & kObjAddress) j.member("address", i.address).member("size", i.size);
  if (i.fields & kObjSite) {
    j.key("site");
    if (i.site)
      j.value(i.site - 1);
    else
      j.null();
    j.member("allocator", allocFnName(i.allocFn));
  }
  if (i.fields & kObjLabel) j.member("label", i.label);
  if (i.fields & kObjRegion) {
    j.member("region", regionClassName(i.region));
    j.key("mapping").beginObject().member("start", i.mapStart).member("end", i.mapEnd);
    j.member("offset", i.mapOffset).member("name", i.mapName).endObject();
  }
  if (i.fields & kObjParent) j.member("related", i.related);
  if (i.fields & kObjModule) j.member("module", static_cast<int64_t>(i.module) - 1);
  j.endObject();
}

}  // namespace

void dumpSummary(const Trace& t, FILE* out) {
  TraceSummary s = summarize(t);
  fprintf(out, "calls %" PRIu64 " (%zu functions), allocations %" PRIu64 ", frees %" PRIu64 "\n",
          s.calls, s.callsByFunction.size(), s.allocations, s.frees);
  fprintf(out, "host->device %s in %" PRIu64 " calls, device->host %s in %" PRIu64 " calls",
          bytesText(s.h2dBytes).c_str(), s.h2dTransfers, bytesText(s.d2hBytes).c_str(),
          s.d2hTransfers);
  if (s.mappedBytes) fprintf(out, ", mapped %s", bytesText(s.mappedBytes).c_str());
  if (s.wrappedBytes) fprintf(out, ", USE_HOST_PTR %s", bytesText(s.wrappedBytes).c_str());
  fprintf(out, "\ndevice time: kernels %s (%" PRIu64 " launches), transfers %s, other %s",
          timeText(static_cast<double>(s.kernelNs)).c_str(), s.kernels,
          timeText(static_cast<double>(s.transferNs)).c_str(),
          timeText(static_cast<double>(s.otherDeviceNs)).c_str());
  if (s.deviceMissing)
    fprintf(out, " (%" PRIu64 " commands without profiling info)", s.deviceMissing);
  if (s.deviceUnsampled)
    fprintf(out, " (sampled: %" PRIu64 " of %" PRIu64 " commands timed, the others estimated)",
            s.deviceTimed, s.deviceTimed + s.deviceUnsampled);
  fprintf(out, "\nhost time in OpenCL calls %s of %s traced\n",
          timeText(static_cast<double>(s.hostCallNs)).c_str(),
          timeText(static_cast<double>(t.durationNs)).c_str());
  if (s.recordingNs > 0) {  // the tracer's own cost, extrapolated from the calls it timed
    fprintf(out,
            "recording (hetopt's own time after each call): %s per call, ~%s in all (%.1f%% of the "
            "traced time; timed on %" PRIu64 " call%s)\n",
            timeText(s.recordingNs / static_cast<double>(s.calls)).c_str(),
            timeText(s.recordingNs).c_str(),
            t.durationNs ? 100.0 * s.recordingNs / static_cast<double>(t.durationNs) : 0.0,
            t.recordingSampledCalls, t.recordingSampledCalls == 1 ? "" : "s");
  } else if (t.recordingSampledCalls) {
    fprintf(out,
            "recording (hetopt's own time after each call): %s on the %" PRIu64
            " call%s timed, too few to estimate the rest\n",
            timeText(static_cast<double>(t.recordingSampledNs)).c_str(), t.recordingSampledCalls,
            t.recordingSampledCalls == 1 ? "" : "s");
  }
  if (t.firstCallNs) {
    fprintf(out, "start-up: first OpenCL call at %s",
            timeText(static_cast<double>(t.firstCallNs)).c_str());
    if (t.firstContextNs)
      fprintf(out, ", first context creation at %s",
              timeText(static_cast<double>(t.firstContextNs)).c_str());
    fprintf(out, "\n");
  }
}

std::string dumpJson(const Trace& t) {
  std::string out;
  JsonWriter j(&out);
  j.beginObject().member("format", t.formatVersion).member("writer", t.writerVersion);
  j.member("pid", t.header.pid).member("parent_pid", t.header.parentPid);
  j.member("start_unix_ns", t.header.startUnixNs).member("program", t.header.program);
  if (t.header.scriptKind > 0) {
    j.key("script")
        .beginObject()
        .member("kind", t.header.scriptKind)
        .member("name", t.header.scriptName);
    j.member("sha256", t.header.scriptHash).endObject();
  }
  j.key("arguments").beginArray();
  const std::string& a = t.header.arguments;
  for (size_t start = 0; start < a.size();) {
    size_t end = a.find('\0', start);
    if (end == std::string::npos) end = a.size();
    j.value(a.substr(start, end - start));
    start = end + 1;
  }
  j.endArray().member("complete", t.complete).member("duration_ns", t.durationNs);
  if (t.endedByExec) j.member("exec_ns", t.execNs).member("exec_program", t.execProgram);
  j.member("file_bytes", t.fileBytes).member("recording_timed_calls", t.recordingSampledCalls);
  j.member("recording_timed_ns", t.recordingSampledNs);
  jsonSummary(t, j);
  j.key("modules").beginArray();
  for (size_t i = 0; i < t.modules.size(); ++i) {
    const TraceModule& m = t.modules[i];
    j.beginObject().member("id", i).member("path", m.path).member("build_id", m.buildId);
    j.member("start", m.start).member("end", m.end).member("bias", m.bias).endObject();
  }
  j.endArray().key("sites").beginArray();
  for (size_t i = 0; i < t.sites.size(); ++i) {
    j.beginObject().member("id", i).key("frames").beginArray();
    for (const TraceFrame& fr : t.sites[i].frames)
      j.beginObject()
          .member("pc", fr.pc)
          .member("module", fr.module)
          .member("offset", fr.offset)
          .endObject();
    j.endArray().endObject();
  }
  j.endArray().key("objects").beginArray();
  for (const auto& [id, o] : t.objects) jsonObject(id, o, j);
  j.endArray().key("threads").beginArray();
  for (const TraceThread& th : t.threads) {
    j.beginObject().member("index", th.index).member("tid", th.tid).key("entries").beginArray();
    for (uint32_t e : th.entries) jsonNode(t, e, j);
    j.endArray().endObject();
  }
  j.endArray().endObject();
  out += '\n';
  return out;
}

void dumpText(const Trace& t, FILE* out) {
  fprintf(out, "hetopt trace, format %u, written by hetopt %s, %s\n", t.formatVersion,
          t.writerVersion.c_str(), bytesText(t.fileBytes).c_str());
  std::string args = t.header.arguments;
  for (char& c : args)
    if (c == '\0') c = ' ';
  fprintf(out, "program: %s (pid %" PRIu64 ", parent %" PRIu64 ")\n",
          args.empty() ? t.header.program.c_str() : args.c_str(), t.header.pid, t.header.parentPid);
  static const char* const kScriptKinds[] = {"", "script", "module", "code"};
  if (t.header.scriptKind > 0 && t.header.scriptKind < 4)
    fprintf(out, "runs: %s %s%s%s\n", kScriptKinds[t.header.scriptKind],
            t.header.scriptName.c_str(),
            t.header.scriptHash.empty()   ? ""
            : t.header.scriptName.empty() ? "sha256:"
                                          : " sha256:",
            t.header.scriptHash.c_str());
  // A process that exec'd left no End record, yet the trace holds all it did; without either the
  // trace cannot tell why it stops: say what it holds and the possible causes.
  if (t.endedByExec)
    fprintf(out,
            "ended by exec at %s: everything before it is here; pid %" PRIu64
            " went on as %s, traced on its own (by `hetopt trace` in this file's name + .%" PRIu64
            ")\n",
            timeText(static_cast<double>(t.execNs)).c_str(), t.header.pid, t.execProgram.c_str(),
            t.header.pid);
  else if (t.complete)
    fprintf(out, "complete, %s traced\n", timeText(static_cast<double>(t.durationNs)).c_str());
  else
    fprintf(out,
            "INCOMPLETE: no end record (the program was killed or crashed, is still running, or "
            "its trace could not be written to the end); %" PRIu64
            " calls recorded up to the last checkpoint, %s traced\n",
            summarize(t).calls, timeText(static_cast<double>(t.durationNs)).c_str());
  for (const TraceThread& th : t.threads) {
    if (th.entries.empty()) continue;
    fprintf(out, "\nthread %u (tid %" PRIu64 "):\n", th.index, th.tid);
    for (uint32_t e : th.entries) printNode(t, e, 0, out);
  }
  fprintf(out, "\nhost memory:\n");
  for (const auto& [id, o] : t.objects) {
    const ObjectInfo& i = o.info;
    if (o.kind == ObjectKind::Segment) {
      fprintf(out, "  %s  %s at 0x%" PRIx64, objectName(t, id).c_str(), bytesText(i.size).c_str(),
              i.address);
      if (i.site) fprintf(out, "  site#%u", i.site - 1);
      if (i.fields & kObjParent) fprintf(out, "  from %s", objectName(t, i.related).c_str());
      fprintf(out, "\n");
    } else if (o.kind == ObjectKind::Untracked) {
      fprintf(out, "  %s  %s at 0x%" PRIx64 "  %s %s\n", objectName(t, id).c_str(),
              bytesText(i.size).c_str(), i.address, regionClassName(i.region), i.mapName.c_str());
    }
  }
  if (!t.sites.empty()) fprintf(out, "\nallocation sites:\n");
  for (size_t s = 0; s < t.sites.size(); ++s) {
    fprintf(out, "  site#%zu ", s);
    for (size_t f = 0; f < t.sites[s].frames.size(); ++f)
      fprintf(out, "%s%s", f ? " <- " : "", frameText(t, t.sites[s].frames[f]).c_str());
    fprintf(out, "\n");
  }
  fprintf(out, "\n");
  dumpSummary(t, out);
}

}  // namespace hetopt::trace
