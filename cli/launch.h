// SPDX-License-Identifier: MIT
/** @file Starting a program under the shim, with its exit status and signals passed through. */
#pragma once
#include <cctype>
#include <string>
#include <utility>
#include <vector>

namespace hetopt::cli {

/// Absolute path of libhetopt_shim.so: beside the driver as ../lib/ (build tree and install tree).
/// Empty with *error when it is missing.
std::string shimPath(std::string* error);

struct Launch {
  std::vector<std::string> argv;                          ///< program and its arguments
  std::vector<std::pair<std::string, std::string>> env;  ///< variables to set for the program
  bool preloadShim = true;                                ///< LD_PRELOAD + OPENCL_LAYERS the shim
};

/// The file execvp() would run for `program` (PATH search when it has no '/'); empty if none.
std::string resolveProgramPath(const std::string& program);

/// Replaces this process with the program (signals and exit status pass through by construction).
/// Returns only on failure: 127 when the program cannot be executed, 2 for hetopt's own errors.
int execProgram(const Launch& launch);

/// Runs the program as a child and waits. Terminal signals (SIGINT, SIGQUIT) reach the child from
/// the terminal; SIGTERM/SIGHUP sent to hetopt are forwarded. Returns the raw wait status, or -1.
int runProgram(const Launch& launch, std::string* error);

/// `--profile NAME` of trace and run: letters, digits, '.', '_', '-' (a word in the DB and in
/// messages), at most 100 characters.
inline bool validProfileName(const std::string& name) {
  if (name.empty() || name.size() > 100) return false;
  for (char c : name)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  return true;
}

/// Ends hetopt the way the child ended: same exit code, or the same signal re-raised.
[[noreturn]] void exitLikeChild(int waitStatus);

/// Splits "[options] [--] program args": options are returned through `consume`, which gets each
/// argument starting with '-' before the program (and its value when it takes one) and returns how
/// many argv entries it used (0 = unknown option). Returns the program argv, or empty on error.
template <typename Consume>
std::vector<std::string> splitProgram(int argc, char** argv, Consume consume, std::string* error) {
  int i = 1;
  while (i < argc) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-') break;
    int used = consume(i);
    if (used <= 0) {
      *error = "unknown option " + a;
      return {};
    }
    i += used;
  }
  if (i >= argc) {
    *error = "no program given";
    return {};
  }
  return std::vector<std::string>(argv + i, argv + argc);
}

}  // namespace hetopt::cli
