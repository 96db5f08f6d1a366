// SPDX-License-Identifier: MIT
/**
 * @file The whole analysis step as `hetopt analyze TRACE` and the end of `hetopt trace` run it:
 * read the trace, analyze, key the profile by the traced program's identity, predict gains from
 * this machine's characterization, store the profile in the DB, and write the report (text or
 * JSON), the timeline and the plots that were asked for.
 */
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "analyzer/profile.h"

namespace hetopt::analyzer {

struct OpenedDb;  // analyzer/gain.h

struct AnalyzeRequest {
  std::string tracePath;
  double threshold = 0.1;
  std::string dbPath;  ///< empty: defaultDbPath()
  bool store = true;   ///< false: neither store the profile nor read the DB at all
  bool json = false;   ///< the report as JSON instead of text
  bool symbolize = true;
  bool salvage = false;         ///< analyse what precedes a corrupt chunk instead of failing
  std::string timelinePath;     ///< Chrome trace-event JSON; empty: none
  std::string plotsDir;         ///< gnuplot breakdown plot; empty: none
  std::string profileName;      ///< `--profile NAME`: stored as "@NAME" (ProgramIdentity)
  uint64_t forkedChildren = 0;  ///< AppProfile::forkedChildren (from the other traces of the run)
  /// How the traced run failed ("exited with status 2"; `hetopt trace` knows): its profile then
  /// does not replace one of a run that succeeded. Empty: it succeeded, or it is not known.
  std::string runFailed;
  /// The DB opened and its curves read ahead (AnalysisWarmup); used when it opened and its path
  /// is the one this request names, else the DB is opened here.
  const OpenedDb* opened = nullptr;
};

struct AnalyzeResult {
  AppProfile profile;
  int64_t profileId = 0;           ///< row id when stored
  std::vector<std::string> notes;  ///< one line each: files written, what was not done and why
  bool storeFailed = false;        ///< the profile could not be stored (the report is valid)
  bool stored = false;  ///< the DB holds a profile for it: this one, or a complete one kept
};

/// Runs the analysis. False with a one-line *error when the trace cannot be read (missing,
/// foreign, corrupt, newer format); problems after that (DB, plots) are notes, not failures.
bool analyzeTraceFile(const AnalyzeRequest& request, AnalyzeResult* result, std::string* error);

/// `hetopt analyze --profile PROGRAM`: the profile stored for the program as it is now (its
/// current build id or content hash), printed like a fresh analysis (text or `request.json`);
/// `request.plotsDir` plots its breakdown, standard and optimized side by side once `hetopt run`
/// stored them. Exit status 0; 1 when there is no profile or only a stale one (says why); 2 for
/// hetopt's own errors.
int showStoredProfile(const std::string& program, const AnalyzeRequest& request, FILE* out);

/// analyzeTraceFile() plus output: the report (or JSON) on `out`, notes and errors on stderr;
/// `result` (optional) keeps what was analysed.
/// Returns the exit status of `hetopt analyze`: 0, or 2 for hetopt's own errors (unreadable
/// trace, profile not stored).
int runAnalysis(const AnalyzeRequest& request, FILE* out, AnalyzeResult* result = nullptr);

}  // namespace hetopt::analyzer
