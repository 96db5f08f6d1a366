// SPDX-License-Identifier: MIT
/** @file Predicted gains from a stored characterization; see gain.h. */
#include "analyzer/gain.h"

#include <algorithm>
#include <cctype>

#include "characterize/records.h"

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
    // The size that carries most of the site's bytes picks the policy.
    uint64_t typical = site.h2d.typicalBytes;
    if (!h2d || (d2h && site.d2h.typicalBytes * site.d2h.transfers >
                            site.h2d.typicalBytes * site.h2d.transfers))
      typical = site.d2h.typicalBytes;
    Direction dir = h2d && d2h ? Direction::RoundTrip : h2d ? Direction::H2D : Direction::D2H;
    const characterize::Decision* decision = nullptr;
    for (const characterize::Decision& d : m_run.decisions)
      if (d.direction == dir && d.sizeLo <= typical && typical < d.sizeHi) decision = &d;
    if (!decision) {
      out->note = "the characterization has no decision for " + std::to_string(typical) +
                  "-byte transfers; re-run `hetopt characterize`";
      return;
    }
    out->policy = policyName(decision->policy);
    out->allocMode = characterize::allocModeName(decision->alloc);
    out->standardNs = transferNs(site.h2d, site.d2h, PolicyKind::Standard);
    out->optimizedNs = transferNs(site.h2d, site.d2h, decision->policy);
    if (decision->policy == PolicyKind::Register) {
      // In-place registration is not built yet: `hetopt run` serves such sites from a hybrid pool
      // (the pooled policy with the same transfer speed), so predict what it will do.
      out->policy = policyName(PolicyKind::Hybrid);
      out->allocMode = characterize::allocModeName(characterize::AllocMode::Pool);
      out->optimizedNs = transferNs(site.h2d, site.d2h, PolicyKind::Hybrid);
      out->optimizedNs += poolCostNs(PolicyKind::Hybrid, site);
    } else if (decision->alloc == characterize::AllocMode::Direct &&
               decision->policy != PolicyKind::Standard) {
      // Allocated at the site itself: every allocation pays the policy's extra cost.
      double extra = allocNs(decision->policy, site.typicalAllocBytes) -
                     allocNs(PolicyKind::Standard, site.typicalAllocBytes);
      out->optimizedNs += std::max(0.0, extra) * static_cast<double>(site.allocations);
    } else if (decision->alloc == characterize::AllocMode::Pool) {
      out->optimizedNs += poolCostNs(decision->policy, site);
    }
    out->known = true;
    out->note = describe();
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
      out->note = "the characterization has no register curves (the device refused host-pointer "
                  "buffers, or an old characterization)";
      return;
    }
    out->policy = policyName(PolicyKind::Register);
    out->allocMode = characterize::allocModeName(characterize::AllocMode::Direct);
    out->standardNs = transferNs(memory.h2d, memory.d2h, PolicyKind::Standard);
    // One registration of the range (the register curves time only that: the memory exists),
    // whether it lands on the pool thread (static data) or on the first transfer (a mapping):
    // like a pool, it competes with the program for the machine.
    out->optimizedNs = transferNs(memory.h2d, memory.d2h, PolicyKind::Register) +
                       allocNs(PolicyKind::Register, memory.regionBytes);
    out->known = true;
    out->note = describe();
  }

 private:
  /// The site's share of the pool: pinning its peak live bytes once. The pool is prepared on a
  /// thread while the program starts, but that is not free: it competes with the program's own
  /// OpenCL start-up (measured on an H100: a 241 MiB pool made a program 11% slower end to end),
  /// so a site that crosses once or twice must not be worth less than its pinning.
  double poolCostNs(PolicyKind policy, const CandidateSite& site) const {
    double extra = allocNs(policy, site.peakLiveBytes) - allocNs(PolicyKind::Standard, site.peakLiveBytes);
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

std::unique_ptr<GainModel> loadGainModel(Db& db, const std::string& device, std::string* why) {
  std::vector<CharacterizationRun> runs;
  std::string error;
  if (!characterize::loadAllRuns(db, &runs, &error)) {
    *why = "cannot read characterizations from " + db.path() + ": " + error;
    return nullptr;
  }
  const std::string want = lower(device);
  // Newest first: a re-characterization after a driver update wins.
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    const std::string name = lower(it->info.key.deviceName);
    if (name.empty() || want.empty()) continue;
    if (want.find(name) == std::string::npos && name.find(want) == std::string::npos) continue;
    if (it->decisions.empty()) continue;
    return std::make_unique<CurveGainModel>(std::move(*it));
  }
  *why = "no characterization for " + (device.empty() ? std::string("this device") : device) +
         " in " + db.path() + "; run `hetopt characterize`";
  return nullptr;
}

}  // namespace hetopt::analyzer
