// SPDX-License-Identifier: MIT
/** @file Byte sizes and durations as people read and type them ("64 MiB", "3.4 ms", "768M"). */
#pragma once
#include <cstdint>
#include <string>

namespace hetopt::characterize {

/// "1 KiB", "1.5 MiB", "768 MiB", "17 B": binary units, at most one decimal, none when whole.
std::string formatBytes(double bytes);
/// "85 ns", "12.0 us", "3.40 ms", "1.20 s".
std::string formatNs(double ns);
/// Parses "768M", "64MiB", "4k", "1G", "123" (binary units, case-insensitive). False on garbage,
/// zero or overflow.
bool parseByteSize(const std::string& text, uint64_t* out);

}  // namespace hetopt::characterize
