// SPDX-License-Identifier: MIT
/**
 * @file `hetopt show [--json] FILE`: prints a trace the way the source's figure does (call,
 * definitions, uses, loop counts) or as JSON for tools. Everything comes from the trace reader.
 */
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "api_table.h"
#include "cli/commands.h"
#include "cli/show.h"
#include "common/log.h"
#include "trace/reader.h"

namespace hetopt::cli {
namespace {

using namespace hetopt::trace;

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

std::string bytesText(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30))
    snprintf(buf, sizeof buf, "%.2f GiB", b / 1073741824.0);
  else if (b >= (1ull << 20))
    snprintf(buf, sizeof buf, "%.2f MiB", b / 1048576.0);
  else if (b >= 1024)
    snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else
    snprintf(buf, sizeof buf, "%" PRIu64 " B", b);
  return buf;
}

std::string timeText(double ns) {
  char buf[32];
  if (ns >= 1e9)
    snprintf(buf, sizeof buf, "%.3f s", ns / 1e9);
  else if (ns >= 1e6)
    snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  else if (ns >= 1e3)
    snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  else
    snprintf(buf, sizeof buf, "%.0f ns", ns);
  return buf;
}

std::string frameText(const Trace& t, const TraceFrame& f) {
  char off[32];
  snprintf(off, sizeof off, "+0x%" PRIx64, f.offset);
  if (f.module < 0) return std::string("?") + off;
  std::string path = t.modules[f.module].path;
  size_t slash = path.rfind('/');
  return path.substr(slash == std::string::npos ? 0 : slash + 1) + off;
}

void printNode(const Trace& t, uint32_t id, int depth) {
  const TraceNode& n = t.nodes[id];
  std::string indent(2 * depth + 2, ' ');
  if (n.loop) {
    std::string count = n.instances > 1 ? std::to_string(n.iterations) + " iterations in " +
                                              std::to_string(n.instances) + " runs"
                                        : "x" + std::to_string(n.iterations);
    printf("%sloop %s {\n", indent.c_str(), count.c_str());
    for (uint32_t b : n.body) printNode(t, b, depth + 1);
    printf("%s}\n", indent.c_str());
    return;
  }
  std::string line = indent + t.leafName(n);
  if (n.type == LeafType::Alloc || n.type == LeafType::Realloc) {
    if (!n.args.empty()) {
      const ArgAgg& size = n.args[0];
      line += " " + (size.varies ? bytesText(size.min) + ".." + bytesText(size.max) : bytesText(size.first));
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
      line += " (sampled: " + std::to_string(n.device.exec.count) + " of " + std::to_string(n.device.commands()) + " timed)";
  } else if (n.device.lent) {
    line += "  device ~" + timeText(n.device.lentExecMean) + " (sampled: none of " +
            std::to_string(n.device.unsampled) + " timed; the same call's mean elsewhere)";
  } else if (n.device.unsampled) {
    line += "  device ? (sampled: none of " + std::to_string(n.device.unsampled) + " timed)";
  }
  if (!n.stamps.empty()) {  // format 6: when the first call began (the timeline's times)
    line += "  at " + timeText(static_cast<double>(n.stamps[0].startNs));
    if (n.stamps.size() < n.host.count) line += " (times of the first " + std::to_string(n.stamps.size()) + ")";
  }
  if (n.result.varies || n.result.first != 0) line += "  status " + std::to_string(static_cast<int32_t>(n.result.first)) + (n.result.varies ? "(varies)" : "");
  if (n.provisional) line += "  [checkpoint]";
  printf("%s\n", line.c_str());
}

void printSummary(const Trace& t, FILE* out) {
  TraceSummary s = summarize(t);
  fprintf(out, "calls %" PRIu64 " (%zu functions), allocations %" PRIu64 ", frees %" PRIu64 "\n", s.calls,
          s.callsByFunction.size(), s.allocations, s.frees);
  fprintf(out, "host->device %s in %" PRIu64 " calls, device->host %s in %" PRIu64 " calls",
          bytesText(s.h2dBytes).c_str(), s.h2dTransfers, bytesText(s.d2hBytes).c_str(), s.d2hTransfers);
  if (s.mappedBytes) fprintf(out, ", mapped %s", bytesText(s.mappedBytes).c_str());
  if (s.wrappedBytes) fprintf(out, ", USE_HOST_PTR %s", bytesText(s.wrappedBytes).c_str());
  fprintf(out, "\ndevice time: kernels %s (%" PRIu64 " launches), transfers %s, other %s",
          timeText(static_cast<double>(s.kernelNs)).c_str(), s.kernels,
          timeText(static_cast<double>(s.transferNs)).c_str(), timeText(static_cast<double>(s.otherDeviceNs)).c_str());
  if (s.deviceMissing) fprintf(out, " (%" PRIu64 " commands without profiling info)", s.deviceMissing);
  if (s.deviceUnsampled)
    fprintf(out, " (sampled: %" PRIu64 " of %" PRIu64 " commands timed, the others estimated)", s.deviceTimed,
            s.deviceTimed + s.deviceUnsampled);
  fprintf(out, "\nhost time in OpenCL calls %s of %s traced\n", timeText(static_cast<double>(s.hostCallNs)).c_str(),
          timeText(static_cast<double>(t.durationNs)).c_str());
  if (s.recordingNs > 0) {  // the tracer's own cost, extrapolated from the calls it timed
    fprintf(out, "recording (hetopt's own time after each call): %s per call, ~%s in all (%.1f%% of the traced time; timed on %" PRIu64 " calls)\n",
            timeText(s.recordingNs / static_cast<double>(s.calls)).c_str(), timeText(s.recordingNs).c_str(),
            t.durationNs ? 100.0 * s.recordingNs / static_cast<double>(t.durationNs) : 0.0, t.recordingSampledCalls);
  } else if (t.recordingSampledCalls) {
    fprintf(out, "recording (hetopt's own time after each call): %s on the %" PRIu64 " calls timed, too few to estimate the rest\n",
            timeText(static_cast<double>(t.recordingSampledNs)).c_str(), t.recordingSampledCalls);
  }
  if (t.firstCallNs) {
    fprintf(out, "start-up: first OpenCL call at %s", timeText(static_cast<double>(t.firstCallNs)).c_str());
    if (t.firstContextNs)
      fprintf(out, ", first context creation at %s", timeText(static_cast<double>(t.firstContextNs)).c_str());
    fprintf(out, "\n");
  }
}

// ---- JSON ------------------------------------------------------------------------------------------

class Json {
 public:
  void raw(const std::string& s) { m_out += s; }
  void str(const std::string& s) {
    m_out += '"';
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') {
        m_out += '\\';
        m_out += static_cast<char>(c);
      } else if (c < 0x20) {
        char b[8];
        snprintf(b, sizeof b, "\\u%04x", c);
        m_out += b;
      } else {
        m_out += static_cast<char>(c);
      }
    }
    m_out += '"';
  }
  void key(const char* k) {
    str(k);
    m_out += ':';
  }
  void num(uint64_t v) { m_out += std::to_string(v); }
  void agg(const Agg& a) {
    raw("{\"count\":" + std::to_string(a.count) + ",\"total\":" + std::to_string(a.total) +
        ",\"min\":" + std::to_string(a.min) + ",\"max\":" + std::to_string(a.max) + "}");
  }
  const std::string& text() const { return m_out; }

 private:
  std::string m_out;
};

