// SPDX-License-Identifier: MIT
/**
 * @file Byte sizes and durations as people read and type them ("64 KiB", "3.40 ms", "768M"): the
 * one formatter of every part, the shim included. It formats into the caller's buffer without
 * allocating, so the malloc path, fork windows and atexit may use it; the std::string forms are
 * for the tools.
 */
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace hetopt {

/// How much an automatically scaled number says.
enum class Detail : uint8_t {
  Short,     ///< reports, plans, warnings: "17 B", "64 KiB", "1.5 MiB", "1.0 MiB" (rounded: not
             ///< whole); "850 ns", "12.3 us", "3.40 ms", "1.50 s"
  Detailed,  ///< trace dumps: "64.0 KiB", "1.50 MiB"; "1.204 s" (one more digit where the unit is
             ///< large)
};

/// The unit to write in. Auto picks the largest unit the value reaches; a fixed unit always has
/// one decimal, so that lines of one kind compare at a glance ("0.1 MiB", "4.0 MiB"; "3.2 ms"), and
/// a program reading them finds the unit it expects.
enum class ByteUnit : uint8_t { Auto, KiB, MiB, GiB };
enum class TimeUnit : uint8_t { Auto, Us, Ms };

/// A buffer that holds the text of any byte count and of any duration below 10^25 ns (a longer
/// one is cut).
constexpr size_t kUnitTextSize = 32;

/// Writes `bytes` into buf (always NUL-terminated, cut to `size`) and returns buf.
const char* formatBytes(char* buf, size_t size, uint64_t bytes, ByteUnit unit = ByteUnit::Auto,
                        Detail detail = Detail::Short);
/// Writes `ns` nanoseconds into buf and returns buf; a negative duration keeps its sign, a
/// non-finite one is "inf".
const char* formatDuration(char* buf, size_t size, double ns, TimeUnit unit = TimeUnit::Auto,
                           Detail detail = Detail::Short);

/// The same texts as strings, for the tools.
std::string formatBytes(uint64_t bytes, ByteUnit unit = ByteUnit::Auto,
                        Detail detail = Detail::Short);
std::string formatDuration(double ns, TimeUnit unit = TimeUnit::Auto,
                           Detail detail = Detail::Short);

/// Parses "768M", "64MiB", "4k", "1G", "123" (binary units, case-insensitive). False on garbage,
/// zero or overflow.
bool parseByteSize(const std::string& text, uint64_t* out);

/// A count or a duration worked out in double (from fitted curves, from a DB) as a uint64_t:
/// negative and NaN give 0, too large gives UINT64_MAX. A plain cast of such a value is undefined.
uint64_t saturatingU64(double value);

/// Byte and block counts replayed from a trace (sizes times trip counts, a loop's growth times its
/// iterations): a corrupt or hostile trace must not overflow them (undefined for int64_t), so they
/// stop at the type's limits instead.
inline int64_t saturatingI64(uint64_t value) {
  return value > INT64_MAX ? INT64_MAX : static_cast<int64_t>(value);
}
inline int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? INT64_MAX : INT64_MIN;
}
inline int64_t saturatingMul(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_mul_overflow(a, b, &r)) return r;
  return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
}

}  // namespace hetopt
