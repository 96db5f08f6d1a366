// SPDX-License-Identifier: MIT
/** @file The hetopt subcommands. Each lives in cli/cmd_<name>.cpp and is listed once in main.cpp.
 */
#pragma once

namespace hetopt::cli {

// Each takes the arguments after the command name (argv[0] is the command name) and returns the
// process exit status: the program's own for trace/run, 0/1 for tools, 2 for hetopt's own errors.
int cmdDevices(int argc, char** argv);
int cmdRun(int argc, char** argv);
int cmdCharacterize(int argc, char** argv);
int cmdTrace(int argc, char** argv);
int cmdShow(int argc, char** argv);
int cmdAnalyze(int argc, char** argv);
int cmdReport(int argc, char** argv);

}  // namespace hetopt::cli
