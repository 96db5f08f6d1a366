// SPDX-License-Identifier: MIT
/** @file Text and JSON forms of the profile; see report.h.
 * Sites printed in report order, those of one library gathered under its heading; the JSON form. */
#include "analyzer/report.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>

#include "common/json_writer.h"
#include "common/paths.h"

namespace hetopt::analyzer {

void appendf(std::string* out, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (static_cast<size_t>(n) < sizeof buf) {
    out->append(buf, n);
    return;
  }
  std::string big(static_cast<size_t>(n) + 1, '\0');
  va_start(ap, fmt);
  vsnprintf(big.data(), big.size(), fmt, ap);
  va_end(ap);
  big.resize(n);
  *out += big;
}

namespace {

std::string percent(double fraction) {
  char buf[32];
  snprintf(buf, sizeof buf, "%5.1f%%", 100 * fraction);
  return buf;
}

// "  <label>  <duration> <share><rest>", one row of the breakdown tables.
void breakdownRow(std::string* r, const Breakdown& b, const char* label, double ns,
                  const std::string& rest = "") {
  appendf(r, "  %-14s %10s %s%s\n", label, formatDuration(ns).c_str(),
          percent(b.fraction(ns)).c_str(), rest.c_str());
}

std::string transferLine(const char* dir, const TransferStats& t) {
  if (t.transfers == 0) return std::string(dir) + " none";
  std::string s = std::string(dir) + " " + std::to_string(t.transfers) + " x ";
  // Several sizes: the one that carries the most bytes, said so (not an average).
  s += t.sizes.size() <= 1
           ? formatBytes(t.typicalBytes)
           : formatBytes(t.typicalBytes) + " mostly, " + std::to_string(t.sizes.size()) + " sizes";
  s += " (" + formatBytes(t.bytes);
  if (t.deviceNs > 0) s += ", " + formatDuration(t.deviceNs);
  return s + ")";
}

void writeTransfers(JsonWriter& j, const char* name, const TransferStats& t) {
  j.key(name).beginObject();
  j.member("transfers", t.transfers).member("bytes", t.bytes);
  j.member("typical_bytes", t.typicalBytes).member("max_bytes", t.maxBytes);
  j.member("device_ns", t.deviceNs);
  j.key("sizes").beginArray();
  for (const TransferStats::SizeCount& s : t.sizes)
    j.beginObject().member("bytes", s.bytes).member("count", s.count).endObject();
  j.endArray();
  j.endObject();
}

void writeLocation(JsonWriter& j, const SiteLocation& loc) {
  j.key("location").beginObject();
  j.member("text", loc.describe(false));
  j.member("has_source", loc.hasSource);
  j.member("function", loc.source.function);
  j.member("file", loc.source.file);
  j.member("line", static_cast<uint64_t>(loc.source.line));
  j.member("module", loc.modulePath);
  j.member("offset", loc.offset);
  if (!loc.note.empty()) j.member("note", loc.note);
  j.key("callers").beginArray();
  for (const SourceFrame& f : loc.callers)
    j.beginObject()
        .member("function", f.function)
        .member("file", f.file)
        .member("line", static_cast<uint64_t>(f.line))
        .endObject();
  j.endArray();
  j.endObject();
}

/// "libfoo.so+0x1a2b"
std::string frameText(const ModulePc& f) {
  char off[32];
  snprintf(off, sizeof off, "+0x%" PRIx64, f.offset);
  return baseName(f.modulePath) + off;
}

void mergeTransfers(TransferStats* into, const TransferStats& from) {
  const uint64_t transfers = into->transfers + from.transfers, bytes = into->bytes + from.bytes;
  for (const TransferStats::SizeCount& sc : from.sizes) into->add(sc.bytes, sc.count, 0);
  into->finish();
  into->transfers = transfers;  // the stored sizes may be fewer than all: the totals stay exact
  into->bytes = bytes;
  into->maxBytes = std::max(into->maxBytes, from.maxBytes);
  into->deviceNs += from.deviceNs;
}

/// One site printed: a candidate, or several whose stacks print alike as far as the trace
/// recorded them (one site reached through frames the trace tells apart only by module identity,
/// say), merged into one.
struct PrintedSite {
  CandidateSite site;
  std::vector<ModulePc> via;  ///< frames printed after the location, innermost first
  size_t merged = 1;
};

/// What the report prints for each candidate. A location without a source line is followed by
/// its frames out to the first one in the program's own executable (a wrapper inside a library is
/// not the site); where two sites still print alike, each gets further frames until they differ;
/// those that print alike with every recorded frame are one entry.
std::vector<PrintedSite> printedSites(const AppProfile& p) {
  const size_t n = p.candidates.size();
  std::vector<size_t> first(n, 0), depth(n, 0);  // frames after the location; how many printed
  for (size_t i = 0; i < n; ++i) {
    const CandidateSite& c = p.candidates[i];
    for (size_t k = 0; k < c.frames.size(); ++k)
      if (c.frames[k].modulePath == c.location.modulePath &&
          c.frames[k].offset == c.location.offset) {
        first[i] = k + 1;
        break;
      }
    if (c.location.hasSource || c.location.modulePath == p.program.path) continue;
    while (first[i] + depth[i] < c.frames.size() &&
           c.frames[first[i] + depth[i]++].modulePath != p.program.path) {
    }
  }
  auto text = [&](size_t i, size_t frames) {
    const CandidateSite& c = p.candidates[i];
    std::string t = c.location.describe() + '\n' + c.location.describeCallers();
    for (size_t k = 0; k < frames && first[i] + k < c.frames.size(); ++k)
      t += '\n' + frameText(c.frames[first[i] + k]);
    return t;
  };
  for (bool grew = true; grew;) {
    grew = false;
    std::map<std::string, std::vector<size_t>> byText;
    for (size_t i = 0; i < n; ++i) byText[text(i, depth[i])].push_back(i);
    for (const auto& [t, group] : byText) {
      std::map<std::string, size_t> whole;  // alike with every frame: merged, not extended
      for (size_t i : group) ++whole[text(i, SIZE_MAX)];
      if (whole.size() < 2) continue;
      for (size_t i : group)
        if (first[i] + depth[i] < p.candidates[i].frames.size()) ++depth[i], grew = true;
    }
  }
  std::vector<PrintedSite> out;
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < n; ++i) {
    const CandidateSite& c = p.candidates[i];
    auto [it, fresh] = seen.emplace(text(i, depth[i]), out.size());
    if (fresh) {
      PrintedSite ps{c, {}, 1};
      for (size_t k = 0; k < depth[i]; ++k) ps.via.push_back(c.frames[first[i] + k]);
      out.push_back(std::move(ps));
      continue;
    }
    CandidateSite& m = out[it->second].site;
    ++out[it->second].merged;
    m.allocations += c.allocations;
    m.feedingAllocations += c.feedingAllocations;
    m.minAllocBytes = std::min(m.minAllocBytes, c.minAllocBytes);
    m.maxAllocBytes = std::max(m.maxAllocBytes, c.maxAllocBytes);
    m.peakLiveBytes += c.peakLiveBytes;  // at most: they may not have been alive at once
    m.peakLiveBlocks += c.peakLiveBlocks;
    mergeTransfers(&m.h2d, c.h2d);
    mergeTransfers(&m.d2h, c.d2h);
    if (m.gain.known && c.gain.known && m.gain.policy == c.gain.policy &&
        m.gain.allocMode == c.gain.allocMode) {
      m.gain.standardNs += c.gain.standardNs;
      m.gain.optimizedNs += c.gain.optimizedNs;
    } else if (m.gain.known || c.gain.known) {
      m.gain.known = false;
      m.gain.note = "differs between the merged sites (see --json)";
    }
  }
  return out;
}

/// Where a site lies when that is not the program's own code: a shared library (a Python
/// package's extension modules count as their package), or the interpreter running a script.
struct Library {
  std::string name;  ///< "numpy", "libfoo.so.1", "the interpreter"
  std::string path;  ///< the package's folder, else the module
};

/// False for a site in the program's own code: a source line there, or its executable (unless
/// that is the interpreter of a script).
bool siteLibrary(const AppProfile& p, const SiteLocation& loc, Library* out) {
  const std::string& m = loc.modulePath;
  if (loc.hasSource || m.empty()) return false;
  if (m == p.program.path) {
    if (p.program.script.kind == ScriptRef::Kind::None) return false;
    *out = {"the interpreter", m};
    return true;
  }
  for (const char* dir : {"/site-packages/", "/dist-packages/"}) {
    const size_t at = m.find(dir);
    if (at == std::string::npos) continue;
    const size_t from = at + strlen(dir), slash = m.find('/', from);
    if (slash == std::string::npos) {  // a top-level extension module: its name up to the first dot
      *out = {m.substr(from, m.find('.', from) - from), m};
    } else {
      *out = {m.substr(from, slash - from), m.substr(0, slash)};
    }
    return true;
  }
  *out = {baseName(m), m};
  return true;
}

/// Printed sites in report order, those of a library with two or more of them gathered at the
/// first one's place under that library's heading.
struct SiteGroup {
  bool headed = false;
  Library library;
  std::vector<size_t> members;  ///< indices into the printed sites
};

std::vector<SiteGroup> groupByLibrary(const AppProfile& p, const std::vector<PrintedSite>& sites) {
  std::vector<Library> libs(sites.size());
  std::map<std::string, std::vector<size_t>> byPath;
  for (size_t i = 0; i < sites.size(); ++i)
    if (siteLibrary(p, sites[i].site.location, &libs[i])) byPath[libs[i].path].push_back(i);
  std::vector<SiteGroup> out;
  for (size_t i = 0; i < sites.size(); ++i) {
    const auto it = byPath.find(libs[i].path);
    if (it == byPath.end() || it->second.size() < 2) {
      out.push_back({false, {}, {i}});
    } else if (it->second.front() == i) {
      out.push_back({true, libs[i], it->second});
    }
  }
  return out;
}

/// The heading of a library's sites: what they add up to, and the note they all share (returns
/// whether it printed one).
bool libraryHeading(std::string* r, const SiteGroup& g, const std::vector<PrintedSite>& sites) {
  uint64_t allocations = 0, peak = 0;
  TransferStats h2d, d2h;
  std::map<std::string, size_t> notes;
  for (size_t i : g.members) {
    const CandidateSite& c = sites[i].site;
    allocations += c.allocations;
    peak += c.peakLiveBytes;
    mergeTransfers(&h2d, c.h2d);
    mergeTransfers(&d2h, c.d2h);
    ++notes[c.location.note];
  }
  appendf(r, "  %s (%s): %zu sites inside it, not the program's own code\n", g.library.name.c_str(),
          g.library.path.c_str(), g.members.size());
  appendf(r, "      together: %" PRIu64 " allocations, peak live at most %s; %s   %s\n",
          allocations, formatBytes(peak).c_str(), transferLine("h2d", h2d).c_str(),
          transferLine("d2h", d2h).c_str());
  if (notes.size() != 1 || notes.begin()->first.empty()) return false;
  appendf(r, "      (%s)\n", notes.begin()->first.c_str());
  return true;
}

/// One candidate: location, how it is told apart, sizes, transfers, prediction. Inside a library's
/// group (`grouped`): indented, the note left to the heading when it gave it (`showNote` false),
/// and frames in the location's own module as "+0x..." (the module is the line above).
void siteEntry(std::string* r, const PrintedSite& ps, int number, bool grouped, bool showNote) {
  const char* indent = grouped ? "  " : "";
  const CandidateSite& c = ps.site;
  appendf(r, "%s  #%d %s\n", indent, number, c.location.describe().c_str());
  if (ps.merged > 1)
    appendf(r, "%s      (%zu sites whose recorded frames all print alike: shown as one)\n", indent,
            ps.merged);
  if (c.location.hasSource) appendf(r, "%s      %s\n", indent, c.location.source.file.c_str());
  if (!c.location.callers.empty())
    appendf(r, "%s      %s\n", indent, c.location.describeCallers().c_str());
  else if (!c.location.note.empty() && showNote)
    appendf(r, "%s      (%s)\n", indent, c.location.note.c_str());
  if (!ps.via.empty()) {
    std::string via;
    for (const ModulePc& f : ps.via) {
      std::string t = frameText(f);
      if (grouped && f.modulePath == c.location.modulePath) t.erase(0, t.find('+'));
      via += (via.empty() ? "called from " : ", from ") + t;
    }
    appendf(r, "%s      %s\n", indent, via.c_str());
  }
  appendf(r, "%s      %s: %" PRIu64 " allocation%s", indent, c.allocator.c_str(), c.allocations,
          c.allocations == 1 ? "" : "s");
  if (c.minAllocBytes == c.maxAllocBytes)
    appendf(r, " of %s", formatBytes(c.maxAllocBytes).c_str());
  else
    appendf(r, " of %s..%s", formatBytes(c.minAllocBytes).c_str(),
            formatBytes(c.maxAllocBytes).c_str());
  appendf(r, ", peak live %s in %" PRIu64 " block%s\n", formatBytes(c.peakLiveBytes).c_str(),
          c.peakLiveBlocks, c.peakLiveBlocks == 1 ? "" : "s");
  appendf(r, "%s      %s   %s\n", indent, transferLine("h2d", c.h2d).c_str(),
          transferLine("d2h", c.d2h).c_str());
  if (c.gain.known && c.gain.policy == "standard") {
    appendf(r, "%s      predicted: malloc memory is already the best for these sizes here (%s)\n",
            indent, formatDuration(c.gain.standardNs).c_str());
  } else if (c.gain.known) {
    // The transfers as priced: the larger of their traced time and the pageable curves' (gain.h);
    // above the traced time shown just before, it says where the number comes from.
    const double traced = c.h2d.deviceNs + c.d2h.deviceNs;
    const std::string source =
        traced > 0 && c.gain.standardNs > traced * 1.0005
            ? " (the pageable transfers by this machine's curves, above the " +
                  formatDuration(traced) + " traced)"
            : "";
    appendf(r, "%s      predicted: %s (%s) %s of %s%s\n", indent, c.gain.policy.c_str(),
            c.gain.allocMode.c_str(), c.gain.savingText().c_str(),
            formatDuration(c.gain.standardNs).c_str(), source.c_str());
  } else {
    appendf(r, "%s      predicted gain: %s\n", indent, c.gain.note.c_str());
  }
}

}  // namespace

