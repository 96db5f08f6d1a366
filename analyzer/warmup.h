// SPDX-License-Identifier: MIT
/**
 * @file What the analysis at the end of `hetopt trace` can do before the trace exists, done on a
 * thread while the traced program runs: hetopt would otherwise only wait for it. Today that is
 * loading the symbolizer (libLLVM: ~20 ms of CPU, its relocations and constructors, and more wall
 * time on a busy machine), which the analysis then finds loaded.
 */
#pragma once
#include <thread>

namespace hetopt::analyzer {

class AnalysisWarmup {
 public:
  /// Starts the work. Start it after the program is forked: a thread alive across fork() could
  /// hold a lock (the dynamic loader's, malloc's) that the child then needs.
  AnalysisWarmup();
  /// Joins, as wait() does.
  ~AnalysisWarmup();
  AnalysisWarmup(const AnalysisWarmup&) = delete;
  AnalysisWarmup& operator=(const AnalysisWarmup&) = delete;
  /// Until the work is done (the analysis does not need to call it: what it needs waits by itself).
  void wait();

 private:
  std::thread m_thread;
};

}  // namespace hetopt::analyzer