void jsonNode(const Trace& t, uint32_t id, Json& j) {
  const TraceNode& n = t.nodes[id];
  if (n.loop) {
    j.raw("{\"loop\":{\"iterations\":" + std::to_string(n.iterations) +
          ",\"instances\":" + std::to_string(n.instances) + ",\"body\":[");
    for (size_t i = 0; i < n.body.size(); ++i) {
      if (i) j.raw(",");
      jsonNode(t, n.body[i], j);
    }
    j.raw("]}}");
    return;
  }
  j.raw("{");
  j.key(n.type == LeafType::Call ? "call" : n.type == LeafType::Free ? "free" : "alloc");
  j.str(t.leafName(n));
  j.raw(",\"count\":" + std::to_string(n.host.count));
  if (n.site) j.raw(",\"site\":" + std::to_string(n.site - 1));
  if (n.provisional) j.raw(",\"provisional\":true");
  j.raw(",\"host_ns\":");
  j.agg(n.host);
  j.raw(",\"device_ns\":");
  j.agg(n.device.exec);
  j.raw(",\"queued_to_submit_ns\":" + std::to_string(n.device.queuedToSubmit) +
        ",\"submit_to_start_ns\":" + std::to_string(n.device.submitToStart) +
        ",\"device_missing\":" + std::to_string(n.device.missing) +
        ",\"device_sampled_out\":" + std::to_string(n.device.unsampled) +
        ",\"device_estimated_ns\":" + std::to_string(std::llround(n.device.execNs())));
  j.raw(",\"status\":" + std::to_string(static_cast<int32_t>(n.result.first)));
  j.raw(",\"args\":[");
  const api::ApiInfo* info = n.type == LeafType::Call ? &api::apiInfo(static_cast<api::ApiId>(n.code)) : nullptr;
  for (size_t i = 0; i < n.args.size(); ++i) {
    const ArgAgg& a = n.args[i];
    if (i) j.raw(",");
    j.raw("{\"name\":");
    j.str(info ? info->args[i].name : (i == 0 ? "size" : "alignment"));
    j.raw(",\"first\":" + std::to_string(a.first) + ",\"min\":" + std::to_string(a.min) +
          ",\"max\":" + std::to_string(a.max) + ",\"varies\":" + (a.varies ? "true" : "false") + "}");
  }
  j.raw("],\"refs\":[");
  for (size_t i = 0; i < n.refs.size(); ++i) {
    const Ref& r = n.refs[i];
    if (i) j.raw(",");
    j.raw("{\"object\":" + std::to_string(r.obj) + ",\"arg\":");
    if (r.arg == kRefArgReturn)
      j.str("return");
    else if (r.arg == kRefArgBound)
      j.str("bound");
    else
      j.str(info && r.arg < info->numArgs ? info->args[r.arg].name : std::to_string(r.arg));
    std::string access;
    if (r.flags & kRefCreate) access = "create";
    else if (r.flags & kRefWrite) access = "write";
    else if (r.flags & kRefDestroy) access = "destroy";
    else access = "read";
    j.raw(",\"access\":");
    j.str(access);
    j.raw(",\"version\":[" + std::to_string(r.vFirst) + "," + std::to_string(r.vLast) + "]");
    if (r.flags & kRefHost) {
      j.raw(",\"host\":");
      j.str(hostAccessName(r.access));
      j.raw(",\"bytes\":" + std::to_string(r.bytes) + ",\"offset_min\":" + std::to_string(r.offMin) +
            ",\"end_max\":" + std::to_string(r.endMax));
    }
    j.raw("}");
  }
  j.raw("]}");
}

