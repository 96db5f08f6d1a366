// SPDX-License-Identifier: MIT
/**
 * @file The analysis of one trace: eligibility, the allocation sites that feed host<->device
 * transfers, what each is worth, and where the time went (docs/ANALYZER.md explains each step).
 */
#pragma once
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "analyzer/gain.h"
#include "analyzer/profile.h"
#include "analyzer/symbolizer.h"
#include "analyzer/timeline.h"
#include "trace/reader.h"

namespace hetopt::analyzer {

struct AnalysisOptions {
  double threshold = 0.1;  ///< eligibility threshold on the dispatch ratio
  bool symbolize = true;   ///< false: module+offset only (faster, for tools)
  Symbolizer::Options symbolizer;
  const GainModel* gain = nullptr;  ///< null: predictions say why there are none
  std::string noGainReason = "no characterization for this device; run `hetopt characterize`";
};

/// Analyzes a parsed trace into `out` (program identity and creation time are left to the
/// caller: the trace may come from another machine). Never fails on a trace the reader accepted.
///  - Eligibility: dispatch ratio = cumulative host<->device communication time (device time of
///    reads, writes, rect transfers, maps/unmaps, SVM copies, migrations) / cumulative kernel time;
///    eligible when >= the threshold (0.1 by default). Without profiling timestamps the host
///    times of the same calls stand in, and the reason says so.
///  - Candidates: every call ref that moves host memory (HostAccess Read/Write: read/write/rect/
///    image transfers, CL_MEM_COPY_HOST_PTR, SVM copies; Wrap: CL_MEM_USE_HOST_PTR; Mapped/Unmap
///    of a range inside an application allocation) names an object. For a host segment, its
///    realloc chain is followed back to the first version, whose allocation site becomes a
///    candidate. Sites none of whose memory ever crossed are host-only and never candidates.
///    Transferred memory no tracked allocation made (static data, stack, mmap, small or early heap
///    blocks) is reported as untracked memory with its volume; driver memory returned by a map of a
///    device buffer is not the application's and is not reported.
///  - Peak live bytes per site come from replaying allocations and frees through the folded call
///    tree (a loop's per-iteration growth extrapolated to its trip count), using each allocation
///    leaf's largest size: what a pool for the site must hold.
void analyzeTrace(const trace::Trace& trace, const AnalysisOptions& options, AppProfile* out);

/// The devices the trace's queues ran on ("NVIDIA H200", ...), from device labels.
std::string traceDevice(const trace::Trace& trace);

/// The ASLR-independent key (contracts/site_key.h) of trace site `site` (index + 1).
uint64_t traceSiteKey(const trace::Trace& trace, uint32_t site);

/// Timeline events of a trace. From format 6, in real time: each call's first occurrences
/// (HETOPT_TIMELINE_CALLS) at their wall-clock time on their thread's track, their timed device
/// commands on their queue's track through the queue's clock (Trace::clocks), allocations at
/// `candidateSites` (trace site index + 1) as instants, and each top-level loop as one span on a
/// track of its thread's loops. Older traces keep aggregated times only, so their timeline is
/// condensed: each thread's calls laid end to end in call order (a folded loop one slice spanning
/// its body), device commands beside the call that enqueued them.
std::vector<TimelineEvent> timelineEvents(const trace::Trace& trace, TimelineInfo* info,
                                          const std::set<uint32_t>& candidateSites = {});

}  // namespace hetopt::analyzer
