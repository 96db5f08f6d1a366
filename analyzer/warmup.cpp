// SPDX-License-Identifier: MIT
/** @file The analysis's warm-up while a traced program runs; see warmup.h.
 * Loads the symbolizer and opens the DB on a thread of its own while the program runs, off the
 * analysis's path. */
#include "analyzer/warmup.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "analyzer/symbolizer.h"
#include "common/phase_times.h"

namespace hetopt::analyzer {

AnalysisWarmup::AnalysisWarmup(const std::string& dbPath) {
  // The thread takes none of the signals hetopt forwards to the program: they stay the main
  // thread's, whose handlers pass them on.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    m_thread = std::thread([this, dbPath] {
      {
        phases::Scope timed("symbolizer loaded while the program ran");
        Symbolizer::preload();
      }
      // Only a DB that exists: a program that makes no OpenCL call leaves none behind.
      if (dbPath.empty() || access(dbPath.c_str(), F_OK) != 0) return;
      phases::Scope timed("DB opened and curves read while the program ran");
      m_opened = openDbWithCurves(dbPath);
    });
  } catch (...) {
    // No thread: the analysis loads the symbolizer itself, as it always could.
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

AnalysisWarmup::~AnalysisWarmup() { wait(); }

void AnalysisWarmup::wait() {
  if (m_thread.joinable()) m_thread.join();
}

}  // namespace hetopt::analyzer
