// SPDX-License-Identifier: MIT
/** @file Program launching; see launch.h. */
#include "cli/launch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/log.h"
#include "common/paths.h"

namespace hetopt::cli {
namespace {

pid_t s_child = -1;

void forwardSignal(int sig) {
  if (s_child > 0) kill(s_child, sig);
}

// Adds `value` to a ':'-separated list variable, first or last, unless already present.
void addToList(const char* name, const std::string& value, bool first) {
  const char* old = getenv(name);
  std::string list = old ? old : "";
  if ((":" + list + ":").find(":" + value + ":") != std::string::npos) return;
  list = list.empty() ? value : first ? value + ":" + list : list + ":" + value;
  setenv(name, list.c_str(), 1);
}

bool prepareEnvironment(const Launch& launch, std::string* error) {
  for (const auto& [k, v] : launch.env) setenv(k.c_str(), v.c_str(), 1);
  if (!launch.preloadShim) return true;
  std::string shim = shimPath(error);
  if (shim.empty()) return false;
  // LD_PRELOAD sees programs linked to libOpenCL and the malloc family; the OpenCL layer sees
  // programs that dlopen() libOpenCL. The shim makes sure no call is recorded twice.
  // The shim sits nearest the program on both routes: first in LD_PRELOAD (its exports come
  // before the loader's), last in OPENCL_LAYERS (the loaders, ocl-icd's and Khronos', wrap each
  // listed layer around those before it). So it sees the program's calls as the program made them,
  // and the user's own layers see everything that reaches the driver, hetopt's own calls included.
  addToList("LD_PRELOAD", shim, true);
  addToList("OPENCL_LAYERS", shim, false);
  return true;
}

}  // namespace

std::string shimPath(std::string* error) { return installedLibrary("libhetopt_shim.so", error); }

std::string resolveProgramPath(const std::string& program) {
  return program.find('/') != std::string::npos ? program : findOnPath(program);
}

int execProgram(const Launch& launch) {
  std::string error;
  if (!prepareEnvironment(launch, &error)) {
    warn("%s", error.c_str());
    return 2;
  }
  std::vector<char*> args;
  for (const std::string& a : launch.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  warn("cannot run %s: %s", args[0], strerror(errno));
  return errno == ENOENT ? 127 : 126;
}

int runProgram(const Launch& launch, std::string* error) {
  pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork failed: ") + strerror(errno);
    return -1;
  }
  if (pid == 0) _exit(execProgram(launch));
  s_child = pid;
  // Like system(): the terminal delivers SIGINT/SIGQUIT to the child too; hetopt outlives it to
  // write its summary. SIGTERM/SIGHUP aimed at hetopt alone are passed on.
  struct sigaction ignore {}, forward {}, oldInt {}, oldQuit {}, oldTerm {}, oldHup {};
  ignore.sa_handler = SIG_IGN;
  forward.sa_handler = forwardSignal;
  sigaction(SIGINT, &ignore, &oldInt);
  sigaction(SIGQUIT, &ignore, &oldQuit);
  sigaction(SIGTERM, &forward, &oldTerm);
  sigaction(SIGHUP, &forward, &oldHup);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      *error = std::string("waitpid failed: ") + strerror(errno);
      status = -1;
      break;
    }
  }
  sigaction(SIGINT, &oldInt, nullptr);
  sigaction(SIGQUIT, &oldQuit, nullptr);
  sigaction(SIGTERM, &oldTerm, nullptr);
  sigaction(SIGHUP, &oldHup, nullptr);
  s_child = -1;
  return status;
}

void exitLikeChild(int waitStatus) {
  if (WIFEXITED(waitStatus)) exit(WEXITSTATUS(waitStatus));
  if (WIFSIGNALED(waitStatus)) {
    int sig = WTERMSIG(waitStatus);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    fflush(nullptr);
    raise(sig);
    exit(128 + sig);  // the signal's default action did not end us (e.g. SIGCHLD-like)
  }
  exit(2);
}

}  // namespace hetopt::cli
