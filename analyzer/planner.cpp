// SPDX-License-Identifier: MIT
/** @file Profile -> plan; see planner.h.
 * The Planner picks each site's strategy; the chain of smaller plans; the --dry-run text. */
#include "analyzer/planner.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "analyzer/report.h"
#include "common/units.h"

namespace hetopt::analyzer {

std::string poolPolicyFor(const std::string& decisionPolicy) {
  if (decisionPolicy == "register") return "hybrid";
  if (decisionPolicy == "opencl" || decisionPolicy == "hybrid" || decisionPolicy == "locked")
    return decisionPolicy;
  return "";
}

namespace {

std::string percent(double part, double whole) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}

std::string transfersText(const char* dir, const TransferStats& t) {
  if (!t.transfers) return "";
  return std::string(dir) + " " + std::to_string(t.transfers) + " x " +
         formatBytes(t.typicalBytes) + (t.transfers > 1 ? " typ." : "");
}

std::string memoryText(uint64_t allocations, uint64_t bytes, const TransferStats& h2d,
                       const TransferStats& d2h) {
  std::string s =
      allocations ? std::to_string(allocations) + " x " + formatBytes(bytes) : formatBytes(bytes);
  for (const std::string& t : {transfersText("h2d", h2d), transfersText("d2h", d2h)})
    if (!t.empty()) s += ", " + t;
  return s;
}

/// Where a site is: its source location, else module+offset, then (without source) the return
/// addresses of its callers, so that sites reached through one allocation helper tell apart.
std::string siteText(const CandidateSite& site) {
  std::string s = site.location.describe();
  if (!site.location.hasSource)
    for (size_t i = 1; i < site.frames.size() && i < 3; ++i) {
      const std::string& path = site.frames[i].modulePath;
      char offset[32];
      snprintf(offset, sizeof offset, "+0x%llx",
               static_cast<unsigned long long>(site.frames[i].offset));
      s += " < " + path.substr(path.rfind('/') + 1) + offset;
    }
  return s + " (" + site.allocator + ")";
}

/// The decisive numbers of a prediction: "measured 40.1 ms, pinned ~1.2 ms, pinning ~5.3 ms".
/// `hiddenNs`: of the pinning, what runs on hetopt's thread before the first transfer needs it
/// (already taken out of g's cost).
std::string numbersText(const GainPrediction& g, double hiddenNs = 0) {
  if (!g.known) return g.note.empty() ? "no prediction" : g.note;
  return std::string(g.measured ? "traced " : "pageable ~") + formatDuration(g.standardNs) +
         (!g.measured && g.tracedNs > 0 ? " (device time traced " + formatDuration(g.tracedNs) + ")"
                                        : "") +
         ", pinned ~" + formatDuration(g.optimizedNs - g.costNs) + " + pinning ~" +
         formatDuration(g.costNs) +
         (hiddenNs > 0 ? " (and ~" + formatDuration(hiddenNs) + " before the program needs it)"
                       : "") +
         ": " + g.savingText();
}

/// Per MiB moved: what the transfers cost more pageable than pinned (the plan's `wait`).
uint64_t waitPerMiB(const GainPrediction& g, const TransferStats& h2d, const TransferStats& d2h) {
  const double mib = static_cast<double>(h2d.bytes + d2h.bytes) / (1 << 20);
  const double extra = g.standardNs - (g.optimizedNs - g.costNs);
  if (!g.known || mib <= 0 || extra <= 0) return 0;
  return saturatingU64(extra / mib);
}

}  // namespace

double startupSavingNs(const AppProfile& profile, bool earlyContext) {
  const AppProfile::Startup& s = profile.startup;
  if (!s.known()) return 0;
  const double F = static_cast<double>(s.firstCallNs), E = static_cast<double>(s.enumerateNs);
  if (!earlyContext || !s.firstContextNs) return std::min(F, E);
  const double X = static_cast<double>(s.firstContextNs), C = static_cast<double>(s.contextNs);
  const double W = std::max(0.0, X - F - E);
  return std::max(0.0, (X + C) - std::max(std::max(F, E) + W, E + C));
}

double buildAheadSavingNs(const AppProfile& profile) {
  const AppProfile::Startup& s = profile.startup;
  if (!s.known() || !s.firstContextNs || !s.buildNs || s.firstBuildNs < s.firstContextNs) return 0;
  const double asked =
      static_cast<double>(s.firstBuildNs) - startupSavingNs(profile, true);  // optimized
  const double ready = static_cast<double>(s.enumerateNs + s.contextNs);
  return std::clamp(asked - ready, 0.0, static_cast<double>(s.buildNs));
}

