// SPDX-License-Identifier: MIT
/** @file Which file a traced process writes; see trace_file_name.h.
 * The main trace's name is taken only while no live process of the run writes that file. */
#include "shim/core/trace_file_name.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "common/options.h"
#include "trace/format.h"

namespace hetopt::shim {
namespace {

/// Whether a live process writes the trace at `path`: this process before it exec'd, or another of
/// the traced run. A shell hands the programs it starts the environment it began with, in which
/// the trace file is the main process's: such a program must write a child's trace instead.
bool writtenByLiveProcess(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char head[64];
  const ssize_t n = read(fd, head, sizeof head);
  close(fd);
  if (n <= static_cast<ssize_t>(trace::kFixedHeaderBytes) ||
      memcmp(head, trace::kFileMagic, sizeof trace::kFileMagic) != 0)
    return false;
  trace::ByteReader r(head + trace::kFixedHeaderBytes,
                      static_cast<size_t>(n) - trace::kFixedHeaderBytes);
  const uint64_t pid = r.var();  // the header's first field
  return r.ok() && pid > 0 && pid <= INT32_MAX &&
         (pid == static_cast<uint64_t>(getpid()) || kill(static_cast<pid_t>(pid), 0) == 0 ||
          errno == EPERM);
}

}  // namespace

std::string substitutePid(std::string pattern, long pid) {
  for (size_t at; (at = pattern.find("%p")) != std::string::npos;)
    pattern.replace(at, 2, std::to_string(pid));
  return pattern;
}

TraceFileNames traceFileNames(const std::string& exe) {
  const std::string value = optionString(Option::TRACE_FILE);
  TraceFileNames names;
  std::string pattern;
  if (value.empty()) {
    const size_t slash = exe.rfind('/');
    pattern = "./hetopt-" + exe.substr(slash == std::string::npos ? 0 : slash + 1) + "-%p.trace";
    names.childPattern = pattern;
  } else if (value.find("%p") != std::string::npos) {
    pattern = names.childPattern = value;
  } else {
    // This process writes the named file, unless a live process of the run does (then it is a
    // child handed the main trace's name); its exec'd children (which inherit the environment)
    // and forked children write <file>.<their pid>.
    names.childPattern = value + ".%p";
    pattern = writtenByLiveProcess(value) ? names.childPattern : value;
    setenv(optionInfo(Option::TRACE_FILE).envName, names.childPattern.c_str(), 1);
  }
  names.path = substitutePid(pattern, getpid());
  return names;
}

}  // namespace hetopt::shim
