// SPDX-License-Identifier: MIT
/**
 * @file Header-only, so that the lean trace writer and the shim's log share it without a library.
 *
 * hetopt writes inside other people's programs: a write past RLIMIT_FSIZE (ulimit -f) must fail
 * with EFBIG, not raise SIGXFSZ, whose default action kills the program. SigxfszBlock blocks the
 * signal in the calling thread for its lifetime and takes back one that a write raised meanwhile;
 * the program's disposition, and a SIGXFSZ already pending before, are left alone.
 */
#pragma once
#include <pthread.h>

#include <csignal>
#include <ctime>

namespace hetopt {

class SigxfszBlock {
 public:
  SigxfszBlock() {
    sigemptyset(&m_set);
    sigaddset(&m_set, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &m_set, &m_old);
    sigset_t pending;
    m_wasPending = sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ);
  }
  ~SigxfszBlock() {
    sigset_t pending;
    if (!m_wasPending && sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ)) {
      timespec zero{};
      sigtimedwait(&m_set, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &m_old, nullptr);
  }
  SigxfszBlock(const SigxfszBlock&) = delete;
  SigxfszBlock& operator=(const SigxfszBlock&) = delete;

 private:
  sigset_t m_set, m_old;
  bool m_wasPending = false;
};

}  // namespace hetopt