double registrationSlackNs(const AppProfile& profile, const CandidateSite& site,
                           bool earlyContext) {
  const double lead = static_cast<double>(site.leadNs);
  const AppProfile::Startup& s = profile.startup;
  if (!earlyContext || !site.allocatedBeforeOpenCL || !s.known() || !s.firstContextNs) return lead;
  // Natively the first transfer comes at X + C + lead; optimized, the program's start-up is
  // shorter by what the early context overlaps, and the context is ready at E + C.
  const double X = static_cast<double>(s.firstContextNs), E = static_cast<double>(s.enumerateNs);
  return std::max(lead, X + lead - startupSavingNs(profile, true) - E);
}

namespace {

class Planner {
 public:
  Planner(const AppProfile& profile, const PlanOptions& options, const GainModel* gain, Plan* plan,
          PlanDecision* decision)
      : m_profile(profile), m_opt(options), m_gain(gain), m_plan(plan), m_d(decision) {
    m_d->runNs = profile.breakdown.totalNs;
    m_d->gainSource = gain ? gain->describe() + " (this machine's curves now)"
                      : unpriced()
                          ? "none (" + (options.noCurves.empty() ? "no curves" : options.noCurves) +
                                "; none stored with the profile)"
                          : "the predictions stored with the profile";
  }

  bool run(std::string* whyNot) {
    m_forcedPool = poolPolicyFor(m_opt.forcedPolicy);
    if (!m_opt.forcedPolicy.empty() && m_forcedPool.empty()) {
      *whyNot =
          "policy '" + m_opt.forcedPolicy + "' cannot back a pool (use opencl, hybrid, locked)";
      return false;
    }
    // One context, on one device (or by type): made by the shim at start-up and handed to the
    // program, so that pinning starts while the program still reads and computes its input.
    // A program that forks copies of itself, or can, keeps its driver untouched until its own
    // first OpenCL call: its forked children cannot use a driver the parent initialized (they
    // hang).
    m_plan->driverLate =
        m_profile.forkedChildren > 0 || m_opt.forkedWhenOptimized || !m_opt.forkImporter.empty();
    m_d->driver = driverStart();
    m_plan->earlyContext = !m_opt.directAllocation && m_opt.earlyContext && !m_plan->driverLate &&
                           m_profile.contextsCreated == 1 && m_profile.firstContextDevices <= 1;
    // Each site priced once: with this machine's curves now, else as stored with the profile.
    std::vector<GainPrediction> priced;
    for (const CandidateSite& site : m_profile.candidates) {
      priced.push_back(site.gain);
      if (m_gain) m_gain->predict(site, &priced.back());
    }
    const std::vector<double> hidden = offCriticalPathNs(priced);
    for (size_t i = 0; i < m_profile.candidates.size(); ++i)
      planSite(m_profile.candidates[i], priced[i], hidden[i]);
    for (const UntrackedMemory& u : m_profile.untracked) planUntracked(u);
    std::stable_sort(m_d->sites.begin(), m_d->sites.end(),
                     [](const SiteDecision& a, const SiteDecision& b) {
                       return a.planned != b.planned ? a.planned : a.savingNs > b.savingNs;
                     });
    // A plan that pins nothing serves no allocation: the shim captures no call site for it.
    if (!m_plan->startupOnly())
      m_d->overheadNs = kSiteCaptureNs * static_cast<double>(m_profile.trackedAllocations);
    if ((!m_plan->startupOnly() || m_plan->earlyContext) && !m_plan->driverLate)
      m_d->startupNs = startupSavingNs(m_profile, m_plan->earlyContext);
    if (m_plan->earlyContext && !m_plan->driverLate && !m_opt.directAllocation &&
        !m_opt.recipePath.empty() && m_opt.recipePrograms) {
      m_d->buildAheadNs = buildAheadSavingNs(m_profile);
      m_d->startupNs += m_d->buildAheadNs;
      m_plan->buildAheadRecipe = m_opt.recipePath;
      m_plan->buildAheadPrograms = m_opt.recipePrograms;
      m_plan->buildAheadNs = static_cast<uint64_t>(m_d->buildAheadNs);
    }
    return decide(whyNot) && sizePool(whyNot);
  }

