// SPDX-License-Identifier: MIT
/** @file Trace printing shared by `hetopt show` and the summary at the end of `hetopt trace`. */
#pragma once
#include <cstdio>

#include "trace/reader.h"

namespace hetopt::cli {

/// Calls, allocations, bytes each way, device kernel vs transfer time, host time in calls.
void printTraceSummary(const trace::Trace& t, FILE* out);

}  // namespace hetopt::cli
