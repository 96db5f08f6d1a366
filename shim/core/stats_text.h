// SPDX-License-Identifier: MIT
/**
 * @file The few numbers the shim's `--stats` lines print, formatted one way for every part
 * (no analyzer formatter here: the shim links neither the analyzer nor anything it needs).
 */
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace hetopt::shim {

/// "12.5 MiB"
inline std::string mib(uint64_t bytes) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

/// "3.2 ms"
inline std::string ms(uint64_t ns) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

}  // namespace hetopt::shim