 private:
  /// PlanDecision::driver: "late: " and every reason for `driver late` there is, else "early: ...".
  std::string driverStart() const {
    if (!m_plan->driverLate)
      return "early: hetopt's thread starts it at start-up, while the program prepares its "
             "input, in every process that cannot fork (the shim checks the libraries loaded with "
             "it for an import of fork)";
    std::string why;
    auto add = [&](const std::string& reason) { why += (why.empty() ? "late: " : "; ") + reason; };
    const uint64_t copies = m_profile.forkedChildren;
    if (copies)
      add("forked when traced (" + std::to_string(copies) + " forked " +
          (copies == 1 ? "copy" : "copies") + " of it called OpenCL)");
    if (m_opt.forkedWhenOptimized)
      add("forked in an optimized run (a forked copy called OpenCL on the driver hetopt had "
          "started)");
    if (!m_opt.forkImporter.empty())
      add("the program can fork (" + m_opt.forkImporter + " imports fork)");
    return why +
           "; hetopt leaves the driver alone until the program's first OpenCL call (a forked copy "
           "cannot use a driver its parent initialized) and only loads its libraries before";
  }
  bool anyRegistrable() const {
    for (const UntrackedMemory& u : m_profile.untracked)
      if (u.registrable()) return true;
    return false;
  }
  /// No curves here and no price stored with the profile: every site stays untouched unpriced.
  bool unpriced() const {
    if (m_gain || forced() || (m_profile.candidates.empty() && !anyRegistrable())) return false;
    for (const CandidateSite& c : m_profile.candidates)
      if (c.gain.known) return false;
    for (const UntrackedMemory& u : m_profile.untracked)
      if (u.gain.known) return false;
    return true;
  }
  /// Why nothing is pinned, in the words of the number that decided.
  std::string pinningWhyNot() const {
    if (m_profile.candidates.empty() && !anyRegistrable())
      return "no allocation site feeds host<->device transfers";
    if (unpriced())
      return m_opt.noCurves.empty()
                 ? "no site is priced (no characterization of " + m_profile.device + ")"
                 : m_opt.noCurves;
    double best = 0;
    for (const SiteDecision& d : m_d->sites) best = std::max(best, d.savingNs);
    return (best > 0 ? "pinning would save too little: the best site " + formatDuration(best) +
                           ", where a site must save " +
                           formatDuration(std::max(kMinSiteSavingNs, kMinSiteShare * m_d->runNs)) +
                           " on " + m_profile.device
                     : "pinning does not pay for this program's transfers on " + m_profile.device) +
           " (`hetopt run --dry-run` shows each site's numbers)";
  }
  /// Why the plan makes no context early (Plan::earlyContext is false), for the start-up's words.
  std::string noEarlyContextWhy() const {
    if (m_plan->driverLate)
      return "the program forks or can fork, so hetopt leaves its driver alone until its first "
             "OpenCL call";
    if (m_opt.directAllocation) return "--no-pool makes no context early";
    if (!m_opt.earlyContext) return "--no-early-context";
    if (m_profile.contextsCreated == 0) return "the traced run made no context";
    if (m_profile.contextsCreated > 1)
      return "the traced run made " + std::to_string(m_profile.contextsCreated) +
             " contexts, not one";
    return "its context spans " + std::to_string(m_profile.firstContextDevices) + " devices";
  }
  /// What a start-up-only plan does: "the context made early, 2 programs built ahead".
  std::string startupWork() const {
    const uint64_t n = m_plan->buildAheadPrograms;
    return "the context made early" +
           (n ? ", " + std::to_string(n) + " program" + (n == 1 ? "" : "s") + " built ahead"
              : std::string());
  }
  /// A registered site's first block is pinned on hetopt's thread as soon as both it and the
  /// pinning context exist; the program only waits for what is left of that when its first
  /// transfer comes (registrationSlackNs). One thread registers the blocks one after the other:
  /// the slack is shared, earliest transfer first. Per candidate site: its pinning so hidden.
  std::vector<double> offCriticalPathNs(const std::vector<GainPrediction>& priced) const {
    std::vector<double> hidden(priced.size(), 0.0);
    uint64_t latencyNs = 0, nsPerMiB = 0;
    if (!m_gain || forced() || m_opt.directAllocation ||
        !m_gain->registerCost(&latencyNs, &nsPerMiB))
      return hidden;
    struct Job {
      size_t site;
      double slackNs, costNs;
    };
    std::vector<Job> jobs;
    for (size_t i = 0; i < m_profile.candidates.size(); ++i) {
      const CandidateSite& site = m_profile.candidates[i];
      const GainPrediction& g = priced[i];
      const double slack = registrationSlackNs(m_profile, site, m_plan->earlyContext);
      if (!g.known || !g.registers() || slack <= 0) continue;
      // Hidden time is not free memory: a block most of which never crosses stays priced in full
      // (registering it locks every page of it).
      const uint64_t moved = std::max(site.h2d.maxBytes, site.d2h.maxBytes);
      if (moved < site.maxAllocBytes / 2) continue;
      const double first =
          static_cast<double>(latencyNs) +
          static_cast<double>(nsPerMiB) * static_cast<double>(site.typicalAllocBytes) / (1 << 20);
      jobs.push_back({i, slack, std::min(first, g.costNs)});
    }
    std::stable_sort(jobs.begin(), jobs.end(),
                     [](const Job& a, const Job& b) { return a.slackNs < b.slackNs; });
    double busyNs = 0;
    for (const Job& j : jobs) {
      hidden[j.site] = std::clamp(j.slackNs - busyNs, 0.0, j.costNs);
      busyNs += j.costNs;  // the thread is busy with it either way
    }
    return hidden;
  }

