// SPDX-License-Identifier: MIT
/** @file Predicted gains from a stored characterization; see gain.h.
 * CurveGainModel prices sites and untracked memory with a characterization run's fitted curves. */
#include "analyzer/gain.h"

#include <algorithm>
#include <cctype>

#include "characterize/records.h"
#include "common/units.h"

namespace hetopt::analyzer {
namespace {

using characterize::CharacterizationRun;
using characterize::Direction;
using characterize::Measure;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return s;
}

class CurveGainModel : public GainModel {
 public:
  explicit CurveGainModel(CharacterizationRun run) : m_run(std::move(run)) {}

  std::string describe() const override {
    return m_run.info.describe() + ", characterized " + m_run.info.createdUtc;
  }

  void predict(const CandidateSite& site, GainPrediction* out) const override {
    *out = GainPrediction{};
    const bool h2d = site.h2d.transfers > 0, d2h = site.d2h.transfers > 0;
    if (!h2d && !d2h) {
      out->note = "no transfers";
      return;
    }
    baseline(site.h2d, site.d2h, out);
    // Two ways to pin the site, each charged in full: a pool (its share pinned once, then every
    // allocation served from it) or registration in place (every allocation registered).
    GainPrediction pool = *out, reg = *out;
    const PolicyKind pooled = poolPolicy(site);
    pool.policy = policyName(pooled);
    pool.allocMode = characterize::allocModeName(characterize::AllocMode::Pool);
    pool.costNs = poolCostNs(pooled, site);
    pool.optimizedNs = transferNs(site.h2d, site.d2h, pooled) + pool.costNs;
    const bool canRegister = hasFit(Measure::Alloc, PolicyKind::Register) &&
                             (!h2d || hasFit(Measure::H2D, PolicyKind::Register)) &&
                             (!d2h || hasFit(Measure::D2H, PolicyKind::Register));
    if (canRegister) {
      reg.policy = policyName(PolicyKind::Register);
      reg.allocMode = characterize::allocModeName(characterize::AllocMode::Direct);
      reg.costNs = allocNs(PolicyKind::Register, site.typicalAllocBytes) *
                   static_cast<double>(std::max<uint64_t>(site.allocations, 1));
      reg.optimizedNs = transferNs(site.h2d, site.d2h, PolicyKind::Register) + reg.costNs;
    }
    *out = canRegister && reg.savingNs() >= pool.savingNs() ? reg : pool;
    out->known = true;
    out->note = describe();
  }

  bool registerCost(uint64_t* latencyNs, uint64_t* nsPerMiB) const override {
    if (!hasFit(Measure::Alloc, PolicyKind::Register)) return false;
    // A line through the curve at 1 MiB and 256 MiB: the sizes the register strategy serves.
    const double small = allocNs(PolicyKind::Register, 1 << 20);
    const double large = allocNs(PolicyKind::Register, 256ull << 20);
    const double slope = std::max(0.0, (large - small) / 255.0);
    *nsPerMiB = saturatingU64(slope);
    *latencyNs = saturatingU64(small - slope);
    return true;
  }

  void predictRegistration(const UntrackedMemory& memory, GainPrediction* out) const override {
    *out = GainPrediction{};
    if (memory.h2d.transfers == 0 && memory.d2h.transfers == 0) {
      out->note = "no transfers";
      return;
    }
    const characterize::Fit* h2d = m_run.findFit(Measure::H2D, PolicyKind::Register);
    const characterize::Fit* d2h = m_run.findFit(Measure::D2H, PolicyKind::Register);
    if ((memory.h2d.transfers && !(h2d && h2d->fn.valid())) ||
        (memory.d2h.transfers && !(d2h && d2h->fn.valid()))) {
      out->note =
          "the characterization has no register curves (the device refused host-pointer "
          "buffers, or an old characterization)";
      return;
    }
    out->policy = policyName(PolicyKind::Register);
    out->allocMode = characterize::allocModeName(characterize::AllocMode::Direct);
    baseline(memory.h2d, memory.d2h, out);
    // One registration of the range (the register curves time only that: the memory exists),
    // whether it lands on the pool thread (static data) or on the first transfer (a mapping):
    // like a pool, it competes with the program for the machine.
    out->costNs = allocNs(PolicyKind::Register, memory.regionBytes);
    out->optimizedNs = transferNs(memory.h2d, memory.d2h, PolicyKind::Register) + out->costNs;
    out->known = true;
    out->note = describe();
  }

