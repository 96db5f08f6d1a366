// SPDX-License-Identifier: MIT
/** @file Allocation-free stderr diagnostics.
 * Formatted into a stack buffer and written with one write(2): safe inside other processes. */
#include "common/log.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "common/options.h"
#include "common/sigxfsz_block.h"

namespace hetopt {
namespace {
void vwrite(const char* prefix, const char* fmt, va_list ap) {
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "%s", prefix);
  int m = vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
  size_t len = n + (m < 0 ? 0 : (m > int(sizeof buf - n - 2) ? int(sizeof buf - n - 2) : m));
  buf[len++] = '\n';
  SigxfszBlock block;  // stderr may be a file under a size limit: the line is lost, not the program
  ssize_t w = ::write(2, buf, len);
  (void)w;
}
}  // namespace

void warnLines(const char* linePrefix, const char* text) {
  char buf[4096];
  size_t len = 0;
  auto put = [&](const char* s, size_t n) {
    const size_t room = sizeof buf - 1 - len;  // one byte kept for the line's newline
    n = n < room ? n : room;
    memcpy(buf + len, s, n);
    len += n;
  };
  while (*text && len < sizeof buf - 1) {
    const char* end = strchr(text, '\n');
    size_t n = end ? static_cast<size_t>(end - text) : strlen(text);
    put("hetopt: ", 8);
    put(linePrefix, strlen(linePrefix));
    put(text, n);
    buf[len++] = '\n';
    text += end ? n + 1 : n;
  }
  SigxfszBlock block;
  ssize_t w = ::write(2, buf, len);
  (void)w;
}

bool debugEnabled() {
  static const bool enabled = optionFlag(Option::DEBUG);
  return enabled;
}

void warn(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vwrite("hetopt: ", fmt, ap);
  va_end(ap);
}

void debug(const char* fmt, ...) {
  if (!debugEnabled()) return;
  va_list ap;
  va_start(ap, fmt);
  vwrite("hetopt[debug]: ", fmt, ap);
  va_end(ap);
}

}  // namespace hetopt