  bool forced() const { return !m_opt.forcedPolicy.empty(); }
  /// Worth planning on its own: it saves something, and (unless forced) enough to matter.
  bool worthIt(double savingNs) const {
    if (m_opt.force) return savingNs > 0;
    return savingNs >= kMinSiteSavingNs && savingNs >= kMinSiteShare * m_d->runNs;
  }
  std::string smallText(double savingNs) const {
    if (savingNs <= 0) return "pinning does not pay";
    return "saves only " + formatDuration(savingNs) + " (a site must save " +
           formatDuration(std::max(kMinSiteSavingNs, kMinSiteShare * m_d->runNs)) + ")";
  }

  void planSite(const CandidateSite& site, GainPrediction g, double hiddenNs) {
    g.costNs -= hiddenNs;
    g.optimizedNs -= hiddenNs;
    SiteDecision d;
    d.what = siteText(site);
    d.memory = memoryText(site.allocations, site.typicalAllocBytes, site.h2d, site.d2h);
    d.savingNs = g.known ? g.savingNs() : 0;
    d.siteKey = site.siteKey;
    PlanSite planned;
    planned.key = site.siteKey;
    // What the trace saw there, for the shim's conformance check (shim/core/conformance.h).
    planned.profiled = site.allocations > 0 && site.minAllocBytes <= site.maxAllocBytes;
    if (planned.profiled)
      planned.profile = {site.allocations,
                         site.minAllocBytes,
                         site.maxAllocBytes,
                         std::clamp(site.typicalAllocBytes, site.minAllocBytes, site.maxAllocBytes),
                         site.peakLiveBytes,
                         site.peakLiveBlocks};
    planned.waitNsPerMiB = waitPerMiB(g, site.h2d, site.d2h);
    std::string pool;
    if (forced()) {
      const bool reg = m_opt.forcedPolicy == "register";
      planned.strategy = reg ? SiteStrategy::Register : SiteStrategy::Pool;
      pool = reg ? "" : m_forcedPool;
      d.why = "forced (--policy " + m_opt.forcedPolicy + "); " + numbersText(g, hiddenNs);
    } else if (!g.known || !worthIt(g.savingNs()) || (!g.registers() && !g.pools())) {
      d.strategy = "untouched";
      if (!g.registers() && !g.pools()) d.savingNs = 0;  // nothing would pin it
      d.why = g.known ? smallText(g.savingNs()) + "; " + numbersText(g, hiddenNs)
                      : numbersText(g, hiddenNs);
      m_d->sites.push_back(std::move(d));
      return;
    } else {
      planned.strategy = g.registers() ? SiteStrategy::Register : SiteStrategy::Pool;
      pool = g.registers() ? "" : g.policy;
      d.why = numbersText(g, hiddenNs);
    }
    if (planned.strategy == SiteStrategy::Register) {
      d.strategy = "register in place";
      d.when =
          "each block where malloc put it, on a background thread, once the program's context "
          "exists";
    } else {
      if (m_poolPolicy.empty()) m_poolPolicy = pool;  // one pool: the most valuable site's policy
      d.strategy = m_poolPolicy + " pool";
      d.when =
          "served from a pool pinned in the program's context as soon as it exists; blocks "
          "before that are registered in place";
      m_poolLive = site.peakLiveBytes > UINT64_MAX - m_poolLive ? UINT64_MAX
                                                                : m_poolLive + site.peakLiveBytes;
    }
    d.planned = true;
    if (g.known) m_d->savingNs += std::max(0.0, g.savingNs());
    m_plan->sites.push_back(planned);
    m_d->sites.push_back(std::move(d));
  }

