// SPDX-License-Identifier: MIT
/**
 * @file Which file a traced process writes, from HETOPT_TRACE_FILE: the named file for the process
 * `hetopt trace` started, FILE.<pid> for every other process of the run (forked, exec'd, or handed
 * the main trace's name by a shell), and the pattern its own children are told.
 */
#pragma once
#include <string>

namespace hetopt::shim {

struct TraceFileNames {
  std::string path;          ///< this process's trace file
  std::string childPattern;  ///< its children's, with %p for their pid
};

/// This process's names (`exe`: its executable, for the default ./hetopt-<exe>-%p.trace). Where
/// HETOPT_TRACE_FILE names one file, sets it to the children's pattern for them.
TraceFileNames traceFileNames(const std::string& exe);

/// `pattern` with every %p replaced by `pid`.
std::string substitutePid(std::string pattern, long pid);

}  // namespace hetopt::shim