std::string formatReport(const AppProfile& p) {
  std::string r;
  appendf(&r, "hetopt analysis of %s\n", p.program.describe().c_str());
  appendf(&r, "  identity %s\n", p.program.key().c_str());
  if (!p.program.profileName.empty()) appendf(&r, "  profile  %s\n", p.program.profileName.c_str());
  if (!p.traceFile.empty()) appendf(&r, "  trace    %s\n", p.traceFile.c_str());
  if (!p.device.empty()) appendf(&r, "  device   %s\n", p.device.c_str());

  const Eligibility& e = p.eligibility;
  appendf(&r, "\nEligibility: %s\n", e.eligible ? "ELIGIBLE" : "NOT ELIGIBLE");
  appendf(&r, "  %s\n", e.reason.c_str());

  const Breakdown& b = p.breakdown;
  std::string sampled;
  if (b.hasDeviceTimes && b.deviceUnsampled)
    sampled = " -- device times sampled: " + std::to_string(b.deviceTimed) + " of " +
              std::to_string(b.deviceTimed + b.deviceUnsampled) +
              " commands timed, the others estimated from their call's timed mean";
  appendf(&r, "\nExecution breakdown (total %s)%s\n", formatDuration(b.totalNs).c_str(),
          b.hasDeviceTimes ? sampled.c_str()
                           : " -- no device timestamps in the trace: device parts unknown");
  breakdownRow(&r, b, "kernel", b.kernelNs);
  breakdownRow(&r, b, "communication", b.communicationNs);
  breakdownRow(&r, b, "cpu+sync", b.cpuSyncNs);
  if (b.recordingNs > 0)
    appendf(&r, "    of which hetopt's recording %s %s (tracing only: not in an untraced run)\n",
            formatDuration(b.recordingNs).c_str(), percent(b.fraction(b.recordingNs)).c_str());
  Breakdown predicted;
  if (predictOptimizedBreakdown(p, &predicted) && b.totalNs > 0)
    appendf(&r,
            "  predicted with the best policies for the candidate sites: communication %s, "
            "total %s (%.1f%% less)\n",
            formatDuration(predicted.communicationNs).c_str(),
            formatDuration(predicted.totalNs).c_str(),
            100 * (b.totalNs - predicted.totalNs) / b.totalNs);
  // Shares that do not overlap, also for a profile stored before they were made so.
  Breakdown overhead = b;
  overhead.fitOverheads();
  appendf(&r, "Offload overhead (fractions of total time, not overlapping)\n");
  breakdownRow(&r, b, "host-to-device", overhead.h2dNs);
  breakdownRow(&r, b, "kernel launch", overhead.launchNs,
               "  (" + std::to_string(b.kernels) + " kernels)");
  breakdownRow(&r, b, "device-to-host", overhead.d2hNs);
  breakdownRow(&r, b, "dispatch/sync", overhead.dispatchSyncNs,
               "  (host time in enqueue and wait calls beyond the rows above)");
  if (b.setupNs > 0)
    breakdownRow(&r, b, "OpenCL set-up", overhead.setupNs,
                 "  (queries, contexts, program builds: part of cpu+sync)");

  uint64_t sites = p.candidates.size() + p.hostOnlySites;
  appendf(&r,
          "\nCandidate allocation sites: %zu of %" PRIu64 " tracked sites (%" PRIu64
          " host-only sites, %" PRIu64 " of %" PRIu64 " allocations host-only)\n",
          p.candidates.size(), sites, p.hostOnlySites, p.hostOnlyAllocations, p.trackedAllocations);
  const std::vector<PrintedSite> printed = printedSites(p);
  int n = 0;
  for (const SiteGroup& g : groupByLibrary(p, printed)) {
    const bool noteShown = g.headed && libraryHeading(&r, g, printed);
    for (size_t i : g.members) siteEntry(&r, printed[i], ++n, g.headed, !noteShown);
  }
  if (!p.untracked.empty()) {
    appendf(&r,
            "\nTransferred memory no tracked allocation made (can only be registered in place)\n");
    for (const UntrackedMemory& u : p.untracked) {
      appendf(&r, "  %-7s %s", untrackedKindName(u.kind), u.what.c_str());
      if (!u.modulePath.empty()) appendf(&r, " in %s", baseName(u.modulePath).c_str());
      if (u.regionBytes) appendf(&r, ", %s", formatBytes(u.regionBytes).c_str());
      appendf(&r, "\n      %s   %s\n", transferLine("h2d", u.h2d).c_str(),
              transferLine("d2h", u.d2h).c_str());
      if (u.gain.known)
        appendf(&r, "      predicted: registering it in place %s of %s\n",
                u.gain.savingText().c_str(), formatDuration(u.gain.standardNs).c_str());
      else if (!u.gain.note.empty())
        appendf(&r, "      predicted gain: %s\n", u.gain.note.c_str());
    }
  }
  if (p.openclMapped.h2d.transfers + p.openclMapped.d2h.transfers > 0) {
    appendf(&r,
            "\nTransfers from memory mapped from OpenCL buffers (already pinned, nothing to do)\n");
    appendf(&r, "      %s   %s\n", transferLine("h2d", p.openclMapped.h2d).c_str(),
            transferLine("d2h", p.openclMapped.d2h).c_str());
  }
  if (!p.warnings.empty()) {
    appendf(&r, "\nWarnings\n");
    for (const std::string& w : p.warnings) appendf(&r, "  %s\n", w.c_str());
  }
  return r;
}