std::string toJson(const Trace& t) {
  Json j;
  j.raw("{\"format\":" + std::to_string(t.formatVersion) + ",\"writer\":");
  j.str(t.writerVersion);
  j.raw(",\"pid\":" + std::to_string(t.header.pid) + ",\"parent_pid\":" + std::to_string(t.header.parentPid) +
        ",\"start_unix_ns\":" + std::to_string(t.header.startUnixNs) + ",\"program\":");
  j.str(t.header.program);
  if (t.header.scriptKind > 0) {
    j.raw(",\"script\":{\"kind\":" + std::to_string(t.header.scriptKind) + ",\"name\":");
    j.str(t.header.scriptName);
    j.raw(",\"sha256\":");
    j.str(t.header.scriptHash);
    j.raw("}");
  }
  j.raw(",\"arguments\":[");
  {
    size_t start = 0;
    bool first = true;
    const std::string& a = t.header.arguments;
    while (start < a.size()) {
      size_t end = a.find('\0', start);
      if (end == std::string::npos) end = a.size();
      if (!first) j.raw(",");
      j.str(a.substr(start, end - start));
      first = false;
      start = end + 1;
    }
  }
  j.raw("],\"complete\":" + std::string(t.complete ? "true" : "false") +
        ",\"duration_ns\":" + std::to_string(t.durationNs) + ",\"file_bytes\":" + std::to_string(t.fileBytes) +
        ",\"recording_timed_calls\":" + std::to_string(t.recordingSampledCalls) +
        ",\"recording_timed_ns\":" + std::to_string(t.recordingSampledNs));
  TraceSummary s = summarize(t);
  j.raw(",\"summary\":{\"calls\":" + std::to_string(s.calls) + ",\"allocations\":" + std::to_string(s.allocations) +
        ",\"frees\":" + std::to_string(s.frees) + ",\"reallocs\":" + std::to_string(s.reallocs) +
        ",\"h2d_bytes\":" + std::to_string(s.h2dBytes) + ",\"d2h_bytes\":" + std::to_string(s.d2hBytes) +
        ",\"h2d_transfers\":" + std::to_string(s.h2dTransfers) + ",\"d2h_transfers\":" + std::to_string(s.d2hTransfers) +
        ",\"mapped_bytes\":" + std::to_string(s.mappedBytes) + ",\"wrapped_bytes\":" + std::to_string(s.wrappedBytes) +
        ",\"kernels\":" + std::to_string(s.kernels) + ",\"kernel_ns\":" + std::to_string(s.kernelNs) +
        ",\"transfer_ns\":" + std::to_string(s.transferNs) + ",\"other_device_ns\":" + std::to_string(s.otherDeviceNs) +
        ",\"launch_latency_ns\":" + std::to_string(s.launchLatencyNs) + ",\"host_call_ns\":" + std::to_string(s.hostCallNs) +
        ",\"device_missing\":" + std::to_string(s.deviceMissing) + ",\"device_timed\":" + std::to_string(s.deviceTimed) +
        ",\"device_sampled_out\":" + std::to_string(s.deviceUnsampled) +
        ",\"recording_ns\":" + std::to_string(static_cast<uint64_t>(s.recordingNs)) +
        ",\"first_call_ns\":" + std::to_string(t.firstCallNs) +
        ",\"first_context_ns\":" + std::to_string(t.firstContextNs) + ",\"calls_by_function\":{");
  bool first = true;
  for (const auto& [name, count] : s.callsByFunction) {
    if (!first) j.raw(",");
    first = false;
    j.key(name.c_str());
    j.num(count);
  }
  j.raw("},\"by_object\":[");
  first = true;
  for (const auto& [id, b] : s.byObject) {
    if (!first) j.raw(",");
    first = false;
    j.raw("{\"object\":" + std::to_string(id) + ",\"h2d_bytes\":" + std::to_string(b.h2dBytes) +
          ",\"d2h_bytes\":" + std::to_string(b.d2hBytes) + ",\"h2d_transfers\":" + std::to_string(b.h2dTransfers) +
          ",\"d2h_transfers\":" + std::to_string(b.d2hTransfers) + "}");
  }
  j.raw("]},\"modules\":[");
  for (size_t i = 0; i < t.modules.size(); ++i) {
    const TraceModule& m = t.modules[i];
    if (i) j.raw(",");
    j.raw("{\"id\":" + std::to_string(i) + ",\"path\":");
    j.str(m.path);
    j.raw(",\"build_id\":");
    j.str(m.buildId);
    j.raw(",\"start\":" + std::to_string(m.start) + ",\"end\":" + std::to_string(m.end) +
          ",\"bias\":" + std::to_string(m.bias) + "}");
  }
  j.raw("],\"sites\":[");
  for (size_t i = 0; i < t.sites.size(); ++i) {
    if (i) j.raw(",");
    j.raw("{\"id\":" + std::to_string(i) + ",\"frames\":[");
    for (size_t f = 0; f < t.sites[i].frames.size(); ++f) {
      const TraceFrame& fr = t.sites[i].frames[f];
      if (f) j.raw(",");
      j.raw("{\"pc\":" + std::to_string(fr.pc) + ",\"module\":" + std::to_string(fr.module) +
            ",\"offset\":" + std::to_string(fr.offset) + "}");
    }
    j.raw("]}");
  }
  j.raw("],\"objects\":[");
  first = true;
  for (const auto& [id, o] : t.objects) {
    if (!first) j.raw(",");
    first = false;
    const ObjectInfo& i = o.info;
    j.raw("{\"id\":" + std::to_string(id) + ",\"kind\":");
    j.str(objectKindName(o.kind));
    if (i.fields & kObjAddress) j.raw(",\"address\":" + std::to_string(i.address) + ",\"size\":" + std::to_string(i.size));
    if (i.fields & kObjSite) {
      j.raw(",\"site\":" + (i.site ? std::to_string(i.site - 1) : std::string("null")) + ",\"allocator\":");
      j.str(allocatorName(i.allocFn));
    }
    if (i.fields & kObjLabel) {
      j.raw(",\"label\":");
      j.str(i.label);
    }
    if (i.fields & kObjRegion) {
      j.raw(",\"region\":");
      j.str(regionClassName(i.region));
      j.raw(",\"mapping\":{\"start\":" + std::to_string(i.mapStart) + ",\"end\":" + std::to_string(i.mapEnd) +
            ",\"offset\":" + std::to_string(i.mapOffset) + ",\"name\":");
      j.str(i.mapName);
      j.raw("}");
    }
    if (i.fields & kObjParent) j.raw(",\"related\":" + std::to_string(i.related));
    if (i.fields & kObjModule) j.raw(",\"module\":" + std::to_string(static_cast<int64_t>(i.module) - 1));
    j.raw("}");
  }
  j.raw("],\"threads\":[");
  for (size_t ti = 0; ti < t.threads.size(); ++ti) {
    const TraceThread& th = t.threads[ti];
    if (ti) j.raw(",");
    j.raw("{\"index\":" + std::to_string(th.index) + ",\"tid\":" + std::to_string(th.tid) + ",\"entries\":[");
    for (size_t e = 0; e < th.entries.size(); ++e) {
      if (e) j.raw(",");
      jsonNode(t, th.entries[e], j);
    }
    j.raw("]}");
  }
  j.raw("]}\n");
  return j.text();
}

