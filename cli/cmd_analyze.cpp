// SPDX-License-Identifier: MIT
/**
 * @file `hetopt analyze TRACE`: the analysis that `hetopt trace` runs at its end, on its own (e.g.
 * on a laptop, for a trace taken on the GPU machine).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli/commands.h"
#include "common/log.h"

#if HETOPT_HAVE_ANALYZER
#include "analyzer/analyze_file.h"
#endif

namespace hetopt::cli {
namespace {

void usage() {
  printf(
      "usage: hetopt analyze [--json] [--threshold R] [--db PATH | --no-store] [--timeline FILE]\n"
      "                      [--plots DIR] [--no-symbols] [--salvage] TRACE\n"
      "       hetopt analyze --profile PROGRAM [--json] [--db PATH] [--plots DIR]\n\n"
      "Decides whether the traced program is worth optimizing and which of its allocation sites\n"
      "feed host<->device transfers, stores that as the program's profile in the DB (used by\n"
      "`hetopt run`) and prints why: eligibility with its numbers, the candidate sites at their\n"
      "source lines, where the time went. `hetopt trace` runs this at its end.\n\n"
      "  --json           print the profile as JSON instead of the report\n"
      "  --threshold R    eligible when communication/computation time >= R (default 0.1)\n"
      "  --db PATH        DB holding profiles and the characterization (default $HETOPT_DB,\n"
      "                   else $XDG_DATA_HOME/hetopt/hetopt.db)\n"
      "  --no-store       analyse and print only: do not touch the DB\n"
      "  --timeline FILE  write a timeline for ui.perfetto.dev / chrome://tracing\n"
      "  --plots DIR      write the execution breakdown plot (gnuplot) into DIR\n"
      "  --no-symbols     report sites as module+offset (no debug info lookup)\n"
      "  --salvage        analyse what precedes a corrupt part of the trace instead of failing\n"
      "  --profile PROGRAM  print the profile stored for PROGRAM as it is now (a rebuilt binary\n"
      "                   has none); with --plots, its breakdown, standard and optimized side by\n"
      "                   side once `hetopt run` stored them\n"
      "\nExit status: 0; 1 when --profile finds no current profile; 2 when the trace cannot be\n"
      "read or the profile cannot be stored.\n");
}

}  // namespace

int cmdAnalyze(int argc, char** argv) {
#if HETOPT_HAVE_ANALYZER
  analyzer::AnalyzeRequest req;
  std::string profileOf;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        warn("analyze: %s needs a value (see hetopt analyze --help)", name);
        return nullptr;
      }
      return argv[++i];
    };
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage();
      return 0;
    } else if (!strcmp(a, "--json")) {
      req.json = true;
    } else if (!strcmp(a, "--no-store")) {
      req.store = false;
    } else if (!strcmp(a, "--no-symbols")) {
      req.symbolize = false;
    } else if (!strcmp(a, "--salvage")) {
      req.salvage = true;
    } else if (!strcmp(a, "--threshold")) {
      const char* v = value(a);
      if (!v) return 2;
      char* end = nullptr;
      req.threshold = strtod(v, &end);
      if (!*v || *end || !(req.threshold >= 0) || req.threshold > 1e9) {
        warn("analyze: --threshold needs a non-negative number, not '%s'", v);
        return 2;
      }
    } else if (!strcmp(a, "--db")) {
      const char* v = value(a);
      if (!v) return 2;
      req.dbPath = v;
    } else if (!strcmp(a, "--timeline")) {
      const char* v = value(a);
      if (!v) return 2;
      req.timelinePath = v;
    } else if (!strcmp(a, "--plots")) {
      const char* v = value(a);
      if (!v) return 2;
      req.plotsDir = v;
    } else if (!strcmp(a, "--profile")) {
      const char* v = value(a);
      if (!v) return 2;
      profileOf = v;
    } else if (a[0] == '-' && a[1] != '\0') {
      warn("analyze: unknown option %s (see hetopt analyze --help)", a);
      return 2;
    } else if (req.tracePath.empty()) {
      req.tracePath = a;
    } else {
      warn("analyze: one trace at a time (got '%s' and '%s')", req.tracePath.c_str(), a);
      return 2;
    }
  }
  if (!profileOf.empty()) {
    if (!req.tracePath.empty()) {
      warn("analyze: --profile PROGRAM takes no trace (got '%s')", req.tracePath.c_str());
      return 2;
    }
    return analyzer::showStoredProfile(profileOf, req, stdout);
  }
  if (req.tracePath.empty()) {
    warn("analyze: no trace given (see hetopt analyze --help)");
    return 2;
  }
  return analyzer::runAnalysis(req, stdout);
#else
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage();
      printf("\n(This hetopt was built without the analyzer: HETOPT_BUILD_ANALYZER=OFF.)\n");
      return 0;
    }
  }
  warn("analyze: this hetopt was built without the analyzer (HETOPT_BUILD_ANALYZER=OFF); "
       "analyse the trace with a hetopt built with it");
  return 2;
#endif
}

}  // namespace hetopt::cli
