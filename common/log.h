// SPDX-License-Identifier: MIT
/**
 * @file One-line diagnostics. warn() formats into a stack buffer and write(2)s it: no allocation,
 * no stdio locks, so it is safe inside the shim (malloc hooks, fork windows, atexit).
 */
#pragma once
#include <cstdarg>

namespace hetopt {

/// "hetopt: <message>\n" on stderr.
void warn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
/// Each line of `text` ('\n'-separated) as "hetopt: <linePrefix><line>\n", all in one write(2)
/// (up to 4 KiB), so that lines of another process writing to the same stderr never come between.
void warnLines(const char* linePrefix, const char* text);
/// Like warn(), only when HETOPT_DEBUG is set.
void debug(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
bool debugEnabled();

}  // namespace hetopt