  // Untracked memory (static data, anonymous mappings): registered in place when the register
  // curves say it gains (or all of it, forced). Static ranges by module and offset; anonymous
  // mappings by size, from the smallest transferred range (a mapping holds at least that) to the
  // largest mapping seen, so that no unrelated larger mapping gets pinned.
  void planUntracked(const UntrackedMemory& u) {
    GainPrediction g = u.gain;
    if (m_gain && u.registrable()) m_gain->predictRegistration(u, &g);
    SiteDecision d;
    d.what = u.what + " (" + untrackedKindName(u.kind) + ")";
    d.memory = memoryText(0, u.regionBytes, u.h2d, u.d2h);
    d.savingNs = g.known ? g.savingNs() : 0;
    if (!u.registrable() || u.regionBytes == 0) {
      d.strategy = "untouched";
      d.why = "cannot be registered in place (only static data and anonymous mappings)";
    } else if (!m_opt.forceRegistrations && (!g.known || !worthIt(g.savingNs()))) {
      d.strategy = "untouched";
      d.why = g.known ? smallText(g.savingNs()) + "; " + numbersText(g) : numbersText(g);
    } else {
      d.strategy = "register in place";
      d.when = u.kind == UntrackedMemory::Kind::Static
                   ? "when the program's context exists"
                   : "mappings made before the context when it exists, later ones at their first "
                     "transfer";
      d.why = m_opt.forceRegistrations ? "forced (--policy register); " + numbersText(g)
                                       : numbersText(g);
      d.planned = true;
      if (g.known) m_d->savingNs += std::max(0.0, g.savingNs());
      if (u.kind == UntrackedMemory::Kind::Static) {
        d.staticRange = true, d.moduleKey = u.moduleKey, d.moduleOffset = u.moduleOffset;
        m_plan->staticRanges.push_back({u.moduleKey, u.moduleOffset, u.regionBytes});
      } else {
        uint64_t hi = std::max(u.mapBytes, u.regionBytes);
        m_plan->mmapMinBytes = m_plan->registersMappings()
                                   ? std::min(m_plan->mmapMinBytes, u.regionBytes)
                                   : u.regionBytes;
        m_plan->mmapMaxBytes = std::max(m_plan->mmapMaxBytes, hi);
      }
    }
    m_d->sites.push_back(std::move(d));
  }

  double planMinimumNs() const { return std::max(kMinPlanSavingNs, kMinPlanShare * m_d->runNs); }

  /// Nothing pinned: a plan of the start-up alone, when the early context (and what it builds
  /// ahead) saves as much as any plan must (`--force`: whenever the context can be made early).
  bool decideStartupOnly(std::string* whyNot) {
    const double net = std::max(0.0, m_d->startupNs - m_d->overheadNs);
    const double minimum = planMinimumNs();
    const std::string share =
        percent(net, m_d->runNs) + " of the traced " + formatDuration(m_d->runNs) + " run";
    if (m_plan->earlyContext && (m_opt.force || net >= minimum)) {
      const char* why = m_profile.candidates.empty() && !anyRegistrable()
                            ? "no site feeds transfers"
                        : unpriced() ? "no site priced"
                                     : "no site pays";
      m_d->verdict = std::string("optimize: start-up only (") + why + "): " + startupWork() +
                     "; predicted saving ~" + formatDuration(net) + " (" + share + ")";
      return true;
    }
    *whyNot = pinningWhyNot();
    if (!m_plan->earlyContext)
      *whyNot += "; no start-up overlap either: " + noEarlyContextWhy();
    else if (!m_profile.startup.known())
      *whyNot +=
          "; the start-up overlap is not known (the profile has no start-up times: trace "
          "the program again)";
    else
      *whyNot += "; the start-up overlap alone (" + startupWork() + ") would save ~" +
                 formatDuration(net) + " (" + share + "), where a plan must save " +
                 formatDuration(minimum) + " (`--force` optimizes anyway)";
    m_d->verdict = *whyNot;
    return false;
  }

