// SPDX-License-Identifier: MIT
/**
 * @file An OpenCL program that dies by a signal after its transfers (fatal_signals.sh): the trace
 * must still hold every call made before, and the program must end as it does natively.
 *
 *   signal_app MODE    MODE: abort, raise-segv, fault, term, handler (its own SIGTERM handler
 *                      exits 7), survive (its own SIGTERM handler, set with signal(), returns and
 *                      the program exits 0), wait (SIGINT back to its default action, then it
 *                      waits until a signal ends it: signals forwarded to it, untouched.sh)
 * raise-segv meets whatever handler the OpenCL implementation installed (PoCL's LLVM has one that
 * returns once): the test compares it with the native run.
 * Before dying it checks that sigaction() shows it its own actions, not the shim's.
 */
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

namespace {

volatile sig_atomic_t s_terminated = 0;

void onTerm(int, siginfo_t*, void*) {
  static const char msg[] = "handled SIGTERM\n";
  ssize_t w = write(1, msg, sizeof msg - 1);
  (void)w;
  _exit(7);
}

void onTermReturning(int) { s_terminated = 1; }

bool handlerIs(int sig, void (*expected)(int)) {
  struct sigaction a = {};
  return sigaction(sig, nullptr, &a) == 0 && !(a.sa_flags & SA_SIGINFO) && a.sa_handler == expected;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  sigset_t used;  // whatever the caller blocked, these signals reach this program
  sigemptyset(&used);
  for (int sig : {SIGSEGV, SIGABRT, SIGTERM, SIGINT}) sigaddset(&used, sig);
  sigprocmask(SIG_UNBLOCK, &used, nullptr);
  for (int sig : {SIGSEGV, SIGABRT, SIGTERM})
    if (!handlerIs(sig, SIG_DFL)) {
      fprintf(stderr, "signal_app: signal %d does not show its default action\n", sig);
      return 1;
    }
  const size_t n = (256 << 10) / sizeof(unsigned);
  ClEnv env;
  auto* host = static_cast<unsigned*>(malloc(n * sizeof(unsigned)));  // hetopt:transfer
  APP_CHECK(host != nullptr);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<unsigned>(i * 2654435761u);
  cl_mem dev = env.buffer(CL_MEM_READ_WRITE, n * sizeof(unsigned));
  for (int it = 0; it < 3; ++it) {
    APP_CL(clEnqueueWriteBuffer(env.queue(), dev, CL_TRUE, 0, n * sizeof(unsigned), host, 0,
                                nullptr, nullptr));
    APP_CL(clEnqueueReadBuffer(env.queue(), dev, CL_TRUE, 0, n * sizeof(unsigned), host, 0, nullptr,
                               nullptr));
  }
  printf("transfers done\n");
  fflush(stdout);
  if (!strcmp(mode, "abort")) abort();
  if (!strcmp(mode, "raise-segv")) raise(SIGSEGV);
  if (!strcmp(mode, "fault")) {
    volatile unsigned* nowhere = nullptr;
    *nowhere = host[1];
  }
  if (!strcmp(mode, "term")) kill(getpid(), SIGTERM);
  if (!strcmp(mode, "handler")) {
    struct sigaction a = {};
    a.sa_sigaction = onTerm;
    a.sa_flags = SA_SIGINFO;
    sigemptyset(&a.sa_mask);
    APP_CHECK(sigaction(SIGTERM, &a, nullptr) == 0);
    struct sigaction back = {};
    APP_CHECK(sigaction(SIGTERM, nullptr, &back) == 0 && back.sa_sigaction == onTerm);
    raise(SIGTERM);
  }
  if (!strcmp(mode, "wait")) {
    APP_CHECK(signal(SIGINT, SIG_DFL) != SIG_ERR);  // a background job starts with it ignored
    printf("waiting\n");
    fflush(stdout);
    for (;;) pause();
  }
  if (!strcmp(mode, "survive")) {
    APP_CHECK(signal(SIGTERM, onTermReturning) != SIG_ERR);
    APP_CHECK(handlerIs(SIGTERM, onTermReturning));
    raise(SIGTERM);
    APP_CHECK(s_terminated == 1);
    APP_CL(clEnqueueWriteBuffer(env.queue(), dev, CL_TRUE, 0, n * sizeof(unsigned), host, 0,
                                nullptr, nullptr));
    printf("survived\n");
    clReleaseMemObject(dev);
    free(host);
    return 0;
  }
  fprintf(stderr, "signal_app: unknown mode '%s' or still alive\n", mode);
  return 1;
}
