// SPDX-License-Identifier: MIT
/**
 * @file `hetopt show [--json] FILE`: the command line; what it prints is trace/dump.h's (calls,
 * definitions, uses, loop counts, or JSON for tools).
 */
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"
#include "common/log.h"
#include "trace/dump.h"
#include "trace/reader.h"

namespace hetopt::cli {

using namespace hetopt::trace;

int cmdShow(int argc, char** argv) {
  bool json = false, salvage = false;
  std::string file;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf(
          "usage: hetopt show [--json] [--salvage] FILE\n\n"
          "Prints a trace written by `hetopt trace`: per thread, every call and host allocation with\n"
          "its loop counts, the objects it defines (def) and uses (use) with their SSA versions,\n"
          "bytes moved and host/device times; then host memory, allocation sites and a summary.\n\n"
          "  --json     the whole trace as one JSON object (for tools)\n"
          "  --salvage  show what precedes a damaged part instead of refusing the file\n");
      return 0;
    }
    if (!strcmp(argv[i], "--json")) {
      json = true;
    } else if (!strcmp(argv[i], "--salvage")) {
      salvage = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      warn("show: unknown option %s (see hetopt show --help)", argv[i]);
      return 2;
    } else if (file.empty()) {
      file = argv[i];
    } else {
      warn("show: one trace file at a time");
      return 2;
    }
  }
  if (file.empty()) {
    warn("show: no trace file given (see hetopt show --help)");
    return 2;
  }
  Trace t;
  std::string error;
  ReadOptions options;
  options.salvage = salvage;
  if (!readTraceFile(file, &t, &error, options)) {
    warn("show: %s", error.c_str());
    return 2;  // like analyze: the input is the problem
  }
  // Salvaging: say what was cut off, and fail when nothing preceded it.
  if (salvage && t.nodes.empty()) {
    warn("show: nothing to salvage in %s: %s", file.c_str(),
         error.empty() ? "no call or allocation was recorded" : error.c_str());
    return 2;
  }
  if (salvage && !error.empty()) warn("show: salvaged what precedes the damage: %s", error.c_str());
  if (json)
    fputs(dumpJson(t).c_str(), stdout);
  else
    dumpText(t, stdout);
  return 0;
}

}  // namespace hetopt::cli
