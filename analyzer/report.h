// SPDX-License-Identifier: MIT
/**
 * @file The profile for people (a text report that says why: eligibility with its numbers, the
 * candidate sites at source lines, where the time went) and for tools (`--json`, one object whose
 * fields are described in docs/ANALYZER.md).
 */
#pragma once
#include <string>

#include "analyzer/profile.h"

namespace hetopt::analyzer {

/// "12.3 ms", "850 ns", "1.50 s".
std::string formatDuration(double ns);
/// "256 KiB", "1.5 MiB", "812 B".
std::string formatBytes(uint64_t bytes);

/// The report printed at the end of `hetopt trace` and by `hetopt analyze` (ends with '\n').
std::string formatReport(const AppProfile& profile);

/// The whole profile as one JSON object (ends with '\n'). Version field "format": 1.
std::string profileToJson(const AppProfile& profile);
inline constexpr int kProfileJsonFormat = 1;

}  // namespace hetopt::analyzer