void printText(const Trace& t) {
  printf("hetopt trace, format %u, written by hetopt %s, %s\n", t.formatVersion, t.writerVersion.c_str(),
         bytesText(t.fileBytes).c_str());
  std::string args = t.header.arguments;
  for (char& c : args)
    if (c == '\0') c = ' ';
  printf("program: %s (pid %" PRIu64 ", parent %" PRIu64 ")\n", args.empty() ? t.header.program.c_str() : args.c_str(),
         t.header.pid, t.header.parentPid);
  static const char* const kScriptKinds[] = {"", "script", "module", "code"};
  if (t.header.scriptKind > 0 && t.header.scriptKind < 4)
    printf("runs: %s %s%s%s\n", kScriptKinds[t.header.scriptKind], t.header.scriptName.c_str(),
           t.header.scriptHash.empty() ? "" : t.header.scriptName.empty() ? "sha256:" : " sha256:",
           t.header.scriptHash.c_str());
  printf("%s, %s traced\n",
         t.complete ? "complete"
                    : "INCOMPLETE (the program did not exit normally, or the trace could not be "
                      "written to its end; up to its last checkpoint)",
         timeText(static_cast<double>(t.durationNs)).c_str());
  for (const TraceThread& th : t.threads) {
    if (th.entries.empty()) continue;
    printf("\nthread %u (tid %" PRIu64 "):\n", th.index, th.tid);
    for (uint32_t e : th.entries) printNode(t, e, 0);
  }
  printf("\nhost memory:\n");
  for (const auto& [id, o] : t.objects) {
    const ObjectInfo& i = o.info;
    if (o.kind == ObjectKind::Segment) {
      printf("  %s  %s at 0x%" PRIx64, objectName(t, id).c_str(), bytesText(i.size).c_str(), i.address);
      if (i.site) printf("  site#%u", i.site - 1);
      if (i.fields & kObjParent) printf("  from %s", objectName(t, i.related).c_str());
      printf("\n");
    } else if (o.kind == ObjectKind::Untracked) {
      printf("  %s  %s at 0x%" PRIx64 "  %s %s\n", objectName(t, id).c_str(), bytesText(i.size).c_str(), i.address,
             regionClassName(i.region), i.mapName.c_str());
    }
  }
  if (!t.sites.empty()) printf("\nallocation sites:\n");
  for (size_t s = 0; s < t.sites.size(); ++s) {
    printf("  site#%zu ", s);
    for (size_t f = 0; f < t.sites[s].frames.size(); ++f)
      printf("%s%s", f ? " <- " : "", frameText(t, t.sites[s].frames[f]).c_str());
    printf("\n");
  }
  printf("\n");
  printSummary(t, stdout);
}

}  // namespace

