// SPDX-License-Identifier: MIT
/**
 * @file What `hetopt trace` learned about a command besides a profile, left beside the plans for
 * `hetopt run` and `hetopt report`: that the command is a wrapper passing its arguments on to an
 * interpreter (pyenv's shims, `exec python3 "$@"`), and that a command made no OpenCL call.
 * identifyCommand() is the one way trace, run and report turn a command line into the identity
 * whose profile they store or look up.
 */
#pragma once
#include <string>
#include <vector>

#include "common/program_identity.h"

namespace hetopt {

/// A wrapper that execs an interpreter with the arguments it was given: the process that runs is
/// the interpreter, running what those arguments name, as the shim in it identifies itself.
struct Forwarding {
  std::string interpreter;            ///< the executable it execs (absolute, as the kernel ran it)
  std::vector<std::string> consumed;  ///< its leading arguments not passed on (`env python3 x`)
};

/// Whether a traced process running `exe` with `processArgv` (its own command line) got the
/// trailing arguments of `command` (what `hetopt trace` ran) unchanged, after at least argv[0] of
/// it: then *out says how `command` forwards. No files are read.
bool forwardsArguments(const std::vector<std::string>& command, const std::string& exe,
                       const std::vector<std::string>& processArgv, Forwarding* out);

/// The mark of `wrapper` (by its key and path): `<plans>/<key>.<path hash>.forwards`.
std::string forwardingMarkPath(const ProgramIdentity& wrapper);
/// Writes (0600) or removes the mark; false with *error.
bool writeForwarding(const ProgramIdentity& wrapper, const Forwarding& f, std::string* error);
void removeForwarding(const ProgramIdentity& wrapper);

/// The identity whose profile `argv` uses: commandIdentity(), except for a wrapper with a
/// forwarding mark whose consumed arguments `argv` repeats, which is identified as its interpreter
/// running the rest of `argv` (*wrapper then gets the wrapper's identity; else it is cleared).
bool identifyCommand(const std::vector<std::string>& argv, ProgramIdentity* out,
                     ProgramIdentity* wrapper, std::string* error);

/// Left by `hetopt trace` when the program and every process it started made no OpenCL call
/// (`<plans>/<key>.no-opencl`, holding when, UTC): `hetopt run` and `hetopt report` say so
/// instead of asking for a trace.
std::string noOpenClMarkPath(const ProgramIdentity& identity);
bool writeNoOpenClMark(const ProgramIdentity& identity, std::string* error);
/// When the mark was written (UTC), or empty when there is none.
std::string readNoOpenClMark(const ProgramIdentity& identity);

}  // namespace hetopt
