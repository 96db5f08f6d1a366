// SPDX-License-Identifier: MIT
/** @file See closed_loop.h.
 * Pairing the ledger's runs, each plan's standing, the next run, the loop's report. */
#include "analyzer/closed_loop.h"

#include <cstdint>
#include <cstdio>

namespace hetopt::analyzer {
namespace {

std::string ending(const LedgerRun& r) {
  return r.end == RunEnd::Signaled ? "signal " + std::to_string(r.code)
                                   : "exit status " + std::to_string(r.code);
}

// The newest usable control run that started before `seq`.
const LedgerRun* controlBefore(const Ledger& ledger, uint64_t seq) {
  for (auto r = ledger.runs.rbegin(); r != ledger.runs.rend(); ++r)
    if (r->seq < seq && r->kind == LedgerKind::Control && r->usable()) return &*r;
  return nullptr;
}

bool paired(const std::vector<LedgerPair>& pairs, const LedgerRun* run) {
  for (const LedgerPair& p : pairs)
    if (p.optimized == run || p.control == run) return true;
  return false;
}

}  // namespace

std::vector<LedgerPair> pairRuns(const Ledger& ledger) {
  std::vector<LedgerPair> pairs;
  const LedgerRun* pending = nullptr;
  for (const LedgerRun& r : ledger.runs) {
    if (!r.timed() || !r.usable()) continue;
    if (pending && pending->kind != r.kind) {
      const bool controlFirst = pending->kind == LedgerKind::Control;
      pairs.push_back({controlFirst ? pending : &r, controlFirst ? &r : pending});
      pending = nullptr;
    } else {
      pending = &r;
    }
  }
  return pairs;
}

std::vector<RunPair> timingPairs(const std::vector<LedgerPair>& pairs, uint64_t planId) {
  std::vector<RunPair> out;
  for (const LedgerPair& p : pairs)
    if (p.optimized->planId == planId && p.optimized->sameEnding(*p.control))
      out.push_back(
          {static_cast<double>(p.control->wallNs), static_cast<double>(p.optimized->wallNs)});
  return out;
}

Failure findFailure(const Ledger& ledger, const std::vector<LedgerPair>& pairs, uint64_t planId) {
  Failure f;
  auto failed = [&](const LedgerRun* run, const LedgerRun* control) {
    f.failed = true, f.run = run, f.control = control;
    f.what = ending(*run) + (control ? ", its control run " + ending(*control)
                                     : ", killed while no untouched run of the program ended so");
    return f;
  };
  for (const LedgerPair& p : pairs)
    if (p.optimized->planId == planId && !p.optimized->sameEnding(*p.control))
      return failed(p.optimized, p.control);
  for (const LedgerRun& r : ledger.runs) {
    if (r.kind != LedgerKind::Optimized || r.planId != planId || !r.usable() || paired(pairs, &r))
      continue;
    const LedgerRun* control = controlBefore(ledger, r.seq);
    // Unpaired: measured against the newest control before it, if any. A signal with none to
    // compare with is a failure (programs do not die natively in runs the user keeps doing); an
    // exit status waits for its pair.
    if (control ? !r.sameEnding(*control) : r.end == RunEnd::Signaled) return failed(&r, control);
  }
  return f;
}

std::vector<PlanStanding> standings(const Ledger& ledger, const std::vector<LedgerPair>& pairs,
                                    const std::vector<uint64_t>& chain) {
  std::vector<PlanStanding> out;
  for (uint64_t id : chain) {
    PlanStanding s;
    s.planId = id;
    s.failed = ledger.reverted(id);
    s.verdict = judgePairs(timingPairs(pairs, id));
    for (const LedgerRun& r : ledger.runs)
      s.optimizedRuns += r.kind == LedgerKind::Optimized && r.planId == id;
    out.push_back(s);
  }
  return out;
}

NextRun nextRun(const Ledger& ledger, const std::vector<uint64_t>& chain, bool optimizedAsked) {
  NextRun next;
  const std::vector<LedgerPair> pairs = pairRuns(ledger);
  next.chain = standings(ledger, pairs, chain);
  size_t active = next.chain.size();
  for (size_t i = 0; i < next.chain.size(); ++i) {
    if (next.chain[i].failed) {
      next.why = "failed";
      return next;
    }
    if (active == next.chain.size() && next.chain[i].verdict.optimizes()) active = i;
  }
  if (active == next.chain.size()) {
    next.why = next.chain.size() > 1 ? "exhausted" : "reverted";
    return next;
  }
  next.variant = active;
  next.kind = NextKind::Optimized;
  if (optimizedAsked) return next;
  const uint64_t id = chain[active];
  // The newest timed run that is or may become part of a pair.
  const LedgerRun* last = nullptr;
  for (auto r = ledger.runs.rbegin(); r != ledger.runs.rend() && !last; ++r)
    if (r->timed() && (r->end == RunEnd::Running || r->usable())) last = &*r;
  if (next.chain[active].verdict.state == VerdictState::Exploring) {
    if (last && last->kind == LedgerKind::Optimized && last->planId == id && !paired(pairs, last))
      next.kind = NextKind::Control;
    return next;
  }
  // Kept, or inconclusive and favourable: one run in kWatchEvery is a control.
  size_t sinceControl = 0;
  for (auto r = ledger.runs.rbegin(); r != ledger.runs.rend(); ++r) {
    if (r->kind == LedgerKind::Control) break;
    sinceControl += r->kind == LedgerKind::Optimized && r->planId == id;
  }
  if (sinceControl + 1 >= kWatchEvery) next.kind = NextKind::Control;
  return next;
}

LoopReport loopReport(const Ledger& ledger) {
  LoopReport out;
  std::vector<uint64_t> ids;
  auto note = [&](uint64_t id) {
    for (uint64_t known : ids)
      if (known == id) return;
    ids.push_back(id);
  };
  for (const LedgerRun& r : ledger.runs) {
    if (r.kind == LedgerKind::Optimized) note(r.planId);
    out.declined += r.kind == LedgerKind::Declined;
    if (r.kind == LedgerKind::Declined) out.lastDeclinedUnixNs = r.startedUnixNs;
    out.untouched += r.kind == LedgerKind::Untouched;
    out.timed += r.timed();
  }
  for (const LedgerRevert& v : ledger.reverts) note(v.planId);
  const std::vector<LedgerPair> pairs = pairRuns(ledger);
  out.plans = standings(ledger, pairs, ids);
  // Each plan's timing pairs, counted as its verdict counts them (timingPairs), so that the pairs
  // marked as in its window are the ones its verdict is over.
  std::vector<size_t> count(ids.size()), seen(ids.size());
  auto planIndex = [&](uint64_t id) {
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] == id) return i;
    return ids.size();
  };
  for (const LedgerPair& p : pairs)
    if (p.optimized->sameEnding(*p.control)) ++count[planIndex(p.optimized->planId)];
  for (const LedgerPair& p : pairs) {
    if (!p.optimized->sameEnding(*p.control)) continue;
    const size_t plan = planIndex(p.optimized->planId);
    LoopPair lp;
    lp.planId = p.optimized->planId;
    lp.controlSeq = p.control->seq, lp.optimizedSeq = p.optimized->seq;
    lp.controlStartedUnixNs = p.control->startedUnixNs;
    lp.optimizedStartedUnixNs = p.optimized->startedUnixNs;
    lp.wall = {static_cast<double>(p.control->wallNs), static_cast<double>(p.optimized->wallNs)};
    lp.inVerdict = seen[plan]++ >= verdictWindowBegin(count[plan]) && timedPair(lp.wall);
    out.pairs.push_back(lp);
  }
  // The newest run that followed a plan (optimized, control, or untouched for a reverted one).
  for (auto r = ledger.runs.rbegin(); r != ledger.runs.rend() && out.current == SIZE_MAX; ++r)
    for (size_t i = 0; i < ids.size() && r->planId; ++i)
      if (ids[i] == r->planId) out.current = i;
  return out;
}