 private:
  /// The transfers as they cost the program: the larger of what the trace measured on the device
  /// (first-touch faults and staging included: 1.2-1.7 GB/s into untouched memory on an H100,
  /// where the warm curve says 7-13) and the standard curves, which time blocking transfers on the
  /// host. A pageable copy's device time leaves out the driver's staging copy on the host: on an
  /// H100 SHOC's BusSpeedDownload traced 457 ms of device time for copies that pinning made ~2 s
  /// shorter.
  void baseline(const TransferStats& h2d, const TransferStats& d2h, GainPrediction* out) const {
    const double measured = h2d.deviceNs + d2h.deviceNs;
    const double curves = transferNs(h2d, d2h, PolicyKind::Standard);
    out->tracedNs = measured;
    out->measured = measured > 0 && measured >= curves;
    out->standardNs = std::max(measured, curves);
  }
  bool hasFit(Measure m, PolicyKind p) const {
    const characterize::Fit* fit = m_run.findFit(m, p);
    return fit && fit->fn.valid();
  }
  /// The pooled policy the decision table prefers for the site's typical transfer size (the
  /// round-trip row when data crosses both ways); hybrid, whose pages are locked before any
  /// context exists, when the table prefers no pool there.
  PolicyKind poolPolicy(const CandidateSite& site) const {
    const bool h2d = site.h2d.transfers > 0, d2h = site.d2h.transfers > 0;
    uint64_t typical = site.h2d.typicalBytes;
    if (!h2d || (d2h && site.d2h.typicalBytes * site.d2h.transfers >
                            site.h2d.typicalBytes * site.h2d.transfers))
      typical = site.d2h.typicalBytes;
    Direction dir = h2d && d2h ? Direction::RoundTrip : h2d ? Direction::H2D : Direction::D2H;
    for (const characterize::Decision& d : m_run.decisions)
      if (d.direction == dir && d.sizeLo <= typical && typical < d.sizeHi &&
          d.alloc == characterize::AllocMode::Pool && d.policy != PolicyKind::Standard &&
          d.policy != PolicyKind::Register)
        return d.policy;
    return PolicyKind::Hybrid;
  }
  /// The site's share of the pool: pinning its peak live bytes once. The pool is prepared on a
  /// thread while the program starts, but that is not free: it competes with the program's own
  /// OpenCL start-up (measured on an H100: a 241 MiB pool made a program 11% slower end to end),
  /// so a site that crosses once or twice must not be worth less than its pinning.
  double poolCostNs(PolicyKind policy, const CandidateSite& site) const {
    double extra =
        allocNs(policy, site.peakLiveBytes) - allocNs(PolicyKind::Standard, site.peakLiveBytes);
    return std::max(0.0, extra);
  }
  /// Predicted time of these transfers with `policy`'s memory; standard's where the policy has
  /// no fit for a direction.
  double transferNs(const TransferStats& h2d, const TransferStats& d2h, PolicyKind policy) const {
    double total = 0;
    for (Measure m : {Measure::H2D, Measure::D2H}) {
      const TransferStats& t = m == Measure::H2D ? h2d : d2h;
      const characterize::Fit* fit = m_run.findFit(m, policy);
      if (!fit || !fit->fn.valid()) fit = m_run.findFit(m, PolicyKind::Standard);
      if (!fit || !fit->fn.valid()) continue;
      for (const TransferStats::SizeCount& s : t.sizes)
        total += static_cast<double>(s.count) * fit->fn.eval(static_cast<double>(s.bytes));
    }
    return total;
  }
  double allocNs(PolicyKind policy, uint64_t size) const {
    double ns = 0;
    for (Measure m : {Measure::Alloc, Measure::Free}) {
      const characterize::Fit* fit = m_run.findFit(m, policy);
      if (fit && fit->fn.valid()) ns += fit->fn.eval(static_cast<double>(size));
    }
    return ns;
  }

  CharacterizationRun m_run;
};

}  // namespace

namespace {

/// Where the newest run whose device name matches `device` is (a re-characterization after a
/// driver update wins); runs.size() when none with decisions does.
size_t runFor(const std::vector<CharacterizationRun>& runs, const std::string& device) {
  const std::string want = lower(device);
  for (size_t i = runs.size(); i-- > 0;) {
    const std::string name = lower(runs[i].info.key.deviceName);
    if (name.empty() || want.empty()) continue;
    if (want.find(name) == std::string::npos && name.find(want) == std::string::npos) continue;
    if (runs[i].decisions.empty()) continue;
    return i;
  }
  return runs.size();
}

std::string noCharacterization(const std::string& device, const std::string& dbPath) {
  return "no characterization for " + (device.empty() ? std::string("this device") : device) +
         " in " + dbPath + "; run `hetopt characterize`";
}

std::string unreadable(const std::string& dbPath, const std::string& error) {
  return "cannot read characterizations from " + dbPath + ": " + error;
}

}  // namespace

std::unique_ptr<GainModel> loadGainModel(Db& db, const std::string& device, std::string* why) {
  std::vector<CharacterizationRun> runs;
  std::string error;
  if (!characterize::loadAllRuns(db, &runs, &error, /*samples=*/false)) {
    *why = unreadable(db.path(), error);
    return nullptr;
  }
  if (const size_t i = runFor(runs, device); i < runs.size())
    return std::make_unique<CurveGainModel>(std::move(runs[i]));
  *why = noCharacterization(device, db.path());
  return nullptr;
}

std::unique_ptr<OpenedDb> openDbWithCurves(const std::string& path) {
  auto opened = std::make_unique<OpenedDb>();
  opened->path = path;
  opened->db = Db::open(path, Db::Mode::ReadWriteCreate, &opened->error);
  if (opened->db) {
    opened->runsRead =
        characterize::loadAllRuns(*opened->db, &opened->runs, &opened->error, /*samples=*/false);
    if (!opened->runsRead) opened->error = unreadable(opened->db->path(), opened->error);
  }
  return opened;
}

std::unique_ptr<GainModel> gainModelFor(const OpenedDb& opened, const std::string& device,
                                        std::string* why) {
  if (!opened.runsRead) {
    *why = opened.error;
    return nullptr;
  }
  if (const size_t i = runFor(opened.runs, device); i < opened.runs.size())
    return std::make_unique<CurveGainModel>(opened.runs[i]);
  *why = noCharacterization(device, opened.db->path());
  return nullptr;
}

}  // namespace hetopt::analyzer
