// SPDX-License-Identifier: MIT
/**
 * @file HETOPT_TIMINGS=1: hetopt's own phases timed (wall and the thread's CPU), to show where a
 * command's time goes beside the program it runs. Off (the default) it costs one flag test per
 * phase. Phases of the same name add up; the list keeps the order they first ended in.
 */
#pragma once
#include <cstdint>
#include <string>

namespace hetopt::phases {

/// Whether HETOPT_TIMINGS is set.
bool enabled();
/// CPU time of the calling thread (ns).
uint64_t threadCpuNs();
/// Adds a span to the phase `name` (only when enabled()).
void add(const std::string& name, uint64_t wallNs, uint64_t cpuNs);
/// "name 1.2 ms (CPU 1.0), ..." of every phase so far; empty when none.
std::string list();

/// Times its own lifetime as the phase `name` (wall, and the CPU of the thread that made it).
class Scope {
 public:
  explicit Scope(const char* name);
  ~Scope() { end(); }
  /// Ends the phase here instead of at the end of the scope.
  void end();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const char* m_name;  ///< null once ended (or when timings are off)
  uint64_t m_wallNs = 0, m_cpuNs = 0;
};

}  // namespace hetopt::phases