void printTraceSummary(const trace::Trace& t, FILE* out) { printSummary(t, out); }

int cmdShow(int argc, char** argv) {
  bool json = false, salvage = false;
  std::string file;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf(
          "usage: hetopt show [--json] [--salvage] FILE\n\n"
          "Prints a trace written by `hetopt trace`: per thread, every call and host allocation with\n"
          "its loop counts, the objects it defines (def) and uses (use) with their SSA versions,\n"
          "bytes moved and host/device times; then host memory, allocation sites and a summary.\n\n"
          "  --json     the whole trace as one JSON object (for tools)\n"
          "  --salvage  show what precedes a damaged part instead of refusing the file\n");
      return 0;
    }
    if (!strcmp(argv[i], "--json")) {
      json = true;
    } else if (!strcmp(argv[i], "--salvage")) {
      salvage = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      warn("show: unknown option %s (see hetopt show --help)", argv[i]);
      return 2;
    } else if (file.empty()) {
      file = argv[i];
    } else {
      warn("show: one trace file at a time");
      return 2;
    }
  }
  if (file.empty()) {
    warn("show: no trace file given (see hetopt show --help)");
    return 2;
  }
  Trace t;
  std::string error;
  ReadOptions options;
  options.salvage = salvage;
  if (!readTraceFile(file, &t, &error, options)) {
    warn("show: %s", error.c_str());
    return 2;  // like analyze: the input is the problem
  }
  // Salvaging: say what was cut off, and fail when nothing preceded it.
  if (salvage && t.nodes.empty()) {
    warn("show: nothing to salvage in %s: %s", file.c_str(),
         error.empty() ? "no call or allocation was recorded" : error.c_str());
    return 2;
  }
  if (salvage && !error.empty()) warn("show: salvaged what precedes the damage: %s", error.c_str());
  if (json)
    fputs(toJson(t).c_str(), stdout);
  else
    printText(t);
  return 0;
}

}  // namespace hetopt::cli
