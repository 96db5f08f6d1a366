// SPDX-License-Identifier: MIT
/**
 * @file `hetopt analyze TRACE`: the analysis that `hetopt trace` runs at its end, on its own (e.g.
 * on a laptop, for a trace taken on the GPU machine).
 */
#include <cstdio>
#include <string>

#include "cli/command_line.h"
#include "cli/commands.h"
#include "common/log.h"

#if HETOPT_HAVE_ANALYZER
#include "analyzer/analyze_file.h"
#endif

namespace hetopt::cli {

int cmdAnalyze(int argc, char** argv) {
  const CommandSpec& spec = commandSpec("analyze");
  ParsedArgs args;
  if (int rc = parseOrExit(spec, argc, argv, &args); rc >= 0) return rc;
#if HETOPT_HAVE_ANALYZER
  analyzer::AnalyzeRequest req;
  req.json = args.flag("json");
  req.store = !args.flag("no-store");
  req.symbolize = !args.flag("no-symbols");
  req.salvage = args.flag("salvage");
  req.threshold = args.number("threshold", req.threshold);
  req.dbPath = args.value("db");
  req.timelinePath = args.value("timeline");
  req.plotsDir = args.value("plots");
  const std::string profileOf = args.value("profile");
  if (!args.operands.empty()) req.tracePath = args.operands[0];
  if (!profileOf.empty()) {
    if (!req.tracePath.empty())
      return usageError(spec, "--profile PROGRAM takes no TRACE (got '" + req.tracePath + "')");
    return analyzer::showStoredProfile(profileOf, req, stdout);
  }
  if (req.tracePath.empty()) return usageError(spec, "no TRACE given");
  return analyzer::runAnalysis(req, stdout);
#else
  (void)spec;
  warn(
      "analyze: this hetopt was built without the analyzer (HETOPT_BUILD_ANALYZER=OFF); "
      "analyse the trace with a hetopt built with it");
  return 2;
#endif
}

}  // namespace hetopt::cli