  bool decide(std::string* whyNot) {
    if (m_plan->startupOnly()) return decideStartupOnly(whyNot);
    const double net = m_d->savingNs + m_d->startupNs - m_d->overheadNs;
    const double minimum = planMinimumNs();
    if (!forced() && !m_opt.force && net < minimum) {
      *whyNot = "pinning would save ~" + formatDuration(std::max(0.0, net)) + " (" +
                percent(std::max(0.0, net), m_d->runNs) + " of the traced " +
                formatDuration(m_d->runNs) + " run, start-up overlap included, after ~" +
                formatDuration(m_d->overheadNs) + " of hetopt's own work); it must save " +
                formatDuration(minimum) + " (`--force` optimizes anyway)";
      m_d->verdict = *whyNot;
      return false;
    }
    size_t sites = m_plan->sites.size(), registered = 0;
    for (const PlanSite& s : m_plan->sites) registered += s.strategy == SiteStrategy::Register;
    m_d->verdict = "optimize: " + std::to_string(sites) + " site" + (sites == 1 ? "" : "s") + " (" +
                   std::to_string(registered) + " registered in place, " +
                   std::to_string(sites - registered) + " from a pool)" +
                   (m_plan->hasRegistrations() ? " and untracked memory registered in place" : "") +
                   "; predicted saving ~" + formatDuration(net) + " (" + percent(net, m_d->runNs) +
                   " of the traced " + formatDuration(m_d->runNs) + " run: pinning ~" +
                   formatDuration(m_d->savingNs) + ", start-up overlapped ~" +
                   formatDuration(m_d->startupNs) + ")";
    return true;
  }

  bool sizePool(std::string* whyNot) {
    m_plan->programPath = m_profile.program.path;
    m_plan->programKey = m_profile.program.key();
    m_plan->device = m_profile.device;
    m_plan->directAllocation = m_opt.directAllocation;
    if (m_gain && !m_plan->startupOnly())
      m_gain->registerCost(&m_plan->registerLatencyNs, &m_plan->registerNsPerMiB);
    if (m_opt.directAllocation && !m_plan->sites.empty()) {
      // The naive variant: every site's blocks made by one policy, as it was measured.
      if (m_poolPolicy.empty()) m_poolPolicy = m_forcedPool.empty() ? "hybrid" : m_forcedPool;
      m_poolLive = 0;
      for (PlanSite& s : m_plan->sites) {
        s.strategy = SiteStrategy::Pool;
        m_poolLive = std::min<uint64_t>(
            m_poolLive + std::min<uint64_t>(s.profile.peakLiveBytes, 1ull << 52), 1ull << 53);
      }
    }
    if (!m_plan->hasPoolSites()) {
      m_plan->poolPolicy = "none";
      m_plan->poolBytes = 0;
      return true;
    }
    m_plan->poolPolicy = m_poolPolicy;
    // The sizes come from a DB file: a damaged one must give a message, not an overflowing pool.
    const double want = static_cast<double>(m_poolLive) * m_opt.poolSlack + (1u << 20);
    if (!(want < 0x1p50)) {
      *whyNot = "the profile asks for an implausible pool (" + std::to_string(want) +
                " bytes); trace the program again";
      return false;
    }
    const uint64_t bytes = static_cast<uint64_t>(want);
    m_plan->poolBytes = (bytes + (1u << 20) - 1) & ~uint64_t{(1u << 20) - 1};
    return true;
  }

  const AppProfile& m_profile;
  const PlanOptions& m_opt;
  const GainModel* m_gain;
  Plan* m_plan;
  PlanDecision* m_d;
  std::string m_forcedPool, m_poolPolicy;
  uint64_t m_poolLive = 0;
};

}  // namespace

bool buildPlan(const AppProfile& profile, const PlanOptions& options, const GainModel* gain,
               Plan* plan, std::string* whyNot, PlanDecision* decision) {
  *plan = Plan();
  PlanDecision local;
  PlanDecision* d = decision ? decision : &local;
  *d = PlanDecision();
  return Planner(profile, options, gain, plan, d).run(whyNot);
}