const LedgerRun* ledgerRunOf(const Ledger& ledger, const RunRecord& record) {
  const LedgerRun* run = record.seq ? ledger.find(record.seq) : nullptr;
  if (!run || !run->timed() || run->end == RunEnd::Running) return nullptr;
  if ((run->kind == LedgerKind::Control) != (record.kind == RunKind::Untouched)) return nullptr;
  // The record's start lies within the run hetopt timed, give or take what hetopt did before its
  // ledger line (a record counts from hetopt's own start; the shim takes that start only within a
  // minute, optimize_stats.cpp), and a launched program starts after its launcher.
  constexpr uint64_t kSlackNs = 60000000000ull;
  return record.startedUnixNs + kSlackNs >= run->startedUnixNs &&
                 record.startedUnixNs <= run->startedUnixNs + run->wallNs + kSlackNs
             ? run
             : nullptr;
}

std::string whyUntouched(const Ledger& ledger, const NextRun& next) {
  if (next.why == "failed") {
    for (const PlanStanding& s : next.chain) {
      if (!s.failed) continue;
      for (const LedgerRevert& r : ledger.reverts) {
        if (r.planId != s.planId) continue;
        const LedgerRun* run = ledger.find(r.seq);
        return "its plan was reverted after an optimized run " +
               (run ? "(pid " + std::to_string(run->pid) + ") ended with " + ending(*run)
                    : std::string("failed")) +
               ", unlike the program untouched; a new `hetopt trace` or `hetopt characterize` "
               "plans again";
      }
    }
    return "its plan was reverted after a failed run";
  }
  std::string s = next.chain.size() > 1 ? "every plan tried was slower or no faster ("
                                        : "its plan was reverted (";
  for (size_t i = 0; i < next.chain.size(); ++i)
    s += (i ? "; " : "") + std::string(i ? "smaller plan " + std::to_string(i) + ": " : "") +
         verdictStateName(next.chain[i].verdict.state) + " " +
         describeVerdict(next.chain[i].verdict);
  return s +
         "); a new `hetopt trace` or `hetopt characterize` plans again, `hetopt report` shows the "
         "runs";
}

std::string describeVerdict(const Verdict& v) {
  char buf[160];
  if (v.windowPairs < 2)
    snprintf(buf, sizeof buf, "%zu pair%s so far", v.pairs, v.pairs == 1 ? "" : "s");
  else
    snprintf(buf, sizeof buf, "%sx [%s-%s] over %zu pairs", ratioText(v.pairedMedian).c_str(),
             ratioText(v.ciLow).c_str(), ratioText(v.ciHigh).c_str(), v.windowPairs);
  return buf;
}

std::string describeStanding(const Verdict& v, bool optimizedAsked) {
  std::string s = std::string(verdictStateName(v.state)) + ": " + describeVerdict(v);
  if (optimizedAsked && v.state == VerdictState::Exploring)
    s += "; --stats runs are always optimized: the control runs that pairs need come from plain "
         "`hetopt run`s";
  return s;
}

}  // namespace hetopt::analyzer
