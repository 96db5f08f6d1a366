// SPDX-License-Identifier: MIT
/**
 * @file This process's identity as `hetopt run` computes it (common/program_identity.h): its
 * executable, and for an interpreter what it runs, read from /proc/self/cmdline. Trace mode writes
 * the script into the trace header; optimize mode compares it with each plan's program. Computed
 * at start-up only, never on a hot path, part by part: a process whose executable is not the
 * plan's (the launcher, a `sed` in a wrapper script) reads no script.
 */
#pragma once
#include <string>

#include "common/program_identity.h"
#include "contracts/plan.h"
#include "trace/writer.h"

namespace hetopt::shim {

/// /proc/self/cmdline as read ("" when it cannot be).
std::string readCommandLine();
/// /proc/self/exe's target ("" when it cannot be read).
std::string selfExePath();

class SelfIdentity {
 public:
  /// Whether `plan` was made for this very process; else *why says whose it is.
  bool matches(const Plan& plan, std::string* why);

 private:
  bool executable(std::string* error);  ///< m_self without the script, once
  bool script(std::string* error);      ///< m_self.script, once

  ProgramIdentity m_self;
  std::string m_exePath;                  ///< /proc/self/exe
  int m_exeState = 0, m_scriptState = 0;  ///< 0 not yet, 1 known, -1 failed
  std::string m_exeError, m_scriptError;
};

/// Fills the header's script fields from its program and arguments (trace mode, at start-up).
void describeScript(trace::FileHeader* header);

}  // namespace hetopt::shim