std::vector<PlanVariant> planChain(const Plan& plan, const PlanOptions& options,
                                   const PlanDecision* decision) {
  std::vector<PlanVariant> chain{{plan, "", decision ? decision->netSavingNs() : -1}};
  // What a smaller plan keeps: pinning less what it leaves out, no start-up (it starts late), the
  // shim's own cost; never below 0, as netSavingNs.
  auto price = [&](PlanVariant* v, double leftOutNs) {
    if (!decision) return;
    v->savingNs = std::max(0.0, decision->savingNs - leftOutNs - decision->overheadNs);
    v->plan.predictedSavingNs = static_cast<uint64_t>(v->savingNs);
  };
  if ((plan.earlyContext || !plan.driverLate) && !plan.startupOnly()) {
    PlanVariant late{plan, "without the early start of the driver"};
    late.plan.earlyContext = false;
    late.plan.driverLate = true;
    late.plan.buildAheadRecipe.clear();  // built ahead only on the early context
    late.plan.buildAheadPrograms = late.plan.buildAheadNs = 0;
    price(&late, 0);
    chain.push_back(late);
  }
  const Plan& last = chain.back().plan;
  if (last.sites.size() + last.staticRanges.size() < 2) return chain;
  // The piece that pins the most memory: a site at its traced peak, or a static range.
  uint64_t most = 0;
  size_t site = SIZE_MAX, range = SIZE_MAX;
  for (size_t i = 0; i < last.sites.size(); ++i)
    if (last.sites[i].profile.peakLiveBytes >= most)
      most = last.sites[i].profile.peakLiveBytes, site = i, range = SIZE_MAX;
  for (size_t i = 0; i < last.staticRanges.size(); ++i)
    if (last.staticRanges[i].bytes > most)
      most = last.staticRanges[i].bytes, range = i, site = SIZE_MAX;
  PlanVariant smaller{last, ""};
  if (range != SIZE_MAX) {
    smaller.plan.staticRanges.erase(smaller.plan.staticRanges.begin() +
                                    static_cast<ptrdiff_t>(range));
    smaller.change = "without its largest static range (" + formatBytes(most) + ")";
  } else {
    smaller.plan.sites.erase(smaller.plan.sites.begin() + static_cast<ptrdiff_t>(site));
    smaller.change =
        "without the site that pins the most (" + formatBytes(most) + " at the traced peak)";
    if (!smaller.plan.hasPoolSites()) {
      smaller.plan.poolPolicy = "none";
      smaller.plan.poolBytes = 0;
    } else if (!smaller.plan.directAllocation) {
      uint64_t live = 0;
      for (const PlanSite& s : smaller.plan.sites)
        if (s.strategy == SiteStrategy::Pool) live += s.profile.peakLiveBytes;
      const uint64_t bytes =
          static_cast<uint64_t>(static_cast<double>(live) * options.poolSlack) + (1u << 20);
      smaller.plan.poolBytes =
          std::min(smaller.plan.poolBytes, (bytes + (1u << 20) - 1) & ~uint64_t{(1u << 20) - 1});
    }
  }
  if (!chain.back().change.empty()) smaller.change = chain.back().change + ", " + smaller.change;
  // The piece left out saved this much in the plan's decision.
  double leftOutNs = 0;
  if (decision)
    for (const SiteDecision& d : decision->sites) {
      if (!d.planned) continue;
      const bool match = range != SIZE_MAX
                             ? d.staticRange && d.moduleKey == last.staticRanges[range].moduleKey &&
                                   d.moduleOffset == last.staticRanges[range].offset
                             : !d.staticRange && d.siteKey == last.sites[site].key;
      if (match) leftOutNs += std::max(0.0, d.savingNs);
    }
  price(&smaller, leftOutNs);
  chain.push_back(smaller);
  return chain;
}

