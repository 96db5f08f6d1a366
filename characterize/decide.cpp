// SPDX-License-Identifier: MIT
/** @file Fitting a run and deriving its decision table; see decide.h.
 * choose() applies decide.h's rules at one size; the decision and summary tables. */
#include "characterize/decide.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "common/units.h"

namespace hetopt::characterize {
namespace {

struct Choice {
  PolicyKind policy = PolicyKind::Standard;
  AllocMode alloc = AllocMode::Plain;
  double predictedNs = 0;
  double standardNs = 0;
  std::string reason;
};

bool usableAt(const CharacterizationRun& run, PolicyKind p, double size) {
  const PolicyAvailability* a = run.findPolicy(p);
  if (!a) return false;
  switch (a->state) {
    case PolicyAvailability::State::Available:
      return true;
    case PolicyAvailability::State::Partial:
      return size <= static_cast<double>(a->maxSize);
    case PolicyAvailability::State::Unavailable:
      return false;
  }
  return false;
}

// Predicted transfer time of `p` at `size` for `d`; < 0 when there is no fit.
double transferNs(const CharacterizationRun& run, PolicyKind p, Direction d, double size) {
  auto one = [&](Measure m) {
    const Fit* f = run.findFit(m, p, 1);
    return f && f->fn.valid() ? f->fn.eval(size) : -1.0;
  };
  if (d == Direction::H2D) return one(Measure::H2D);
  if (d == Direction::D2H) return one(Measure::D2H);
  double h = one(Measure::H2D), r = one(Measure::D2H);
  return h < 0 || r < 0 ? -1.0 : h + r;
}

// Measured median transfer time of `p` for `d` at exactly `size` (concurrency 1); < 0 when that
// size was not measured.
double measuredNs(const CharacterizationRun& run, PolicyKind p, Direction d, uint64_t size) {
  auto one = [&](Measure m) {
    for (const Sample& s : run.samples)
      if (s.kind == m && s.policy == p && s.concurrency == 1 && s.size == size && s.medianNs > 0)
        return s.medianNs;
    return -1.0;
  };
  if (d == Direction::H2D) return one(Measure::H2D);
  if (d == Direction::D2H) return one(Measure::D2H);
  double h = one(Measure::H2D), r = one(Measure::D2H);
  return h < 0 || r < 0 ? -1.0 : h + r;
}

// Whether the measurements inside the octave around `size` (the sizes measured there) confirm that
// `p` beats standard by half the margin. Fits of different policies are made independently and a
// noisy point can bend one of them; a gain the raw medians do not show is not acted on. With no
// measurement in the octave (extrapolation) the fit stands.
bool measurementsConfirm(const CharacterizationRun& run, PolicyKind p, Direction d, double size,
                         const DecisionRules& r, std::string* why) {
  for (const Sample& s : run.samples) {
    double x = static_cast<double>(s.size);
    if (s.kind != Measure::H2D || s.policy != PolicyKind::Standard || s.concurrency != 1 ||
        x < size / std::sqrt(2.0) * 0.999 || x > size * std::sqrt(2.0) * 1.001)
      continue;
    double mp = measuredNs(run, p, d, s.size),
           ms = measuredNs(run, PolicyKind::Standard, d, s.size);
    if (mp <= 0 || ms <= 0) continue;
    if (ms <= mp * (1 + r.similarRel / 2) || ms - mp <= r.similarAbsNs) {
      char buf[160];
      snprintf(buf, sizeof buf, "the fit's gain of %s is not in the medians measured at %s (%.2fx)",
               policyName(p), formatBytes(s.size).c_str(), ms / mp);
      *why = buf;
      return false;
    }
  }
  return true;
}

// Allocation + free time of `p` at `size`; < 0 when unknown.
double allocNs(const CharacterizationRun& run, PolicyKind p, double size) {
  const Fit* a = run.findFit(Measure::Alloc, p, 1);
  const Fit* f = run.findFit(Measure::Free, p, 1);
  if (!a || !a->fn.valid() || !f || !f->fn.valid()) return -1;
  return a->fn.eval(size) + f->fn.eval(size);
}

Choice choose(const CharacterizationRun& run, Direction d, double size, const DecisionRules& r) {
  Choice c;
  c.standardNs = transferNs(run, PolicyKind::Standard, d, size);
  double stdAlloc = allocNs(run, PolicyKind::Standard, size);
  struct Candidate {
    PolicyKind p;
    double t;
    AllocMode mode;
    int rank;
    double extraAlloc;
  };
  std::vector<Candidate> cands;
  for (PolicyKind p : kAllPolicies) {
    if (!usableAt(run, p, size)) continue;
    double t = transferNs(run, p, d, size);
    if (t <= 0) continue;
    Candidate k{p, t, AllocMode::Plain, 0, 0};
    if (p != PolicyKind::Standard) {
      double a = allocNs(run, p, size);
      k.extraAlloc = a < 0 ? INFINITY : a - std::max(stdAlloc, 0.0);
      double gain = c.standardNs - t;
      k.mode = (a >= 0 && k.extraAlloc <= gain) ? AllocMode::Direct : AllocMode::Pool;
      k.rank = k.mode == AllocMode::Direct ? 1 : (allocationOverlapsContextCreation(p) ? 2 : 3);
    }
    cands.push_back(k);
  }
  if (cands.empty() || c.standardNs <= 0) {
    c.predictedNs = c.standardNs;
    c.reason = "no measurements";
    return c;
  }
  const Candidate* fastest = &*std::min_element(
      cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) { return a.t < b.t; });
  auto similar = [&](const Candidate& k) {
    return k.t <= fastest->t * (1 + r.similarRel) || k.t - fastest->t <= r.similarAbsNs;
  };
  const Candidate* pick = nullptr;
  // Within a rank the cheaper wins: for direct policies the allocation is part of the price, for
  // pool policies it is paid ahead of time.
  auto price = [](const Candidate& k) {
    return k.mode == AllocMode::Direct ? k.t + std::max(k.extraAlloc, 0.0) : k.t;
  };
  for (const Candidate& k : cands) {
    if (!similar(k)) continue;
    if (!pick || k.rank < pick->rank || (k.rank == pick->rank && price(k) < price(*pick)))
      pick = &k;
  }
  // The preferred policy must also beat standard clearly: one that merely ties with standard while
  // standard trails the fastest by a little more than the margin gains nothing.
  const Candidate* preferred = pick;
  if (pick->p != PolicyKind::Standard && cands.front().p == PolicyKind::Standard) {
    const Candidate& standard = cands.front();
    if (standard.t <= pick->t * (1 + r.similarRel) || standard.t - pick->t <= r.similarAbsNs)
      pick = &standard;
  }
  std::string unconfirmed;
  if (pick->p != PolicyKind::Standard && cands.front().p == PolicyKind::Standard &&
      !measurementsConfirm(run, pick->p, d, size, r, &unconfirmed)) {
    c.policy = PolicyKind::Standard;
    c.alloc = AllocMode::Plain;
    c.predictedNs = c.standardNs;
    c.reason = unconfirmed;
    return c;
  }
  c.policy = pick->p;
  c.alloc = pick->mode;
  c.predictedNs = pick->t;
  char buf[256];
  int pct = static_cast<int>(std::lround(r.similarRel * 100));
  if (pick->p == PolicyKind::Standard) {
    if (fastest->p == PolicyKind::Standard) {
      c.reason = "standard is fastest";
    } else if (preferred == pick) {
      snprintf(buf, sizeof buf, "within %d%% of the fastest (%s): pinning does not pay", pct,
               policyName(fastest->p));
      c.reason = buf;
    } else {
      snprintf(buf, sizeof buf,
               "%s is %.1fx faster but needs a pool; %s, which needs none, gains less than %d%%",
               policyName(fastest->p), c.standardNs / fastest->t, policyName(preferred->p), pct);
      c.reason = buf;
    }
    return c;
  }
  if (pick == fastest) {
    c.reason = "fastest";
  } else {
    const char* why = "";
    if (pick->rank < fastest->rank)
      why = pick->mode == AllocMode::Direct ? " and needs no pool"
                                            : " and its allocation overlaps context creation";
    snprintf(buf, sizeof buf, "within %d%% of the fastest (%s)%s", pct, policyName(fastest->p),
             why);
    c.reason = buf;
  }
  double gain = c.standardNs - pick->t;
  if (pick->mode == AllocMode::Direct) {
    snprintf(buf, sizeof buf, "; allocation +%s repaid by one transfer (saves %s)",
             formatDuration(std::max(pick->extraAlloc, 0.0)).c_str(), formatDuration(gain).c_str());
  } else if (std::isinf(pick->extraAlloc)) {
    snprintf(buf, sizeof buf, "; allocation cost unknown: pool");
  } else {
    snprintf(
        buf, sizeof buf, "; allocation +%s exceeds one transfer's saving %s: pool%s",
        formatDuration(pick->extraAlloc).c_str(), formatDuration(gain).c_str(),
        allocationOverlapsContextCreation(pick->p) ? " (prepared during context creation)" : "");
  }
  c.reason += buf;
  return c;
}

std::string rangeText(uint64_t lo, uint64_t hi) {
  if (lo == 0 && hi == UINT64_MAX) return "all sizes";
  if (lo == 0) return "< " + formatBytes(hi);
  if (hi == UINT64_MAX) return ">= " + formatBytes(lo);
  return formatBytes(lo) + " .. " + formatBytes(hi);
}

}  // namespace

