// SPDX-License-Identifier: MIT
/** @file Eligibility, candidate sites and breakdown of a trace; see analysis.h.
 * The Analyzer's steps in order (run()): calls, allocations, replay, sites, breakdown. */
#include "analyzer/analysis.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "analyzer/report.h"
#include "api_table.h"
#include "common/paths.h"
#include "common/units.h"
#include "contracts/site_key.h"

namespace hetopt::analyzer {
namespace {

using trace::HostAccess;
using trace::ObjectId;
using trace::ObjectKind;
using trace::Trace;
using trace::TraceNode;
using trace::TraceObject;

enum class Dir { H2D, D2H };

bool isCall(const TraceNode& n) { return !n.loop && n.type == trace::LeafType::Call; }

api::ApiKind callKind(const TraceNode& n) {
  return api::apiInfo(static_cast<api::ApiId>(n.code)).kind;
}

/// Calls that put work on a device or wait for it (host dispatch/sync overhead), as
/// opposed to set-up: platform queries, context/queue/buffer creation, program builds, releases.
bool isDispatch(api::ApiKind k) {
  switch (k) {
    case api::ApiKind::H2d:
    case api::ApiKind::D2h:
    case api::ApiKind::D2d:
    case api::ApiKind::Fill:
    case api::ApiKind::Map:
    case api::ApiKind::Unmap:
    case api::ApiKind::Launch:
    case api::ApiKind::SvmCopy:
    case api::ApiKind::Migrate:
    case api::ApiKind::Sync:
    case api::ApiKind::Marker:
    case api::ApiKind::SetArg:
      return true;
    default:
      return false;
  }
}

/// Which way a host ref moves data, and whether it counts for an object of `kind`. A map's host
/// range inside an application allocation (USE_HOST_PTR) is filled from the device, an unmap's
/// written back; a map of a device buffer returns driver memory, which is not the application's.
bool hostRefDirection(const trace::Ref& r, ObjectKind kind, Dir* dir) {
  if (!(r.flags & trace::kRefHost)) return false;
  switch (r.access) {
    case HostAccess::Read:
    case HostAccess::Wrap:
      *dir = Dir::H2D;
      return kind == ObjectKind::Segment || kind == ObjectKind::Untracked;
    case HostAccess::Write:
      *dir = Dir::D2H;
      return kind == ObjectKind::Segment || kind == ObjectKind::Untracked;
    case HostAccess::Mapped:
      *dir = Dir::D2H;
      return kind == ObjectKind::Segment;
    case HostAccess::Unmap:
      *dir = Dir::H2D;
      return kind == ObjectKind::Segment;
    case HostAccess::None:
      break;
  }
  return false;
}

std::string percentText(double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

/// Per allocation site (index + 1 as in the trace; 0 unused).
struct SiteAcc {
  uint64_t allocations = 0, feeding = 0;
  uint64_t minBytes = UINT64_MAX, maxBytes = 0;
  std::map<uint64_t, uint64_t> sizeCounts;
  std::string allocator;
  TransferStats h2d, d2h;
  bool candidate = false;
  // program order (orderSites): the first block before any OpenCL call; the OpenCL host time
  // between the first context and the first transfer
  bool allocSeen = false, transferSeen = false, allocatedBeforeOpenCL = false;
  uint64_t leadNs = 0;
  double leadAtAlloc = 0;             ///< the thread's lead when the first block came
  uint32_t allocThread = UINT32_MAX;  ///< trace thread index
  // replay of allocations and frees
  int64_t live = 0, liveBlocks = 0;
  int64_t peak = 0, peakBlocks = 0;
};

class Analyzer {
 public:
  Analyzer(const Trace& t, const AnalysisOptions& o, AppProfile* out)
      : m_t(t), m_opt(o), m_out(out), m_sites(t.sites.size() + 1) {}

  void run() {
    scanCalls();
    scanAllocations();
    replay();
    orderSites();
    buildCandidates();
    buildUntracked();
    eligibilityAndBreakdown();
  }

 private:
  /// The first version of a segment: realloc sources followed back (bounded: a corrupt trace
  /// may link objects in a cycle).
  const TraceObject* root(const TraceObject* o) const {
    for (int i = 0; i < 1024 && o; ++i) {
      if (!(o->info.fields & trace::kObjParent)) return o;
      const TraceObject* parent = m_t.object(o->info.related);
      if (!parent || parent->kind != ObjectKind::Segment) return o;
      o = parent;
    }
    return o;
  }
  void markFed(const TraceObject* o) {
    for (int i = 0; i < 1024 && o; ++i) {
      m_fed.insert(o->id);
      if (!(o->info.fields & trace::kObjParent)) return;
      const TraceObject* parent = m_t.object(o->info.related);
      if (!parent || parent->kind != ObjectKind::Segment) return;
      o = parent;
    }
  }
  uint32_t siteOf(const TraceObject* o) const {
    return o && o->info.site <= m_t.sites.size() ? o->info.site : 0;
  }

  void scanCalls() {
    // Host memory a map returned belongs to an OpenCL buffer: already the driver's (pinned)
    // memory, as in hand-pinned code. Transfers from it are not the application's to improve.
    std::set<ObjectId> mapped;
    for (const TraceNode& n : m_t.nodes) {
      if (!isCall(n)) continue;
      for (const trace::Ref& r : n.refs) {
        const TraceObject* o = m_t.object(r.obj);
        if ((r.flags & trace::kRefHost) && r.access == HostAccess::Mapped && o &&
            o->kind == ObjectKind::Untracked)
          mapped.insert(o->id);
      }
    }
    for (const TraceNode& n : m_t.nodes) {
      if (!isCall(n)) continue;
      const api::ApiKind kind = callKind(n);
      m_deviceMissing += n.device.missing;
      m_deviceTimed += n.device.exec.count;
      m_deviceUnsampled += n.device.unsampled;
      // Sampled traces: the mean of a leaf's timed commands stands for its untimed ones.
      const double deviceNs = n.device.execNs();
      // A transfer call's host time up to its command's device time is the transfer itself (a
      // blocking call waits for it): its direction's overhead row has it, dispatch/sync does not.
      const double hostNs = static_cast<double>(n.host.total);
      if (!isDispatch(kind))
        m_setupHostNs += hostNs;
      else if (api::isCommunicationKind(kind))
        m_hostCallNs += std::max(0.0, hostNs - deviceNs);
      else
        m_hostCallNs += hostNs;
      if (!n.device.commands()) m_deviceMissing += n.device.unsampled;  // nothing to extrapolate
      if (api::isCommunicationKind(kind)) {
        m_commDeviceNs += deviceNs;
        m_commHostNs += static_cast<double>(n.host.total);
      }
      if (kind == api::ApiKind::Launch) {
        m_kernelDeviceNs += deviceNs;
        m_kernelHostNs += static_cast<double>(n.host.total);
        m_kernels += n.host.count;
        m_launchNs += n.device.submitToStartNs();
      }
      if (kind == api::ApiKind::Sync) m_syncHostNs += static_cast<double>(n.host.total);
      const auto id = static_cast<api::ApiId>(n.code);
      if (id == api::ApiId::clGetPlatformIDs)
        m_out->startup.enumerateNs = std::max(m_out->startup.enumerateNs, n.host.max);
      if (id == api::ApiId::clBuildProgram) {
        m_out->startup.buildNs += n.host.total;
        if (!n.stamps.empty() && (!m_out->startup.firstBuildNs ||
                                  n.stamps.front().startNs < m_out->startup.firstBuildNs))
          m_out->startup.firstBuildNs = n.stamps.front().startNs;
      }
      if (id == api::ApiId::clCreateContext || id == api::ApiId::clCreateContextFromType) {
        m_out->startup.contextNs = std::max(m_out->startup.contextNs, n.host.max);
        if (m_out->contextsCreated == 0)
          for (const trace::Ref& r : n.refs) {
            const TraceObject* o = m_t.object(r.obj);
            m_out->firstContextDevices += o && o->kind == ObjectKind::Device;
          }
        m_out->contextsCreated += n.host.count;
      }

      // Host refs that move data; the call's device time is shared among them by bytes.
      struct Moved {
        const trace::Ref* ref;
        const TraceObject* obj;
        Dir dir;
      };
      std::vector<Moved> moved;
      uint64_t movedBytes = 0;
      for (const trace::Ref& r : n.refs) {
        const TraceObject* o = m_t.object(r.obj);
        Dir dir;
        if (!o || !hostRefDirection(r, o->kind, &dir)) continue;
        moved.push_back({&r, o, dir});
        movedBytes += r.bytes;
      }
      if (moved.empty() && api::isCommunicationKind(kind)) {
        // No application host range (a map of a device buffer, SVM-to-SVM, migrations): the
        // overhead terms still get the time, by what the call does.
        const double ns = deviceNs;
        switch (kind) {
          case api::ApiKind::H2d:
          case api::ApiKind::Unmap:
            m_h2dNs += ns;
            break;
          case api::ApiKind::D2h:
          case api::ApiKind::Map:
            m_d2hNs += ns;
            break;
          default:
            m_h2dNs += ns / 2, m_d2hNs += ns / 2;  // direction unknown
        }
      }
      for (const Moved& m : moved) {
        double share = movedBytes ? static_cast<double>(m.ref->bytes) / movedBytes
                                  : 1.0 / static_cast<double>(moved.size());
        double ns = share * deviceNs;
        (m.dir == Dir::H2D ? m_h2dNs : m_d2hNs) += ns;
        uint64_t count = std::max<uint64_t>(n.host.count, 1);
        uint64_t size = m.ref->bytes / count;
        if (m.obj->kind == ObjectKind::Segment) {
          // Every version of the chain fed the transfer; its first version's site is the
          // candidate: that is where the memory was allocated.
          markFed(m.obj);
          uint32_t site = siteOf(root(m.obj));
          if (site == 0) continue;
          m_sites[site].candidate = true;
          (m.dir == Dir::H2D ? m_sites[site].h2d : m_sites[site].d2h).add(size, n.host.count, ns);
        } else if (mapped.count(m.obj->id)) {
          TransferStats& t = m.dir == Dir::H2D ? m_out->openclMapped.h2d : m_out->openclMapped.d2h;
          t.add(size, n.host.count, ns);
        } else {
          UntrackedAcc& u = m_untracked[m.obj->id];
          (m.dir == Dir::H2D ? u.h2d : u.d2h).add(size, n.host.count, ns);
        }
      }
    }
    if (m_deviceTimed == 0 && m_deviceMissing == 0) m_deviceMissing = 1;  // no commands at all
  }

  void scanAllocations() {
    for (const TraceNode& n : m_t.nodes) {
      if (n.loop || (n.type != trace::LeafType::Alloc && n.type != trace::LeafType::Realloc))
        continue;
      if (n.site == 0 || n.site > m_t.sites.size()) continue;
      SiteAcc& s = m_sites[n.site];
      s.allocations += n.host.count;
      m_trackedAllocations += n.host.count;
      if (s.allocator.empty()) s.allocator = m_t.leafName(n);
      if (!n.args.empty()) {
        s.minBytes = std::min(s.minBytes, n.args[0].min);
        s.maxBytes = std::max(s.maxBytes, n.args[0].max);
        s.sizeCounts[n.args[0].varies ? n.args[0].max : n.args[0].first] += n.host.count;
      }
      for (const trace::Ref& r : n.refs)
        if ((r.flags & trace::kRefCreate) && m_fed.count(r.obj)) s.feeding += n.host.count;
    }
  }

  // ---- replay for peak live bytes ----
  struct ObjLive {
    int64_t bytes = 0, blocks = 0;
  };
  static constexpr uint64_t kReplayBudget = 20'000'000;  ///< leaf visits
  static constexpr int kExtrapolateDepth = 12;  ///< deeper loops are replayed once per instance

  void replay() {
    // Threads run concurrently but the trace does not say how they interleave: each is replayed
    // on its own and the per-site peaks add up (all threads at their peak at once), which is what
    // a pool must be able to hold.
    std::vector<int64_t> peak(m_sites.size()), peakBlocks(m_sites.size());
    for (const trace::TraceThread& th : m_t.threads) {
      for (SiteAcc& s : m_sites) s.live = s.liveBlocks = s.peak = s.peakBlocks = 0;
      m_objLive.clear();
      for (uint32_t e : th.entries) replayNode(e, 1, 0);
      for (size_t i = 0; i < m_sites.size(); ++i) {
        peak[i] = saturatingAdd(peak[i], m_sites[i].peak);
        peakBlocks[i] = saturatingAdd(peakBlocks[i], m_sites[i].peakBlocks);
      }
    }
    for (size_t i = 0; i < m_sites.size(); ++i) {
      m_sites[i].peak = peak[i];
      m_sites[i].peakBlocks = peakBlocks[i];
    }
    if (m_budgetExceeded)
      m_out->warnings.push_back(
          "peak live bytes are partial: the call tree is too large to replay");
  }

  void release(const TraceObject* o, int64_t blocks) {
    if (!o) return;
    ObjLive& ol = m_objLive[o->id];
    blocks = std::min(blocks, ol.blocks);
    if (blocks <= 0) return;
    int64_t bytes = ol.bytes / ol.blocks * blocks;
    ol.bytes -= bytes;
    ol.blocks -= blocks;
    SiteAcc& s = m_sites[siteOf(root(o))];
    s.live = std::max<int64_t>(0, s.live - bytes);
    s.liveBlocks = std::max<int64_t>(0, s.liveBlocks - blocks);
  }

  void replayLeaf(const TraceNode& n, uint64_t enclosingIterations) {
    if (n.type == trace::LeafType::Call) return;
    // Counts and sizes come from the trace file: the sums saturate rather than overflow.
    int64_t times = saturatingI64(
        std::max<uint64_t>(1, n.host.count / std::max<uint64_t>(enclosingIterations, 1)));
    for (const trace::Ref& r : n.refs)
      if (r.flags & trace::kRefDestroy) release(m_t.object(r.obj), times);
    if (n.type == trace::LeafType::Free) return;
    int64_t size = n.args.empty() ? 0 : saturatingI64(n.args[0].max);
    for (const trace::Ref& r : n.refs) {
      if (!(r.flags & trace::kRefCreate)) continue;
      const TraceObject* o = m_t.object(r.obj);
      if (!o || o->kind != ObjectKind::Segment) continue;
      ObjLive& ol = m_objLive[o->id];
      const int64_t bytes = saturatingMul(size, times);
      ol.bytes = saturatingAdd(ol.bytes, bytes);
      ol.blocks = saturatingAdd(ol.blocks, times);
      SiteAcc& s = m_sites[siteOf(root(o))];
      s.live = saturatingAdd(s.live, bytes);
      s.liveBlocks = saturatingAdd(s.liveBlocks, times);
      s.peak = std::max(s.peak, s.live);
      s.peakBlocks = std::max(s.peakBlocks, s.liveBlocks);
    }
  }

  void replayNode(uint32_t id, uint64_t enclosingIterations, int depth) {
    if (id >= m_t.nodes.size() || m_budgetExceeded) return;
    if (++m_steps > kReplayBudget) {
      m_budgetExceeded = true;
      return;
    }
    const TraceNode& n = m_t.nodes[id];
    if (!n.loop) return replayLeaf(n, enclosingIterations);
    uint64_t perInstance = n.iterations / std::max<uint64_t>(n.instances, 1);
    if (perInstance == 0) return;
    auto body = [&] {
      for (uint32_t b : n.body) replayNode(b, n.iterations, depth + 1);
    };
    body();
    if (perInstance == 1 || depth >= kExtrapolateDepth) {
      // Deep nests are replayed once per instance: exact for loops that free what they allocate.
      return;
    }
    // A second iteration measures the per-iteration growth; the remaining ones are extrapolated.
    std::vector<int64_t> live1(m_sites.size()), blocks1(m_sites.size()), peakBefore(m_sites.size()),
        blocksPeakBefore(m_sites.size());
    for (size_t s = 0; s < m_sites.size(); ++s) {
      live1[s] = m_sites[s].live;
      blocks1[s] = m_sites[s].liveBlocks;
      peakBefore[s] = m_sites[s].peak;
      blocksPeakBefore[s] = m_sites[s].peakBlocks;
      m_sites[s].peak = m_sites[s].live;
      m_sites[s].peakBlocks = m_sites[s].liveBlocks;
    }
    body();
    const int64_t more = saturatingI64(perInstance - 2);
    for (size_t s = 0; s < m_sites.size(); ++s) {
      SiteAcc& a = m_sites[s];
      // Both are >= 0, so the differences cannot overflow.
      int64_t delta = a.live - live1[s], deltaBlocks = a.liveBlocks - blocks1[s];
      int64_t iterPeak = saturatingAdd(a.peak, saturatingMul(more, std::max<int64_t>(delta, 0)));
      int64_t iterPeakBlocks =
          saturatingAdd(a.peakBlocks, saturatingMul(more, std::max<int64_t>(deltaBlocks, 0)));
      a.live = std::max<int64_t>(0, saturatingAdd(a.live, saturatingMul(more, delta)));
      a.liveBlocks =
          std::max<int64_t>(0, saturatingAdd(a.liveBlocks, saturatingMul(more, deltaBlocks)));
      a.peak = std::max(peakBefore[s], iterPeak);
      a.peakBlocks = std::max(blocksPeakBefore[s], iterPeakBlocks);
    }
  }

  // ---- program order: how early a site's first block could be pinned ----
  struct OrderState {
    uint32_t thread = 0;
    bool called = false, contextMade = false;
    double leadNs = 0;
    std::vector<uint32_t> allocatedBefore;  ///< sites whose first block came before any call
  };

  void orderSites() {
    for (const trace::TraceThread& th : m_t.threads) {
      OrderState st;
      st.thread = th.index;
      for (uint32_t e : th.entries) orderNode(e, 1, &st, 0);
      // Allocations in a thread that never calls OpenCL say nothing about the program's start-up.
      if (st.called)
        for (uint32_t site : st.allocatedBefore) m_sites[site].allocatedBeforeOpenCL = true;
    }
  }

  void orderNode(uint32_t id, uint64_t enclosingIterations, OrderState* st, int depth) {
    if (id >= m_t.nodes.size() || depth > 64) return;
    const TraceNode& n = m_t.nodes[id];
    if (n.loop) {
      // The first iteration is what comes first; a leaf's time in a loop is its mean per iteration.
      for (uint32_t b : n.body) orderNode(b, std::max<uint64_t>(n.iterations, 1), st, depth + 1);
      return;
    }
    if (n.type == trace::LeafType::Alloc || n.type == trace::LeafType::Realloc) {
      if (n.site == 0 || n.site > m_t.sites.size()) return;
      SiteAcc& s = m_sites[n.site];
      if (s.allocSeen) return;
      if (!st->called) st->allocatedBefore.push_back(n.site);
      s.allocSeen = true;
      s.leadAtAlloc = st->leadNs;  // the lead counts from the context or the block, the later
      s.allocThread = st->thread;
      return;
    }
    if (n.type != trace::LeafType::Call) return;
    st->called = true;
    for (const trace::Ref& r : n.refs) {
      const TraceObject* o = m_t.object(r.obj);
      Dir dir;
      if (!o || o->kind != ObjectKind::Segment || !hostRefDirection(r, o->kind, &dir)) continue;
      SiteAcc& s = m_sites[siteOf(root(o))];
      if (s.transferSeen) continue;
      s.transferSeen = true;
      // Only where this thread made the context and the block (else nothing is known: 0).
      if (st->contextMade && s.allocThread == st->thread)
        s.leadNs = saturatingU64(st->leadNs - s.leadAtAlloc);
    }
    const auto api = static_cast<api::ApiId>(n.code);
    if (!st->contextMade) {
      st->contextMade =
          api == api::ApiId::clCreateContext || api == api::ApiId::clCreateContextFromType;
      return;
    }
    st->leadNs += static_cast<double>(n.host.total) / static_cast<double>(enclosingIterations);
  }

  // ---- results ----
  std::vector<ModulePc> framesOf(uint32_t site) const {
    std::vector<ModulePc> frames;
    for (const trace::TraceFrame& f : m_t.sites[site - 1].frames) {
      ModulePc pc;
      if (f.module >= 0 && static_cast<size_t>(f.module) < m_t.modules.size()) {
        pc.modulePath = m_t.modules[f.module].path;
        pc.buildId = m_t.modules[f.module].buildId;
      }
      pc.offset = f.offset;
      frames.push_back(std::move(pc));
    }
    return frames;
  }

  uint64_t siteKeyOf(uint32_t site) const { return traceSiteKey(m_t, site); }

  Symbolizer& symbolizer() {
    if (!m_symbolizer) m_symbolizer = std::make_unique<Symbolizer>(m_opt.symbolizer);
    return *m_symbolizer;
  }

  void buildCandidates() {
    for (uint32_t site = 1; site < m_sites.size(); ++site) {
      SiteAcc& s = m_sites[site];
      if (!s.candidate) {
        if (s.allocations && !s.feeding) {
          ++m_out->hostOnlySites;
          m_out->hostOnlyAllocations += s.allocations;
        }
        continue;
      }
      CandidateSite c;
      c.siteKey = siteKeyOf(site);
      c.frames = framesOf(site);
      if (m_opt.symbolize) {
        c.location = symbolizer().locate(c.frames);
      } else if (!c.frames.empty()) {
        c.location.modulePath = c.frames[0].modulePath;
        c.location.offset = c.frames[0].offset;
      }
      c.allocator = s.allocator.empty() ? "?" : s.allocator;
      c.allocations = s.allocations;
      c.feedingAllocations = s.feeding;
      c.minAllocBytes = s.allocations ? s.minBytes : 0;
      c.maxAllocBytes = s.maxBytes;
      uint64_t best = 0;
      for (const auto& [size, count] : s.sizeCounts)
        if (count >= best) best = count, c.typicalAllocBytes = size;
      c.peakLiveBytes = static_cast<uint64_t>(s.peak);
      c.peakLiveBlocks = static_cast<uint64_t>(s.peakBlocks);
      c.h2d = s.h2d;
      c.d2h = s.d2h;
      c.allocatedBeforeOpenCL = s.allocatedBeforeOpenCL;
      c.leadNs = s.leadNs;
      c.h2d.finish();
      c.d2h.finish();
      if (m_opt.gain) {
        m_opt.gain->predict(c, &c.gain);
      } else {
        c.gain.note = m_opt.noGainReason;
      }
      m_out->candidates.push_back(std::move(c));
    }
    m_out->trackedAllocations = m_trackedAllocations;
    m_out->openclMapped.h2d.finish();
    m_out->openclMapped.d2h.finish();
    // Most valuable first: the predicted saving where known, else the volume moved.
    std::stable_sort(m_out->candidates.begin(), m_out->candidates.end(),
                     [](const CandidateSite& a, const CandidateSite& b) {
                       if (a.gain.known != b.gain.known) return a.gain.known;
                       if (a.gain.known && a.gain.savingNs() != b.gain.savingNs())
                         return a.gain.savingNs() > b.gain.savingNs();
                       return a.h2d.bytes + a.d2h.bytes > b.h2d.bytes + b.d2h.bytes;
                     });
  }

  void buildUntracked() {
    for (auto& [id, acc] : m_untracked) {
      const TraceObject* o = m_t.object(id);
      if (!o) continue;
      UntrackedMemory u;
      const trace::ObjectInfo& info = o->info;
      u.regionBytes = info.size ? info.size : info.mapEnd - info.mapStart;
      char range[64];
      snprintf(range, sizeof range, "0x%" PRIx64 "-0x%" PRIx64, info.mapStart, info.mapEnd);
      switch (info.region) {
        case trace::RegionClass::Static: {
          u.kind = UntrackedMemory::Kind::Static;
          if (info.module > 0 && info.module <= m_t.modules.size()) {
            const trace::TraceModule& m = m_t.modules[info.module - 1];
            u.modulePath = m.path;
            u.moduleKey = moduleIdentity(m.buildId, m.path);
            u.moduleOffset = info.address - m.bias;
            u.what = "static data";
            if (m_opt.symbolize) {
              DataLocation d = symbolizer().locateData(
                  ModulePc{m.path, m.buildId, info.address - m.bias, false});
              if (d.found) u.what = d.describe();
            }
          } else {
            u.what = "static data at " + std::string(range);
          }
          break;
        }
        case trace::RegionClass::Stack:
          u.kind = UntrackedMemory::Kind::Stack;
          u.what = "stack memory";
          break;
        case trace::RegionClass::Mmap:
        case trace::RegionClass::File:
          u.kind = UntrackedMemory::Kind::Mmap;
          u.anonymous = info.region == trace::RegionClass::Mmap;
          u.mapBytes = info.mapEnd - info.mapStart;
          u.what = (info.mapName.empty() ? std::string("anonymous mapping ") : info.mapName + " ") +
                   range;
          break;
        case trace::RegionClass::Heap:
          u.kind = UntrackedMemory::Kind::Heap;
          u.what =
              "heap memory no tracked allocation made (below HETOPT_MIN_TRACKED_SIZE, or "
              "allocated before tracing)";
          break;
        case trace::RegionClass::Unknown:
          u.what = "memory of unknown origin";
          break;
      }
      u.h2d = acc.h2d;
      u.d2h = acc.d2h;
      u.h2d.finish();
      u.d2h.finish();
      if (!u.registrable())
        u.gain.note = "cannot be registered in place (only static data and anonymous mappings)";
      else if (m_opt.gain)
        m_opt.gain->predictRegistration(u, &u.gain);
      else
        u.gain.note = m_opt.noGainReason;
      m_out->untracked.push_back(std::move(u));
    }
    std::stable_sort(m_out->untracked.begin(), m_out->untracked.end(),
                     [](const UntrackedMemory& a, const UntrackedMemory& b) {
                       return a.h2d.bytes + a.d2h.bytes > b.h2d.bytes + b.d2h.bytes;
                     });
  }

  void eligibilityAndBreakdown() {
    Breakdown& b = m_out->breakdown;
    b.hasDeviceTimes = m_deviceTimed > 0;
    b.deviceTimed = m_deviceTimed;
    b.deviceUnsampled = m_deviceUnsampled;
    b.totalNs = static_cast<double>(m_t.durationNs);
    b.kernels = m_kernels;
    b.h2dNs = m_h2dNs;
    b.d2hNs = m_d2hNs;
    b.launchNs = m_launchNs;
    b.dispatchSyncNs = m_hostCallNs;
    b.setupNs = m_setupHostNs;
    b.recordingNs = trace::summarize(m_t).recordingNs;
    Eligibility& e = m_out->eligibility;
    e.threshold = m_opt.threshold;
    const char* basis = "";
    if (b.hasDeviceTimes) {
      e.communicationNs = m_commDeviceNs;
      e.computationNs = m_kernelDeviceNs;
      if (m_deviceMissing)
        m_out->warnings.push_back(std::to_string(m_deviceMissing) +
                                  " commands had no profiling information; their device time is "
                                  "missing from the totals");
      if (m_deviceUnsampled)
        basis = " (device times sampled: timed commands' means extrapolated to the untimed)";
    } else {
      // Host time of the same calls: blocking transfers wait for the copy; kernel time hides in
      // the calls that wait for it (clFinish, clWaitForEvents, blocking reads).
      e.communicationNs = m_commHostNs;
      e.computationNs = m_kernelHostNs + m_syncHostNs;
      basis = " (host times: the trace has no device timestamps)";
    }
    b.kernelNs = e.computationNs;
    b.communicationNs = e.communicationNs;
    if (b.hasDeviceTimes) {
      // Sums of device times; overlapping commands (several queues) can exceed the wall time.
      double device = b.kernelNs + b.communicationNs;
      if (device > b.totalNs && device > 0) {
        double scale = b.totalNs / device;
        b.kernelNs *= scale;
        b.communicationNs *= scale;
      }
    }
    b.cpuSyncNs = std::max(0.0, b.totalNs - b.kernelNs - b.communicationNs);

    if (e.computationNs > 0) {
      e.ratio = e.communicationNs / e.computationNs;
    } else {
      e.ratio = e.communicationNs > 0 ? HUGE_VAL : 0;
    }
    e.eligible = e.ratio >= e.threshold && e.communicationNs > 0;
    // Without kernel time the ratio has no finite value: said in words, not as "inf".
    const bool noCompute = !std::isfinite(e.ratio);
    std::string numbers = noCompute
                              ? "no device compute (communication " +
                                    formatDuration(e.communicationNs) + ", no kernel time)" + basis
                              : "dispatch ratio " + percentText(e.ratio) + " = communication " +
                                    formatDuration(e.communicationNs) + " / computation " +
                                    formatDuration(e.computationNs) + basis;
    if (e.communicationNs <= 0) {
      e.reason = numbers + ": no host<->device transfers, nothing to optimize";
    } else if (noCompute) {
      e.reason = numbers + ": the transfers are all the device work, so pinning may pay";
    } else if (e.eligible) {
      e.reason = numbers + " >= " + percentText(e.threshold) +
                 ": transfers are a large enough share of the device work for pinning to pay";
    } else {
      e.reason = numbers + " < " + percentText(e.threshold) +
                 ": compute-bound, faster transfers would hardly change the run time";
    }
    if (!m_t.complete)
      m_out->warnings.push_back(std::string(kIncompleteTraceWarning) +
                                " (the program was killed or crashed, or the trace could not be "
                                "written to its end): analysed up to its last checkpoint");
  }

  struct UntrackedAcc {
    TransferStats h2d, d2h;
  };

  const Trace& m_t;
  const AnalysisOptions& m_opt;
  AppProfile* m_out;
  std::vector<SiteAcc> m_sites;
  std::set<ObjectId> m_fed;
  std::map<ObjectId, UntrackedAcc> m_untracked;
  std::unordered_map<ObjectId, ObjLive> m_objLive;
  std::unique_ptr<Symbolizer> m_symbolizer;
  uint64_t m_steps = 0;
  bool m_budgetExceeded = false;
  uint64_t m_trackedAllocations = 0;
  uint64_t m_kernels = 0, m_deviceMissing = 0, m_deviceTimed = 0, m_deviceUnsampled = 0;
  double m_commDeviceNs = 0, m_commHostNs = 0, m_kernelDeviceNs = 0, m_kernelHostNs = 0;
  double m_syncHostNs = 0, m_hostCallNs = 0, m_setupHostNs = 0, m_launchNs = 0, m_h2dNs = 0,
         m_d2hNs = 0;
};

}  // namespace

void analyzeTrace(const Trace& trace, const AnalysisOptions& options, AppProfile* out) {
  Analyzer(trace, options, out).run();
  out->startup.firstCallNs = trace.firstCallNs;
  out->startup.firstContextNs = trace.firstContextNs;
  if (!out->startup.known()) out->startup = {};  // the times mean nothing without the anchor
  if (out->device.empty()) out->device = traceDevice(trace);
}

uint64_t traceSiteKey(const trace::Trace& t, uint32_t site) {
  uint64_t key = kSiteKeySeed;
  if (site == 0 || site > t.sites.size()) return key;
  for (const trace::TraceFrame& f : t.sites[site - 1].frames) {
    uint64_t identity = 0;
    if (f.module >= 0 && static_cast<size_t>(f.module) < t.modules.size())
      identity = moduleIdentity(t.modules[f.module].buildId, t.modules[f.module].path);
    key = siteKeyFold(key, identity, f.offset);
  }
  return key;
}

std::string traceDevice(const Trace& t) {
  // Devices that queues were created on; else any device the program looked at.
  std::set<std::string> queued, seen;
  for (const TraceNode& n : t.nodes) {
    if (!isCall(n)) continue;
    bool queue = callKind(n) == api::ApiKind::CreateQueue;
    for (const trace::Ref& r : n.refs) {
      const TraceObject* o = t.object(r.obj);
      if (!o || o->kind != ObjectKind::Device || o->info.label.empty()) continue;
      (queue ? queued : seen).insert(o->info.label);
    }
  }
  const std::set<std::string>& use = queued.empty() ? seen : queued;
  std::string s;
  for (const std::string& d : use) s += (s.empty() ? "" : ", ") + d;
  return s;
}

}  // namespace hetopt::analyzer
