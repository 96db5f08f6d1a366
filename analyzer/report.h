// SPDX-License-Identifier: MIT
/**
 * @file The profile for people (a text report that says why: eligibility with its numbers, the
 * candidate sites at source lines, where the time went) and for tools (`--json`, one object whose
 * fields are described in docs/ANALYZER.md).
 */
#pragma once
#include <string>

#include "analyzer/profile.h"
#include "common/units.h"

namespace hetopt::analyzer {

/// Reports write sizes and durations the one way (common/units.h): "256 KiB", "12.3 ms".
using hetopt::formatBytes;
using hetopt::formatDuration;
/// printf onto the end of *out (any length).
void appendf(std::string* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

/// The report printed at the end of `hetopt trace` and by `hetopt analyze` (ends with '\n').
std::string formatReport(const AppProfile& profile);

/// The whole profile as one JSON object (ends with '\n'). Version field "format": 1.
std::string profileToJson(const AppProfile& profile);
inline constexpr int kProfileJsonFormat = 1;

}  // namespace hetopt::analyzer