std::string profileToJson(const AppProfile& p) {
  std::string out;
  JsonWriter j(&out);
  j.beginObject();
  j.member("format", kProfileJsonFormat);
  j.key("program").beginObject();
  j.member("path", p.program.path).member("build_id", p.program.buildId);
  j.member("content_hash", p.program.contentHash).member("key", p.program.key());
  if (p.program.script.kind != ScriptRef::Kind::None) j.member("runs", p.program.describe());
  if (!p.program.profileName.empty()) j.member("profile_name", p.program.profileName);
  j.endObject();
  j.member("trace", p.traceFile).member("device", p.device);
  j.member("created_utc", p.createdUtc).member("hetopt_version", p.hetoptVersion);

  const Eligibility& e = p.eligibility;
  j.key("eligibility").beginObject();
  j.member("eligible", e.eligible).member("ratio", e.ratio).member("threshold", e.threshold);
  j.member("communication_ns", e.communicationNs).member("computation_ns", e.computationNs);
  j.member("reason", e.reason);
  j.endObject();

  const Breakdown& b = p.breakdown;
  j.key("breakdown").beginObject();
  j.member("has_device_times", b.hasDeviceTimes);
  j.member("total_ns", b.totalNs).member("kernel_ns", b.kernelNs);
  j.member("communication_ns", b.communicationNs).member("cpu_sync_ns", b.cpuSyncNs);
  j.member("h2d_ns", b.h2dNs).member("launch_ns", b.launchNs).member("d2h_ns", b.d2hNs);
  j.member("dispatch_sync_ns", b.dispatchSyncNs).member("setup_ns", b.setupNs);
  j.member("recording_ns", b.recordingNs);
  j.member("kernels", b.kernels);
  j.member("device_timed_commands", b.deviceTimed)
      .member("device_sampled_out_commands", b.deviceUnsampled);
  j.endObject();

  j.key("candidates").beginArray();
  for (const CandidateSite& c : p.candidates) {
    j.beginObject();
    char key[24];
    snprintf(key, sizeof key, "%016" PRIx64, c.siteKey);
    j.member("site_key", std::string(key));
    writeLocation(j, c.location);
    Library lib;
    if (siteLibrary(p, c.location, &lib))
      j.member("library", lib.name).member("library_path", lib.path);
    j.key("frames").beginArray();
    for (const ModulePc& f : c.frames)
      j.beginObject()
          .member("module", f.modulePath)
          .member("build_id", f.buildId)
          .member("offset", f.offset)
          .endObject();
    j.endArray();
    j.member("allocator", c.allocator).member("allocations", c.allocations);
    j.member("feeding_allocations", c.feedingAllocations);
    j.member("min_alloc_bytes", c.minAllocBytes).member("max_alloc_bytes", c.maxAllocBytes);
    j.member("typical_alloc_bytes", c.typicalAllocBytes);
    j.member("peak_live_bytes", c.peakLiveBytes).member("peak_live_blocks", c.peakLiveBlocks);
    j.member("allocated_before_opencl", c.allocatedBeforeOpenCL).member("lead_ns", c.leadNs);
    writeTransfers(j, "h2d", c.h2d);
    writeTransfers(j, "d2h", c.d2h);
    j.key("gain").beginObject();
    j.member("known", c.gain.known).member("note", c.gain.note);
    if (c.gain.known) {
      j.member("policy", c.gain.policy).member("alloc_mode", c.gain.allocMode);
      j.member("standard_ns", c.gain.standardNs).member("optimized_ns", c.gain.optimizedNs);
      j.member("saving_ns", c.gain.savingNs());
    }
    j.endObject();
    j.endObject();
  }
  j.endArray();
  j.member("host_only_sites", p.hostOnlySites)
      .member("host_only_allocations", p.hostOnlyAllocations);
  j.member("tracked_allocations", p.trackedAllocations);
  j.key("untracked").beginArray();
  for (const UntrackedMemory& u : p.untracked) {
    j.beginObject();
    j.member("kind", untrackedKindName(u.kind)).member("what", u.what);
    j.member("module", u.modulePath).member("region_bytes", u.regionBytes);
    j.member("registrable", u.registrable());
    if (u.kind == UntrackedMemory::Kind::Static) j.member("module_offset", u.moduleOffset);
    if (u.kind == UntrackedMemory::Kind::Mmap)
      j.member("map_bytes", u.mapBytes).member("anonymous", u.anonymous);
    writeTransfers(j, "h2d", u.h2d);
    writeTransfers(j, "d2h", u.d2h);
    j.member("gain_known", u.gain.known);
    if (u.gain.known)
      j.member("standard_ns", u.gain.standardNs).member("optimized_ns", u.gain.optimizedNs);
    j.endObject();
  }
  j.endArray();
  j.key("opencl_mapped").beginObject();
  writeTransfers(j, "h2d", p.openclMapped.h2d);
  writeTransfers(j, "d2h", p.openclMapped.d2h);
  j.endObject();
  j.key("warnings").beginArray();
  for (const std::string& w : p.warnings) j.value(w);
  j.endArray();
  j.endObject();
  out += '\n';
  return out;
}

}  // namespace hetopt::analyzer
