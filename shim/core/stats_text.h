// SPDX-License-Identifier: MIT
/**
 * @file The two units of the shim's `--stats` lines, fixed so that the lines of every part compare
 * at a glance ("12.5 MiB", "3.2 ms"; the formatter is common/units.h).
 */
#pragma once
#include <cstdint>
#include <string>

#include "common/units.h"

namespace hetopt::shim {

/// "12.5 MiB"
inline std::string mib(uint64_t bytes) { return formatBytes(bytes, ByteUnit::MiB); }

/// "3.2 ms"
inline std::string ms(uint64_t ns) { return formatDuration(static_cast<double>(ns), TimeUnit::Ms); }

}  // namespace hetopt::shim
