// SPDX-License-Identifier: MIT
/** @file Unit formatting and parsing; see units.h.
 * Scales for bytes and durations, written into the caller's buffer; size parsing. */
#include "common/units.h"

#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>

namespace hetopt {
namespace {

struct Scale {
  const char* name;
  double size;
  int decimals[2];  ///< by Detail, when the unit is picked automatically
};

constexpr Scale kByteScales[] = {{"B", 1.0, {0, 0}},
                                 {"KiB", 1024.0, {1, 1}},
                                 {"MiB", 1048576.0, {1, 2}},
                                 {"GiB", 1073741824.0, {1, 2}},
                                 {"TiB", 1099511627776.0, {1, 2}}};
constexpr Scale kTimeScales[] = {
    {"ns", 1.0, {0, 0}}, {"us", 1e3, {1, 1}}, {"ms", 1e6, {2, 2}}, {"s", 1e9, {2, 3}}};
constexpr size_t kByteCount = sizeof kByteScales / sizeof kByteScales[0];
constexpr size_t kTimeCount = sizeof kTimeScales / sizeof kTimeScales[0];
constexpr double kPow10[] = {1, 10, 100, 1000};

/// The largest scale that `magnitude` reaches once rounded to that scale's decimals, so that
/// 1023.96 KiB is "1.0 MiB", not "1024.0 KiB". (Compared, not rounded: the shim links no libm.)
size_t pickScale(const Scale* scales, size_t count, double magnitude, Detail detail) {
  const int d = static_cast<int>(detail);
  size_t u = 0;
  while (u + 1 < count && magnitude >= scales[u + 1].size) ++u;
  if (u + 1 < count) {
    const double p = kPow10[scales[u].decimals[d]];
    if (magnitude / scales[u].size * p >= scales[u + 1].size / scales[u].size * p - 0.5) ++u;
  }
  return u;
}

/// "<value> <unit>" into buf with `decimals` digits after the point.
const char* writeScaled(char* buf, size_t size, double value, const Scale& scale, int decimals) {
  snprintf(buf, size, "%.*f %s", decimals, value / scale.size, scale.name);
  return buf;
}

size_t fixedScale(ByteUnit unit) {
  switch (unit) {
    case ByteUnit::KiB:
      return 1;
    case ByteUnit::MiB:
      return 2;
    case ByteUnit::GiB:
      return 3;
    case ByteUnit::Auto:
      break;
  }
  return 0;
}

size_t fixedScale(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::Us:
      return 1;
    case TimeUnit::Ms:
      return 2;
    case TimeUnit::Auto:
      break;
  }
  return 0;
}

}  // namespace

const char* formatBytes(char* buf, size_t size, uint64_t bytes, ByteUnit unit, Detail detail) {
  if (!size) return buf;
  if (unit != ByteUnit::Auto)
    return writeScaled(buf, size, static_cast<double>(bytes), kByteScales[fixedScale(unit)], 1);
  const double b = static_cast<double>(bytes);
  const size_t u = pickScale(kByteScales, kByteCount, b, detail);
  if (u == 0) {  // whole bytes, exactly
    snprintf(buf, size, "%" PRIu64 " B", bytes);
    return buf;
  }
  // Short: a whole number of the unit says so ("64 KiB"); "64.0 KiB" is then a rounded one.
  const bool whole = bytes % static_cast<uint64_t>(kByteScales[u].size) == 0;
  return writeScaled(
      buf, size, b, kByteScales[u],
      detail == Detail::Short && whole ? 0 : kByteScales[u].decimals[static_cast<int>(detail)]);
}

const char* formatDuration(char* buf, size_t size, double ns, TimeUnit unit, Detail detail) {
  if (!size) return buf;
  if (!std::isfinite(ns)) {
    snprintf(buf, size, "inf");
    return buf;
  }
  if (unit != TimeUnit::Auto) return writeScaled(buf, size, ns, kTimeScales[fixedScale(unit)], 1);
  const size_t u = pickScale(kTimeScales, kTimeCount, std::fabs(ns), detail);
  return writeScaled(buf, size, ns, kTimeScales[u],
                     kTimeScales[u].decimals[static_cast<int>(detail)]);
}

std::string formatBytes(uint64_t bytes, ByteUnit unit, Detail detail) {
  char buf[kUnitTextSize];
  return formatBytes(buf, sizeof buf, bytes, unit, detail);
}

std::string formatDuration(double ns, TimeUnit unit, Detail detail) {
  char buf[kUnitTextSize];
  return formatDuration(buf, sizeof buf, ns, unit, detail);
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
  for (; i < text.size(); ++i)
    unit += static_cast<char>(tolower(static_cast<unsigned char>(text[i])));
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

uint64_t saturatingU64(double value) {
  if (!(value > 0)) return 0;
  if (value >= 0x1p64) return UINT64_MAX;
  return static_cast<uint64_t>(value);
}

}  // namespace hetopt