void fitSamples(CharacterizationRun* run) {
  std::map<std::tuple<Measure, PolicyKind, int>, std::vector<FitPoint>> groups;
  for (const Sample& s : run->samples) {
    if (s.medianNs > 0)
      groups[{s.kind, s.policy, s.concurrency}].push_back(
          {static_cast<double>(s.size), s.medianNs});
  }
  run->fits.clear();
  for (auto& [key, points] : groups) {
    Fit f;
    std::tie(f.kind, f.policy, f.concurrency) = key;
    f.fn = fitCost(points);
    if (f.fn.valid()) run->fits.push_back(f);
  }
}

std::vector<Decision> decide(const CharacterizationRun& run, const DecisionRules& rules) {
  std::vector<Decision> out;
  const Fit* stdH2D = run.findFit(Measure::H2D, PolicyKind::Standard, 1);
  const Fit* stdD2H = run.findFit(Measure::D2H, PolicyKind::Standard, 1);
  if (!stdH2D || !stdD2H) return out;
  uint64_t maxSize = rules.maxSize
                         ? rules.maxSize
                         : saturatingU64(std::max(stdH2D->fn.sizeMax, stdD2H->fn.sizeMax));
  uint64_t minSize = std::max<uint64_t>(rules.minSize, 1);
  // Ranges [2^k, 2^(k+1)) between minSize and maxSize, judged at their geometric middle; the first
  // is extended down to 0 and the last up to infinity (extrapolating the outer regimes).
  std::vector<uint64_t> starts;
  for (uint64_t s = minSize; s <= maxSize && s > 0; s *= 2) starts.push_back(s);
  if (starts.empty()) starts.push_back(minSize);
  auto refOf = [&](size_t i) {
    return i + 1 < starts.size() ? static_cast<double>(starts[i]) * std::sqrt(2.0)
                                 : static_cast<double>(starts[i]);
  };
  for (Direction d : {Direction::H2D, Direction::D2H, Direction::RoundTrip}) {
    std::vector<Choice> choices;
    for (size_t i = 0; i < starts.size(); ++i) choices.push_back(choose(run, d, refOf(i), rules));
    // A choice that differs at one octave only, between two that agree, is measurement noise (a
    // real regime change is a step, not a bump): that octave follows its neighbours.
    for (size_t i = 1; i + 1 < choices.size(); ++i) {
      const Choice &prev = choices[i - 1], &next = choices[i + 1];
      if (choices[i].policy == prev.policy || prev.policy != next.policy ||
          prev.alloc != next.alloc)
        continue;
      Choice c = prev;
      c.standardNs = transferNs(run, PolicyKind::Standard, d, refOf(i));
      c.predictedNs = transferNs(run, prev.policy, d, refOf(i));
      c.reason = std::string("as the neighbouring sizes: ") + policyName(choices[i].policy) +
                 " ahead at this octave only is taken for noise";
      choices[i] = c;
    }
    size_t first = 0;
    for (size_t i = 0; i <= starts.size(); ++i) {
      bool boundary = i == starts.size() || choices[i].policy != choices[first].policy ||
                      choices[i].alloc != choices[first].alloc;
      if (!boundary) continue;
      size_t mid = (first + i - 1) / 2;
      Decision dec;
      dec.direction = d;
      dec.sizeLo = first == 0 ? 0 : starts[first];
      dec.sizeHi = i == starts.size() ? UINT64_MAX : starts[i];
      dec.policy = choices[mid].policy;
      dec.alloc = choices[mid].alloc;
      dec.refSize = saturatingU64(refOf(mid));
      dec.predictedNs = choices[mid].predictedNs;
      dec.standardNs = choices[mid].standardNs;
      dec.reason = choices[mid].reason;
      out.push_back(dec);
      first = i;
    }
  }
  return out;
}

