// SPDX-License-Identifier: MIT
/** @file Running gnuplot; see gnuplot.h. */
#include "common/gnuplot.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/paths.h"

namespace hetopt {

std::string findGnuplot() { return findOnPath("gnuplot"); }

bool runGnuplot(const std::string& gnuplot, const std::string& script, std::string* error) {
  pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork failed: ") + strerror(errno);
    return false;
  }
  if (pid == 0) {
    if (chdir(dirName(script).c_str()) != 0) _exit(126);
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 1);  // gnuplot's chatter is not ours to print
    std::string base = baseName(script);
    execl(gnuplot.c_str(), "gnuplot", base.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      *error = std::string("waitpid failed: ") + strerror(errno);
      return false;
    }
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *error = "gnuplot " + script + " failed (" +
             (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                : "signal " + std::to_string(WTERMSIG(status))) +
             ")";
    return false;
  }
  return true;
}

}  // namespace hetopt
