// SPDX-License-Identifier: MIT
/**
 * @file Registrations in place that the driver refused, as both registries keep them: a count,
 * the last reason for `--stats`, and a debug line each. The memory stays pageable, as without
 * hetopt.
 */
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/log.h"

namespace hetopt::shim {

class Refusals {
 public:
  /// One more, for [ptr, ptr + bytes). The caller holds the lock under which it reads lastLine().
  void note(void* ptr, size_t bytes, const char* reason) noexcept {
    m_count.fetch_add(1, std::memory_order_relaxed);
    snprintf(m_last, sizeof m_last, "%s", reason);
    debug("registering %p + %zu bytes failed (%s); it stays pageable", ptr, bytes, reason);
  }
  const std::atomic<uint64_t>& count() const noexcept { return m_count; }
  /// "\n  last refusal: <reason>", empty when there was none (under the caller's lock).
  std::string lastLine() const {
    return m_count.load() ? std::string("\n  last refusal: ") + m_last : std::string();
  }

 private:
  std::atomic<uint64_t> m_count{0};
  char m_last[240] = {};
};

}  // namespace hetopt::shim
