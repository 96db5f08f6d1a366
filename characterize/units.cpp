// SPDX-License-Identifier: MIT
/** @file Unit formatting and parsing; see units.h. */
#include "characterize/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace hetopt::characterize {

std::string formatBytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0 || std::fabs(bytes - std::round(bytes)) < 0.05)
    snprintf(buf, sizeof buf, "%.0f %s", bytes, kUnits[u]);
  else
    snprintf(buf, sizeof buf, "%.1f %s", bytes, kUnits[u]);
  return buf;
}

std::string formatNs(double ns) {
  char buf[32];
  if (ns < 1e3)
    snprintf(buf, sizeof buf, "%.0f ns", ns);
  else if (ns < 1e6)
    snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  else if (ns < 1e9)
    snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  else
    snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
  return buf;
}

bool parseByteSize(const std::string& text, uint64_t* out) {
  size_t i = 0;
  uint64_t value = 0;
  while (i < text.size() && isdigit(static_cast<unsigned char>(text[i]))) {
    uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return false;
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) return false;
  std::string unit;
  for (; i < text.size(); ++i) unit += static_cast<char>(tolower(static_cast<unsigned char>(text[i])));
  int shift = 0;
  if (unit.empty() || unit == "b")
    shift = 0;
  else if (unit == "k" || unit == "kib" || unit == "kb")
    shift = 10;
  else if (unit == "m" || unit == "mib" || unit == "mb")
    shift = 20;
  else if (unit == "g" || unit == "gib" || unit == "gb")
    shift = 30;
  else
    return false;
  if (value == 0 || value > (UINT64_MAX >> shift)) return false;
  *out = value << shift;
  return true;
}

}  // namespace hetopt::characterize
