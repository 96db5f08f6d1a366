// SPDX-License-Identifier: MIT
/**
 * @file What a trace says, printed: `hetopt show` (text, what the golden files under
 * tests/trace/golden compare against, and --json) and the summary at the end of `hetopt trace`.
 * Everything comes from the reader (reader.h); a reader of the format, so it lives with it. Tools
 * only: it links the JSON writer (hetopt_common), which the lean trace library does not.
 */
#pragma once
#include <cstdio>
#include <string>

#include "trace/reader.h"

namespace hetopt::trace {

/// The whole trace as text: header, each thread's calls and allocations with their loop counts,
/// the objects each defines and uses with their SSA versions, bytes moved and host/device times;
/// then host memory, allocation sites and the summary.
void dumpText(const Trace& t, FILE* out);
/// The summary alone: calls, allocations, bytes each way, device kernel and transfer time, host
/// time in calls, recording cost and start-up times.
void dumpSummary(const Trace& t, FILE* out);
/// The whole trace as one JSON object, newline-terminated (`hetopt show --json`).
std::string dumpJson(const Trace& t);

}  // namespace hetopt::trace
