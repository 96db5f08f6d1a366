// SPDX-License-Identifier: MIT
/**
 * @file What the analysis at the end of `hetopt trace` can do before the trace exists, done on a
 * thread while the traced program runs: hetopt would otherwise only wait for it. That is loading
 * the symbolizer (libLLVM: ~20 ms of CPU, its relocations and constructors, and more wall time on
 * a busy machine), and opening the DB the profile goes into and reading its characterizations
 * (~3 ms on the GPU VMs, 5 on the dev VM), which the analysis then finds done.
 */
#pragma once
#include <memory>
#include <string>
#include <thread>

#include "analyzer/gain.h"

namespace hetopt::analyzer {

class AnalysisWarmup {
 public:
  /// Starts the work; `dbPath`: the DB to open ahead, if it exists (empty: none).
  /// Start it after the program is forked: a thread alive across fork() could hold a lock (the
  /// dynamic loader's, malloc's) that the child then needs.
  explicit AnalysisWarmup(const std::string& dbPath = {});
  /// Joins, as wait() does.
  ~AnalysisWarmup();
  AnalysisWarmup(const AnalysisWarmup&) = delete;
  AnalysisWarmup& operator=(const AnalysisWarmup&) = delete;
  /// Until the work is done (the analysis does not need to call it: what it needs waits by itself).
  void wait();
  /// The DB opened ahead (after wait()); null when none was asked for or no thread ran.
  const OpenedDb* opened() {
    wait();
    return m_opened.get();
  }

 private:
  std::unique_ptr<OpenedDb> m_opened;
  std::thread m_thread;
};

}  // namespace hetopt::analyzer