std::string planSummary(const Plan& plan, const PlanDecision& decision, double predictedNs) {
  size_t registered = 0;
  uint64_t registeredBytes = 0;
  for (const PlanSite& s : plan.sites)
    if (s.strategy == SiteStrategy::Register) {
      ++registered;
      registeredBytes += s.profiled ? s.profile.peakLiveBytes : 0;
    }
  for (const PlanStaticRange& r : plan.staticRanges) registeredBytes += r.bytes;
  const size_t pooled = plan.sites.size() - registered;
  std::string s = "optimizing: ";
  std::string what;
  if (registered)
    what = std::to_string(registered) + (registered == 1 ? " site" : " sites") +
           " registered in place (~" + formatBytes(registeredBytes) + " at the traced peak)";
  if (pooled)
    what += (what.empty() ? "" : ", ") + std::to_string(pooled) +
            (pooled == 1 ? " site" : " sites") +
            (plan.directAllocation
                 ? " allocated by the " + plan.poolPolicy + " policy (no pool)"
                 : " from a pool (" + plan.poolPolicy + ", " + formatBytes(plan.poolBytes) + ")");
  if (plan.hasRegistrations())
    what += std::string(what.empty() ? "" : ", ") + "untracked memory registered in place";
  s += what.empty() ? (plan.startupOnly() ? "start-up only (nothing pinned)" : "nothing pinned")
                    : what;
  if (plan.earlyContext) s += ", the context made early";
  if (plan.earlyContext && plan.buildAheadPrograms)
    s += " and " + std::to_string(plan.buildAheadPrograms) + " program" +
         (plan.buildAheadPrograms == 1 ? "" : "s") + " built ahead";
  const double net = predictedNs < 0 ? decision.netSavingNs() : predictedNs;
  s += "; predicted saving ~" + formatDuration(net) + " (" + percent(net, decision.runNs) +
       " of the traced run); --stats shows what was done";
  return s;
}

std::string describeDecision(const AppProfile& profile, const Plan& plan,
                             const PlanDecision& decision, bool planned) {
  std::string s = "program: " + profile.program.describe() + " (" + profile.program.key() + ")\n";
  s += "device:  " + profile.device + "\n";
  s += "traced:  " + profile.createdUtc + ", " + formatDuration(decision.runNs) + "; " +
       profile.eligibility.reason + "\n";
  s += "prices:  " + decision.gainSource + "\n";
  size_t n = 0;
  for (const SiteDecision& d : decision.sites) {
    s += "\n" + std::to_string(++n) + ". " + d.what + "\n";
    s += "   memory:   " + d.memory + "\n";
    s += "   strategy: " + d.strategy + (d.planned ? "" : "") + "\n";
    if (!d.when.empty()) s += "   when:     " + d.when + "\n";
    s += "   why:      " + d.why + "\n";
  }
  if (decision.sites.empty()) s += "\n(no candidate sites)\n";
  s += "\n";
  if (planned && plan.hasPoolSites())
    s += "pool:    " + plan.poolPolicy + ", " + formatBytes(plan.poolBytes) + "\n";
  if (planned && plan.directAllocation)
    s += "pool:    none (--no-pool: each block made by " + plan.poolPolicy + ")\n";
  if (planned && plan.earlyContext)
    s += std::string(
             "context: made by hetopt at start-up and handed to the program's "
             "clCreateContext (it makes one, on this device): ") +
         (plan.startupOnly() ? "made while the program still prepares its input"
                             : "pinning starts while it still prepares its input") +
         "\n";
  if (planned && !decision.driver.empty()) s += "driver:  " + decision.driver + "\n";
  const AppProfile::Startup& st = profile.startup;
  if (st.known() && !(planned && plan.driverLate))
    s += "start-up: traced first OpenCL call at " +
         formatDuration(static_cast<double>(st.firstCallNs)) + " (drivers loaded in " +
         formatDuration(static_cast<double>(st.enumerateNs)) + ")" +
         (st.firstContextNs
              ? ", first context at " + formatDuration(static_cast<double>(st.firstContextNs)) +
                    " (made in " + formatDuration(static_cast<double>(st.contextNs)) + ")"
              : std::string()) +
         "; overlapped when optimized ~" + formatDuration(decision.startupNs) + "\n";
  if (planned && plan.earlyContext && !plan.driverLate) {
    const double context = decision.startupNs - decision.buildAheadNs;
    const uint64_t n = plan.buildAheadPrograms;
    const std::string programs =
        n ? ", " + std::to_string(n) + " program" + (n == 1 ? "" : "s") + " built ahead" : "";
    s += "start-up: context" + programs + " (~" + formatDuration(decision.startupNs) +
         " off the path)\n";
    s += "  ahead:  the context (~" + formatDuration(context) + " off the path)\n";
    if (n)
      s += "  ahead:  " + std::to_string(n) + " program" + (n == 1 ? "" : "s") +
           " built from the traced source (~" + formatDuration(decision.buildAheadNs) +
           " off the path; traced builds " + formatDuration(static_cast<double>(st.buildNs)) +
           ")\n";
  }
  s += (planned ? "plan:    " : "decline: ") + decision.verdict + "\n";
  return s;
}

}  // namespace hetopt::analyzer
