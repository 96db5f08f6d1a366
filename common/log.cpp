// SPDX-License-Identifier: MIT
/** @file Allocation-free stderr diagnostics. */
#include "common/log.h"

#include <unistd.h>

#include <cstdio>

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
