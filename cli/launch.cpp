// SPDX-License-Identifier: MIT
/** @file Program launching; see launch.h.
 * The shim's environment, exec or a forked child, signals forwarded, the exit status passed on. */
#include "cli/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "common/cl_select.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/paths.h"

namespace hetopt::cli {
namespace {

pid_t s_child = -1;
volatile sig_atomic_t s_fromTerminal = 0;  // a terminal's signal came while a child ran

constexpr int kForwarded[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};

void forwardSignal(int sig, siginfo_t* info, void*) {
  // The terminal sends its signals to the whole foreground process group: the child has it.
  if (info && info->si_code == SI_KERNEL) {
    s_fromTerminal = 1;
    return;
  }
  if (s_child > 0) kill(s_child, sig);
}

// Removes every entry naming libhetopt_shim.so from a ':'-separated list variable.
void dropShimFromList(const char* name) {
  const char* old = getenv(name);
  if (!old) return;
  std::string list = old, kept;
  for (size_t start = 0; start <= list.size();) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    const std::string entry = list.substr(start, end - start);
    if (!entry.empty() && baseName(entry) != "libhetopt_shim.so")
      kept += (kept.empty() ? "" : ":") + entry;
    start = end + 1;
  }
  if (kept.empty())
    unsetenv(name);
  else
    setenv(name, kept.c_str(), 1);
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

namespace {

// Starts the program as a child with the forwarded signals handled; restores them in the
// destructor. Signals that come before the handlers are in place wait (blocked) for them; the
// child gets hetopt's own mask and dispositions. When exec fails, the child writes its exit code
// to `reportFd` (>= 0).
class Child {
 public:
  Child(const Launch& launch, int reportFd, std::string* error) {
    sigset_t forwarded;
    sigemptyset(&forwarded);
    for (int sig : kForwarded) sigaddset(&forwarded, sig);
    sigprocmask(SIG_BLOCK, &forwarded, &m_mask);
    m_pid = fork();
    if (m_pid == 0) {
      sigprocmask(SIG_SETMASK, &m_mask, nullptr);
      int code = execProgram(launch);
      if (reportFd >= 0 && write(reportFd, &code, sizeof code) != static_cast<ssize_t>(sizeof code))
        code = 2;
      _exit(code);
    }
    if (m_pid < 0) {
      *error = std::string("fork failed: ") + strerror(errno);
    } else {
      s_child = m_pid;
      struct sigaction forward {};
      forward.sa_sigaction = forwardSignal;
      forward.sa_flags = SA_SIGINFO;
      for (size_t i = 0; i < std::size(kForwarded); ++i)
        sigaction(kForwarded[i], &forward, &m_old[i]);
    }
    sigprocmask(SIG_SETMASK, &m_mask, nullptr);
  }
  ~Child() {
    if (m_pid <= 0) return;
    for (size_t i = 0; i < std::size(kForwarded); ++i) sigaction(kForwarded[i], &m_old[i], nullptr);
    s_child = -1;
  }
  pid_t pid() const { return m_pid; }
  /// The raw wait status, or -1 with *error.
  int wait(std::string* error) const {
    int status = 0;
    while (waitpid(m_pid, &status, 0) < 0) {
      if (errno != EINTR) {
        *error = std::string("waitpid failed: ") + strerror(errno);
        return -1;
      }
    }
    return status;
  }

 private:
  pid_t m_pid = -1;
  sigset_t m_mask;
  struct sigaction m_old[std::size(kForwarded)]{};
};

}  // namespace

int runProgram(const Launch& launch, std::string* error) {
  Child child(launch, -1, error);
  if (child.pid() < 0) return -1;
  if (launch.started) launch.started();
  return child.wait(error);
}

namespace {
const uint64_t s_startedNs = clockNs(CLOCK_MONOTONIC);  // before main: hetopt's own start
}  // namespace

uint64_t hetoptStartedNs() { return s_startedNs; }

bool runTimed(const Launch& launch, TimedRun* out, std::string* error) {
  *out = TimedRun{};
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    *error = std::string("pipe failed: ") + strerror(errno);
    return false;
  }
  const uint64_t start = hetoptStartedNs();
  s_fromTerminal = 0;
  out->startedUnixNs = clockNs(CLOCK_REALTIME) - (clockNs(CLOCK_MONOTONIC) - start);
  {
    Child child(launch, report[1], error);
    close(report[1]);
    if (child.pid() >= 0) {
      if (launch.started) launch.started();
      out->status = child.wait(error);
    }
    out->wallNs = clockNs(CLOCK_MONOTONIC) - start;
    out->pid = child.pid() > 0 ? static_cast<uint64_t>(child.pid()) : 0;
    out->interrupted = s_fromTerminal != 0;
  }
  int code = 0;
  if (out->status != -1 && read(report[0], &code, sizeof code) == static_cast<ssize_t>(sizeof code))
    out->notStarted = code;
  close(report[0]);
  return out->status != -1;
}

void dropShimFromEnvironment() {
  dropShimFromList("LD_PRELOAD");
  dropShimFromList("OPENCL_LAYERS");
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

void warnUnmatchedDevice(const char* command, const std::string& filter) {
  if (filter.empty()) return;
  ClDevice chosen;
  std::string error;
  if (selectClDevice(filter, &chosen, &error)) return;
  warn("%s: --device %s: %s; `hetopt devices` lists them", command, filter.c_str(), error.c_str());
}

}  // namespace hetopt::cli
