// SPDX-License-Identifier: MIT
/** @file Starting a program under the shim, with its exit status and signals passed through.
 * fork/exec with the shim's environment; the child's ending (status or signal) comes back whole. */
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace hetopt::cli {

/// Absolute path of libhetopt_shim.so, found from the driver (installedLibrary, common/paths.h).
/// Empty with *error when it is missing.
std::string shimPath(std::string* error);

struct Launch {
  std::vector<std::string> argv;                         ///< program and its arguments
  std::vector<std::pair<std::string, std::string>> env;  ///< variables to set for the program
  bool preloadShim = true;                               ///< LD_PRELOAD + OPENCL_LAYERS the shim
  /// runProgram and runTimed: called in hetopt once the program's process exists, before waiting
  /// for it (for work that can overlap the program's run).
  std::function<void()> started;
};

/// The file execvp() would run for `program` (PATH search when it has no '/'); empty if none.
std::string resolveProgramPath(const std::string& program);

/// Replaces this process with the program (signals and exit status pass through by construction).
/// Returns only on failure: 127 when the program cannot be executed, 2 for hetopt's own errors.
int execProgram(const Launch& launch);

/// Runs the program as a child and waits. SIGINT, SIGQUIT, SIGTERM and SIGHUP sent to hetopt are
/// forwarded to it, except those the terminal sends (the child, in the same process group, gets
/// them itself): hetopt outlives the child. Returns the raw wait status, or -1.
int runProgram(const Launch& launch, std::string* error);

/// A program runTimed ran.
struct TimedRun {
  int notStarted = 0;  ///< it could not be executed: hetopt's exit code (127, 126, 2), said
  int status = -1;     ///< the raw wait status
  uint64_t pid = 0;
  uint64_t startedUnixNs = 0;  ///< wall clock when hetopt started
  uint64_t wallNs = 0;         ///< from then until the program was reaped (steady clock)
  /// The terminal sent the foreground group a signal (Ctrl-C, a hang-up) meanwhile: the
  /// user stopped it, and its time and ending say nothing about the program.
  bool interrupted = false;
};
/// When this hetopt process started (steady clock, ns). Runs are timed from here, untouched and
/// optimized alike (HETOPT_RUN_STARTED), so both include what hetopt itself does first.
uint64_t hetoptStartedNs();
/// runProgram, timed from hetoptStartedNs(), telling a program that could not be executed from one
/// that exited 127. False with *error when hetopt could not start or wait for it.
bool runTimed(const Launch& launch, TimedRun* out, std::string* error);

/// Removes the shim (any libhetopt_shim.so) from LD_PRELOAD and OPENCL_LAYERS of this process, so
/// that what it starts next runs without it.
void dropShimFromEnvironment();

/// When `filter` (a --device value) names no OpenCL device here, says so on stderr with what there
/// is: the program would otherwise run on another device, or fail, without a word from hetopt.
void warnUnmatchedDevice(const char* command, const std::string& filter);

/// Ends hetopt the way the child ended: same exit code, or the same signal re-raised.
[[noreturn]] void exitLikeChild(int waitStatus);

}  // namespace hetopt::cli
