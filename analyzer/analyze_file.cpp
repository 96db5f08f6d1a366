// SPDX-License-Identifier: MIT
/** @file The analysis step end to end; see analyze_file.h.
 * From a trace file to a stored profile (analysis, plots, DB), and showing a stored one. */
#include "analyzer/analyze_file.h"

#include <unistd.h>

#include <ctime>
#include <set>

#include "analyzer/analysis.h"
#include "analyzer/gain.h"
#include "analyzer/plots.h"
#include "analyzer/profile_store.h"
#include "analyzer/report.h"
#include "analyzer/timeline.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/phase_times.h"
#include "common/program_identity.h"
#include "contracts/program_recipe.h"
#include "contracts/run_record.h"
#include "hetopt/version.h"
#include "store/db.h"
#include "trace/reader.h"

namespace hetopt::analyzer {
namespace {

std::string nowUtc() {
  char buf[32];
  time_t t = time(nullptr);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// The traced program's identity. The trace's module map has the executable's build id as it was
/// when traced; that is what the profile belongs to, even if the file here changed since (or is
/// on another machine). Without a build id, the file's content hash, when the file is here.
void identify(const trace::Trace& t, AnalyzeResult* r) {
  ProgramIdentity& id = r->profile.program;
  id.path = t.header.program;
  // What an interpreter ran, as the shim saw it at the time (format 5; older traces have none).
  if (t.header.scriptKind > 0 && t.header.scriptKind <= static_cast<uint8_t>(ScriptRef::Kind::Code))
    id.script = {static_cast<ScriptRef::Kind>(t.header.scriptKind), t.header.scriptName,
                 t.header.scriptHash};
  const trace::TraceModule* exe = nullptr;
  for (const trace::TraceModule& m : t.modules)
    if (m.path == t.header.program) exe = &m;
  ProgramIdentity local;
  std::string error;
  bool haveLocal = !id.path.empty() && programIdentity(id.path, &local, &error);
  if (exe && !exe->buildId.empty()) {
    id.buildId = exe->buildId;
    if (haveLocal && !local.buildId.empty() && local.buildId != exe->buildId)
      r->profile.warnings.push_back(id.path + " was rebuilt since it was traced (build id " +
                                    local.buildId + ", traced " + exe->buildId +
                                    "): the profile is for the traced build and will not apply "
                                    "to the current binary; trace it again");
    return;
  }
  if (haveLocal) {
    // The executable only: what it ran stays the trace's.
    id.path = local.path;
    id.buildId = local.buildId;
    id.contentHash = local.contentHash;
    r->profile.warnings.push_back("the trace records no build id for " + t.header.program +
                                  "; identified by the file as it is now (" + id.key() + ")");
    return;
  }
  // Neither: key by the path alone, so the profile cannot silently match a different binary.
  id.contentHash = "unknown";
  r->profile.warnings.push_back("cannot identify " + t.header.program + " (" + error +
                                "): the profile will not be used by `hetopt run`");
}

/// The breakdown plot: `hetopt run`'s standard and optimized runs side by side when stored
/// (what pinning changed for this program on this machine), else the traced run alone.
void plotBreakdown(const AnalyzeRequest& req, Db* db, int64_t profileId, const AppProfile& p,
                   std::vector<std::string>* notes) {
  std::vector<BreakdownBar> bars;
  std::string err;
  if (db && profileId) loadRunBreakdowns(*db, profileId, &bars, &err);
  if (bars.empty()) {
    bars.push_back({"traced", p.breakdown});
    // Until measured: the what-if of the characterized curves, labelled as a prediction.
    Breakdown predicted;
    if (predictOptimizedBreakdown(p, &predicted)) bars.push_back({"predicted", predicted});
  }
  PlotOutput out;
  std::string title = programLabel(p.program) + (p.device.empty() ? "" : " on " + p.device);
  if (!writeBreakdownPlot(req.plotsDir, programSlug(p.program), title, bars, &out, &err))
    notes->push_back("plots not written: " + err);
  else if (!out.image.empty())
    notes->push_back("breakdown plot: " + out.image + " and " + out.png);
  else
    notes->push_back("breakdown plot data: " + out.data + " (" + out.note + ")");
}

/// Whether the stored profile of `fresh`'s program came from a complete trace of a run that
/// succeeded (then an incomplete trace, or a failed run, does not replace it); *what says which
/// profile that is.
bool keepsCompleteProfile(Db& db, const AppProfile& fresh, std::string* what) {
  AppProfile stored;
  ProfileLookup lookup;
  std::string err;
  if (!loadProfile(db, fresh.program, &stored, &lookup, &err) ||
      lookup.status != ProfileLookup::Status::Found)
    return false;
  // Incomplete or failed too: the newer wins.
  for (const std::string& w : stored.warnings)
    if (w.rfind(kIncompleteTraceWarning, 0) == 0 || w.rfind(kFailedRunWarning, 0) == 0)
      return false;
  *what = "analysed " + stored.createdUtc + " from a complete trace (" + stored.traceFile + ")";
  return true;
}

// The programs the traced process built from source (`<trace>.programs`, written by the trace
// mode), kept beside the program's plans for `hetopt run` to build ahead; a stored profile without
// one leaves none from an earlier trace.
void keepProgramRecipe(const std::string& tracePath, const std::string& programKey,
                       std::vector<std::string>* notes) {
  const std::string plansDir = cacheDirectory() + "/plans";
  const std::string kept = programRecipePath(plansDir + "/" + planFileName(programKey));
  ProgramRecipe recipe;
  std::string error;
  if (access((tracePath + ".programs").c_str(), F_OK) != 0) {
    unlink(kept.c_str());
    return;
  }
  if (!readProgramRecipeFile(tracePath + ".programs", &recipe, &error) ||
      !makePrivateDirs(plansDir, &error) || !writeProgramRecipeFile(kept, recipe, &error)) {
    unlink(kept.c_str());
    notes->push_back("the programs it builds will not be built ahead: " + error);
    return;
  }
  size_t fromSource = 0;
  for (const RecipeProgram& p : recipe.programs) fromSource += p.form == ProgramForm::Source;
  const size_t others = recipe.programs.size() - fromSource;
  std::string what;
  if (fromSource) what = std::to_string(fromSource) + " built from source";
  if (others) what += (what.empty() ? "" : ", ") + std::to_string(others) + " from binaries or IL";
  notes->push_back("programs kept for `hetopt run` to build ahead: " + what);
}

}  // namespace

bool analyzeTraceFile(const AnalyzeRequest& req, AnalyzeResult* r, std::string* error) {
  *r = AnalyzeResult{};
  trace::Trace t;
  trace::ReadOptions ro;
  ro.salvage = req.salvage;
  std::string err;
  if (!trace::readTraceFile(req.tracePath, &t, &err, ro)) {
    // The reader names the file for open errors, not for bad contents.
    *error = err.find(req.tracePath) == std::string::npos ? req.tracePath + ": " + err : err;
    return false;
  }
  AppProfile& p = r->profile;
  if (req.salvage && !err.empty()) r->notes.push_back("salvaged what precedes the damage: " + err);
  p.traceFile = req.tracePath;
  p.createdUtc = nowUtc();
  p.hetoptVersion = HETOPT_VERSION_STRING;
  identify(t, r);
  p.program.profileName = req.profileName;
  p.forkedChildren = req.forkedChildren;
  p.device = traceDevice(t);

  AnalysisOptions opt;
  opt.threshold = req.threshold;
  opt.symbolize = req.symbolize;
  std::unique_ptr<OpenedDb> openedHere;
  Db* db = nullptr;  // the opened DB's, while the profile is to be stored
  std::unique_ptr<GainModel> gain;
  phases::Scope opening("DB open and curves");
  if (req.store) {
    const std::string dbPath = req.dbPath.empty() ? defaultDbPath() : req.dbPath;
    const OpenedDb* opened = req.opened;
    if (!opened || !opened->db || opened->path != dbPath)
      opened = (openedHere = openDbWithCurves(dbPath)).get();
    db = opened->db.get();
    if (!db) {
      r->notes.push_back("profile not stored: " + opened->error);
      r->storeFailed = true;
      opt.noGainReason = "DB unavailable (" + opened->error + ")";
    } else {
      std::string why;
      gain = gainModelFor(*opened, p.device, &why);
      if (!gain) opt.noGainReason = why;
      opt.gain = gain.get();
    }
  } else {
    opt.noGainReason = "not looked up (--no-store)";
  }
  opening.end();
  analyzeTrace(t, opt, &p);
  if (!req.runFailed.empty())
    p.warnings.push_back(std::string(kFailedRunWarning) + " (it " + req.runFailed +
                         "): the profile may not show the program's usual work");

  if (db && (!t.complete || !req.runFailed.empty()) && keepsCompleteProfile(*db, p, &err)) {
    // A crash, a kill or a failed run must not cost the profile of an earlier run that went well.
    r->notes.push_back(
        "profile not stored: " +
        (t.complete ? "the traced run " + req.runFailed : std::string("this trace is incomplete")) +
        "; kept the stored one, " + err);
    r->stored = true;  // the kept one answers for this program
    db = nullptr;
  }
  if (db) {
    phases::Scope storing("DB store");
    if (storeProfile(*db, p, &r->profileId, &err)) {
      r->notes.push_back(
          "profile stored in " + db->path() + " for " + p.program.key() +
          (p.program.profileName.empty() ? "" : " as '" + p.program.profileName + "'"));
      r->stored = true;
      keepProgramRecipe(req.tracePath, p.program.key(), &r->notes);
    } else {
      r->notes.push_back("profile not stored: " + err);
      r->storeFailed = true;
    }
  }
  if (!req.timelinePath.empty()) {
    TimelineInfo info;
    std::set<uint64_t> candidateKeys;
    for (const CandidateSite& c : p.candidates) candidateKeys.insert(c.siteKey);
    std::set<uint32_t> candidateSites;
    for (uint32_t site = 1; site <= t.sites.size(); ++site)
      if (candidateKeys.count(traceSiteKey(t, site))) candidateSites.insert(site);
    std::vector<TimelineEvent> events = timelineEvents(t, &info, candidateSites);
    if (writeTimeline(req.timelinePath, info, events, &err))
      r->notes.push_back("timeline written to " + req.timelinePath +
                         " (open in ui.perfetto.dev or chrome://tracing)");
    else
      r->notes.push_back("timeline not written: " + err);
  }
  if (!req.plotsDir.empty()) plotBreakdown(req, db, r->profileId, p, &r->notes);
  return true;
}

int showStoredProfile(const std::string& program, const AnalyzeRequest& req, FILE* out) {
  ProgramIdentity id;
  std::string err;
  // A `#!` script is its interpreter running it, as `hetopt run` identifies it.
  if (!commandIdentity({program}, &id, &err, identityCacheDir())) {
    warn("analyze: %s", err.c_str());
    return 2;
  }
  const std::string dbPath = req.dbPath.empty() ? defaultDbPath() : req.dbPath;
  std::unique_ptr<Db> db = Db::open(dbPath, Db::Mode::ReadOnly, &err);
  if (!db) {
    warn("analyze: %s", err.c_str());
    return 2;
  }
  AppProfile p;
  ProfileLookup lookup;
  if (!loadProfile(*db, id, &p, &lookup, &err)) {
    warn("analyze: %s: %s", dbPath.c_str(), err.c_str());
    return 2;
  }
  if (lookup.status == ProfileLookup::Status::None) {
    warn("no profile for %s in %s; run `hetopt trace` on it", id.describe().c_str(),
         dbPath.c_str());
    return 1;
  }
  if (lookup.status == ProfileLookup::Status::Stale) {
    warn(
        "the profile of %s in %s is for another build (%s, analysed %s); this one is %s: run "
        "`hetopt trace` on it again",
        id.describe().c_str(), dbPath.c_str(), lookup.storedKey.c_str(),
        lookup.storedCreatedUtc.c_str(), id.key().c_str());
    return 1;
  }
  // Priced with the curves as they are now, as `hetopt run` prices it: a characterization made
  // after the trace counts without a re-trace (the stored predictions say what was known then).
  std::string noCurves;
  if (std::unique_ptr<GainModel> gain = loadGainModel(*db, p.device, &noCurves)) {
    for (CandidateSite& c : p.candidates) gain->predict(c, &c.gain);
    for (UntrackedMemory& u : p.untracked)
      if (u.registrable()) gain->predictRegistration(u, &u.gain);
  }
  std::string text = req.json ? profileToJson(p) : formatReport(p);
  fwrite(text.data(), 1, text.size(), out);
  fflush(out);
  std::vector<std::string> notes;
  if (!req.plotsDir.empty()) plotBreakdown(req, db.get(), lookup.id, p, &notes);
  for (const std::string& n : notes) warn("%s", n.c_str());
  return 0;
}

int runAnalysis(const AnalyzeRequest& req, FILE* out, AnalyzeResult* result) {
  AnalyzeResult local;
  AnalyzeResult& r = result ? *result : local;
  std::string error;
  if (!analyzeTraceFile(req, &r, &error)) {
    warn("analyze: %s", error.c_str());
    return 2;
  }
  std::string text = req.json ? profileToJson(r.profile) : formatReport(r.profile);
  fwrite(text.data(), 1, text.size(), out);
  fflush(out);
  for (const std::string& n : r.notes) warn("%s", n.c_str());
  return r.storeFailed ? 2 : 0;
}

}  // namespace hetopt::analyzer
