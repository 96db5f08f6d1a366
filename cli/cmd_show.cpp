// SPDX-License-Identifier: MIT
/**
 * @file `hetopt show [--json] FILE`: the command line; what it prints is trace/dump.h's (calls,
 * definitions, uses, loop counts, or JSON for tools).
 */
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/command_line.h"
#include "cli/commands.h"
#include "common/log.h"
#include "trace/dump.h"
#include "trace/reader.h"

namespace hetopt::cli {

using namespace hetopt::trace;

int cmdShow(int argc, char** argv) {
  ParsedArgs args;
  if (int rc = parseOrExit(commandSpec("show"), argc, argv, &args); rc >= 0) return rc;
  const bool json = args.flag("json"), salvage = args.flag("salvage");
  const std::string file = args.operands[0];
  Trace t;
  std::string error;
  ReadOptions options;
  options.salvage = salvage;
  if (!readTraceFile(file, &t, &error, options)) {
    warn("show: %s", error.c_str());
    return 2;  // like analyze: the input is the problem
  }
  // Salvaging: say what was cut off (the reader fails when nothing preceded it, for analyze too).
  if (salvage && !error.empty()) warn("show: salvaged what precedes the damage: %s", error.c_str());
  if (json)
    fputs(dumpJson(t).c_str(), stdout);
  else
    dumpText(t, stdout);
  return 0;
}

}  // namespace hetopt::cli