std::string formatDecisionTable(const CharacterizationRun& run) {
  std::string out;
  char line[512];
  snprintf(line, sizeof line, "  %-10s %-22s %-9s %-24s %-7s %s\n", "transfer", "size range",
           "policy", "predicted vs standard", "alloc", "why");
  out += line;
  for (const Decision& d : run.decisions) {
    // Standard rows show the time itself, the others their speedup, both at the reference size.
    char vs[64];
    std::string ref = formatBytes(d.refSize);
    if (d.policy == PolicyKind::Standard)
      snprintf(vs, sizeof vs, "%s @%s", formatDuration(d.standardNs).c_str(), ref.c_str());
    else
      snprintf(vs, sizeof vs, "%.1fx @%s", d.speedup(), ref.c_str());
    snprintf(line, sizeof line, "  %-10s %-22s %-9s %-24s %-7s %s\n", directionName(d.direction),
             rangeText(d.sizeLo, d.sizeHi).c_str(), policyName(d.policy), vs,
             allocModeName(d.alloc), d.reason.c_str());
    out += line;
  }
  if (run.decisions.empty()) out += "  (no decisions: standard transfers were not measured)\n";
  return out;
}

std::string formatMeasuredSummary(const CharacterizationRun& run) {
  // The sample of (kind, policy, concurrency) at the largest size <= `atMost`; null when none.
  auto at = [&](Measure m, PolicyKind p, int c, uint64_t atMost) -> const Sample* {
    const Sample* best = nullptr;
    for (const Sample& s : run.samples)
      if (s.kind == m && s.policy == p && s.concurrency == c && s.size <= atMost &&
          s.medianNs > 0 && (!best || s.size > best->size))
        best = &s;
    return best;
  };
  const uint64_t k64 = 64ull << 20, k256 = 256ull << 20;
  const Sample* ref = at(Measure::H2D, PolicyKind::Standard, 1, k64);
  int maxC = 1;
  for (const Sample& s : run.samples) maxC = std::max(maxC, s.concurrency);
  const Sample* refC = at(Measure::H2D, PolicyKind::Standard, maxC, UINT64_MAX);
  if (!ref) return "";
  char line[256];
  std::string bw = formatBytes(ref->size);
  std::string conc =
      std::to_string(maxC) + "x" + (refC ? formatBytes(refC->size) : std::string("?"));
  snprintf(line, sizeof line, "  %-9s %13s %13s %15s %15s %12s %12s\n", "measured",
           ("H2D@" + bw).c_str(), ("D2H@" + bw).c_str(), ("H2D " + conc).c_str(),
           ("D2H " + conc).c_str(), "alloc 64MiB", "alloc 256MiB");
  std::string out = line;
  auto gbs = [](const Sample* s) {
    char b[32];
    if (s)
      snprintf(b, sizeof b, "%.1f GB/s", s->bandwidthGBs());
    else
      snprintf(b, sizeof b, "-");
    return std::string(b);
  };
  auto allocAt = [&](PolicyKind p, uint64_t size) {
    const Sample* s = at(Measure::Alloc, p, 1, size);
    return s && s->size == size ? formatDuration(s->medianNs) : std::string("-");
  };
  for (PolicyKind p : kAllPolicies) {
    const Sample* h = at(Measure::H2D, p, 1, ref->size);
    if (!h) continue;
    snprintf(line, sizeof line, "  %-9s %13s %13s %15s %15s %12s %12s\n", policyName(p),
             gbs(h).c_str(), gbs(at(Measure::D2H, p, 1, ref->size)).c_str(),
             gbs(refC ? at(Measure::H2D, p, maxC, refC->size) : nullptr).c_str(),
             gbs(refC ? at(Measure::D2H, p, maxC, refC->size) : nullptr).c_str(),
             allocAt(p, k64).c_str(), allocAt(p, k256).c_str());
    out += line;
  }
  return out;
}

std::string formatPolicySummary(const CharacterizationRun& run) {
  std::string out;
  for (const PolicyAvailability& p : run.policies) {
    out += "  " + std::string(policyName(p.policy)) + ": " + availabilityName(p.state);
    if (p.state == PolicyAvailability::State::Partial) out += " up to " + formatBytes(p.maxSize);
    if (!p.reason.empty()) out += " (" + p.reason + ")";
    out += "\n";
  }
  return out;
}

}  // namespace hetopt::characterize
