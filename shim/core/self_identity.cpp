// SPDX-License-Identifier: MIT
/** @file This process's identity; see self_identity.h.
 * The executable's identity, the script an interpreter runs, matching a plan's key. */
#include "shim/core/self_identity.h"

#include <fcntl.h>
#include <unistd.h>

#include "common/log.h"

namespace hetopt::shim {

std::string readCommandLine() {
  std::string s;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  close(fd);
  return s;
}

std::string selfExePath() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

bool SelfIdentity::executable(std::string* error) {
  if (m_exeState == 0) {
    m_exeState =
        programIdentity("/proc/self/exe", &m_self, &m_exeError, identityCacheDir()) ? 1 : -1;
    m_self.script = ScriptRef{};
  }
  *error = m_exeError;
  return m_exeState > 0;
}

bool SelfIdentity::script(std::string* error) {
  if (m_scriptState == 0) {
    if (m_exePath.empty()) m_exePath = selfExePath();
    m_scriptState = scriptOfProcess(m_exePath, splitCommandLine(readCommandLine()), &m_self.script,
                                    &m_scriptError, identityCacheDir())
                        ? 1
                        : -1;
  }
  *error = m_scriptError;
  return m_scriptState > 0;
}

bool SelfIdentity::matches(const Plan& plan, std::string* why) {
  const std::string planExe = plan.programKey.substr(0, plan.programKey.find('+'));
  std::string error;
  // The very file `hetopt run` identified just before exec: no need to read (or hash) it again.
  FileStamp stamp;
  const bool sameFile =
      plan.hasProgramStamp && fileStamp("/proc/self/exe", &stamp) && stamp == plan.programStamp;
  if (!sameFile) {
    if (!executable(&error)) {
      *why = "cannot identify this program: " + error;
      return false;
    }
    if (m_self.executableKey() != planExe) {
      *why = "the plan is for " + plan.programPath + " (" + plan.programKey + "), this is " +
             m_self.path + " (" + m_self.executableKey() + ")";
      return false;
    }
  } else if (m_exeState == 0) {
    // Known without reading the file: the key the stamp stands for.
    m_self.path = plan.programPath;
    m_self.buildId = planExe.rfind("build-id:", 0) == 0 ? planExe.substr(9) : std::string();
    m_self.contentHash =
        m_self.buildId.empty() ? planExe.substr(planExe.find(':') + 1) : std::string();
    m_exeState = 1;
  }
  // A plan naming no script is for every process of its executable (hand-written plans, plans
  // of older hetopt); one naming a script, module or code only for a process running that.
  if (plan.programKey.size() == planExe.size()) return true;
  if (!script(&error)) {
    *why = "cannot identify what this program runs: " + error;
    return false;
  }
  if (m_self.key() != plan.programKey) {
    *why = "the plan is for " + plan.programKey + ", this process is " + m_self.key();
    return false;
  }
  return true;
}

void describeScript(trace::FileHeader* h) {
  ScriptRef s;
  std::string error;
  if (!scriptOfProcess(h->program, splitCommandLine(h->arguments), &s, &error, identityCacheDir()))
    warn("trace mode: %s; the trace names no script", error.c_str());
  h->scriptKind = static_cast<uint8_t>(s.kind);
  h->scriptName = s.name;
  h->scriptHash = s.hash;
}

}  // namespace hetopt::shim
