// SPDX-License-Identifier: MIT
/** @file Fatal signals in trace mode; see fatal_signals.h.
 * The program's actions per watched signal, our handler, and dying as the default would. */
#include "shim/core/fatal_signals.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "shim/core/below.h"

namespace hetopt::shim {

namespace {

constexpr int kWatched[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT};

/// Per watched signal: the program's action, double-buffered so that the handler always reads a
/// whole one (writers are serialized by s_updating and alternate the slot they fill).
/// Constant-initialized (every member has an initializer): the shim's constructor may install the
/// handlers before this file's dynamic initialization would run.
struct Slot {
  std::atomic<bool> watched{false};
  std::atomic<int> current{0};
  struct sigaction action[2] = {};
};
Slot s_slots[NSIG];
std::atomic_flag s_updating = ATOMIC_FLAG_INIT;
void (*s_flush)(int) = nullptr;

bool watchable(int sig) {
  for (int w : kWatched)
    if (w == sig) return true;
  return false;
}

bool isIgnore(const struct sigaction& a) {
  return !(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_IGN;
}
bool isDefault(const struct sigaction& a) {
  return !(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_DFL;
}

void onSignal(int sig, siginfo_t* info, void* context);

/// Ours in the kernel, keeping the program's SA_RESTART (whether its system calls restart).
int installOurs(int sig, const struct sigaction& program) {
  struct sigaction ours = {};
  ours.sa_sigaction = onSignal;
  sigemptyset(&ours.sa_mask);
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK | (program.sa_flags & SA_RESTART);
  return g_below->sigaction(sig, &ours, nullptr);
}

void setProgramAction(int sig, const struct sigaction& a) {
  Slot& s = s_slots[sig];
  const int next = 1 - s.current.load(std::memory_order_relaxed);
  s.action[next] = a;
  s.current.store(next, std::memory_order_release);
}

/// A fault the kernel raised for the instruction that runs again when the handler returns.
bool recurringFault(int sig, const siginfo_t* info) {
  return info && info->si_code > 0 &&
         (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL);
}

void dieByDefault(int sig, const siginfo_t* info) {
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  g_below->sigaction(sig, &dfl, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  if (recurringFault(sig, info))
    return;  // the instruction faults again, now with the default action
  raise(sig);
  // Still here (the signal was blocked elsewhere, or its default did not end us): watch it again.
  installOurs(sig, dfl);
}

void onSignal(int sig, siginfo_t* info, void* context) {
  const int savedErrno = errno;
  if (s_flush) s_flush(sig);
  const Slot& s = s_slots[sig];
  struct sigaction program = s.action[s.current.load(std::memory_order_acquire)];
  if (isDefault(program)) {
    dieByDefault(sig, info);
  } else if (isIgnore(program)) {
    // Ignored after all (set while this signal was on its way): only a fault cannot be ignored.
    if (recurringFault(sig, info)) dieByDefault(sig, info);
  } else {
    if (program.sa_flags & SA_RESETHAND) {
      struct sigaction dfl = {};
      dfl.sa_handler = SIG_DFL;
      setProgramAction(sig, dfl);
    }
    // The program's handler runs with its own mask, as the kernel would have set it.
    sigset_t mask, old;
    pthread_sigmask(SIG_SETMASK, nullptr, &old);
    mask = old;
    for (int k = 1; k < NSIG; ++k)
      if (sigismember(&program.sa_mask, k) == 1) sigaddset(&mask, k);
    if (program.sa_flags & SA_NODEFER)
      sigdelset(&mask, sig);
    else
      sigaddset(&mask, sig);
    pthread_sigmask(SIG_SETMASK, &mask, nullptr);
    errno = savedErrno;
    if (program.sa_flags & SA_SIGINFO)
      program.sa_sigaction(sig, info, context);
    else
      program.sa_handler(sig);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  errno = savedErrno;
}

}  // namespace

void installFatalSignalHandlers(void (*flush)(int sig)) {
  s_flush = flush;
  while (s_updating.test_and_set(std::memory_order_acquire)) {
  }
  for (int sig : kWatched) {
    Slot& s = s_slots[sig];
    if (s.watched.load(std::memory_order_relaxed)) continue;
    struct sigaction current = {};
    if (g_below->sigaction(sig, nullptr, &current) != 0 || isIgnore(current)) continue;
    setProgramAction(sig, current);
    if (installOurs(sig, current) == 0) s.watched.store(true, std::memory_order_release);
  }
  s_updating.clear(std::memory_order_release);
}

bool programSigaction(int sig, const struct sigaction* act, struct sigaction* old, int* rc) {
  if (sig <= 0 || sig >= NSIG || !watchable(sig) ||
      !s_slots[sig].watched.load(std::memory_order_acquire))
    return false;
  // Not interrupted by the signal itself while its action changes.
  sigset_t block, saved;
  sigemptyset(&block);
  sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &saved);
  while (s_updating.test_and_set(std::memory_order_acquire)) {
  }
  Slot& s = s_slots[sig];
  const struct sigaction previous = s.action[s.current.load(std::memory_order_relaxed)];
  *rc = 0;
  if (act) {
    // SIG_IGN for real: an ignored signal must not interrupt the program's system calls.
    *rc = isIgnore(*act) ? g_below->sigaction(sig, act, nullptr) : installOurs(sig, *act);
    if (*rc == 0) setProgramAction(sig, *act);
  }
  s_updating.clear(std::memory_order_release);
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  if (*rc == 0 && old) *old = previous;
  return true;
}

}  // namespace hetopt::shim
