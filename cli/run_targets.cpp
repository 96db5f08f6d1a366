// SPDX-License-Identifier: MIT
/** @file Which profiles a command line uses; see run_targets.h.
 * The command's identity (through a forwarding wrapper), its profile or its launcher record's. */
#include "cli/run_targets.h"

#include "common/log.h"
#include "contracts/trace_marks.h"

namespace hetopt::cli {
namespace {

/// The command as typed, shortened: each long word cut, a word with blanks quoted.
std::string commandWords(const std::vector<std::string>& command) {
  constexpr size_t kLongWord = 40;
  std::string out;
  for (const std::string& word : command) {
    std::string w = word.size() > kLongWord ? word.substr(0, kLongWord - 3) + "..." : word;
    if (w.empty() || w.find_first_of(" \t\n") != std::string::npos) w = "'" + w + "'";
    out += (out.empty() ? "" : " ") + w;
  }
  return out;
}

}  // namespace

bool identifyForRun(const std::vector<std::string>& command, const std::string& profileName,
                    IdentifiedCommand* out, std::string* error) {
  std::string why;
  if (!identifyCommand(command, &out->identity, &out->wrapper, &why)) {
    *error = "cannot identify " + command[0] + (why.empty() ? "" : ": " + why);
    return false;
  }
  out->identity.profileName = profileName;
  out->label = out->identity.describe();
  if (!out->wrapper.path.empty()) out->label = commandWords(command) + " (" + out->label + ")";
  return true;
}

std::string whyNoProfile(const IdentifiedCommand& command, const std::string& dbProblem) {
  const std::string traced = readNoOpenClMark(command.identity);
  if (!traced.empty())
    return command.label + " was traced (" + traced +
           "): it made no OpenCL calls, so there is nothing to optimize";
  return "no profile for " + command.label + (dbProblem.empty() ? "" : ": " + dbProblem) +
         "; run `hetopt trace` on it first";
}

#ifdef HETOPT_HAVE_ANALYZER
namespace {

/// Whether the program a stored profile names is still the same file(s) here; else *why.
bool unchangedSince(const ProgramIdentity& stored, std::string* why) {
  ProgramIdentity now;
  std::string error;
  if (!programIdentity(stored.path, &now, &error, identityCacheDir()))
    return *why = "cannot identify " + stored.path + ": " + error, false;
  if (now.executableKey() != stored.executableKey())
    return *why = stored.path + " changed since it was traced", false;
  if (stored.script.kind != ScriptRef::Kind::File) return true;
  std::string resolved, hash;
  if (!fileContentHash(stored.script.name, &resolved, &hash, &error, identityCacheDir()))
    return *why = "cannot read " + stored.script.name + ": " + error, false;
  if (hash != stored.script.hash)
    return *why = stored.script.name + " changed since it was traced", false;
  return true;
}

// The launched programs a launcher record names, each with its profile, unless it changed since.
std::string loadLaunched(Db& db, const analyzer::LauncherRecord& record,
                         const ProgramIdentity& identity, std::vector<Target>* targets) {
  std::string error, reasons;
  for (const analyzer::LaunchedProgram& l : record.launched) {
    Target t;
    t.pid = l.pid;
    t.self = l.key == record.launcherKey;
    analyzer::ProfileLookup lookup;
    if (!analyzer::loadProfileAt(db, l.profilePath, l.key, &t.profile, &lookup, &error))
      return error;
    t.profileId = lookup.id;
    std::string why;
    if (lookup.status != analyzer::ProfileLookup::Status::Found)
      why = "its profile is gone from the DB";
    else if (!t.self && identity.profileName.empty() && !unchangedSince(t.profile.program, &why))
      why += "; run `hetopt trace` on " + identity.describe() + " again";
    if (why.empty()) {
      targets->push_back(std::move(t));
      continue;
    }
    reasons += (reasons.empty() ? "" : "; ") + l.description + ": " + why;
  }
  if (targets->empty())
    return "no profile to use for what " + identity.describe() + " runs (" + reasons + ")";
  if (!reasons.empty()) warn("not optimizing %s", reasons.c_str());
  return {};
}

}  // namespace

std::string findTargets(Db& db, const IdentifiedCommand& command, std::vector<Target>* targets) {
  const ProgramIdentity& identity = command.identity;
  std::string error;
  const bool named = !identity.profileName.empty();
  if (!named) {
    // A launcher record first: it names the command's own profile too when the command made
    // OpenCL calls beside the processes it started.
    analyzer::LauncherRecord record;
    bool found = false;
    if (!analyzer::loadLauncher(db, identity.profilePath(), identity.key(), &record, &found,
                                &error))
      return error;
    if (found) return loadLaunched(db, record, identity, targets);
    Target own;
    analyzer::ProfileLookup lookup;
    if (!analyzer::loadProfile(db, identity, &own.profile, &lookup, &error)) return error;
    if (lookup.status == analyzer::ProfileLookup::Status::Found) {
      own.profileId = lookup.id;
      targets->push_back(std::move(own));
      return {};
    }
    if (lookup.status == analyzer::ProfileLookup::Status::Stale)
      return "the profile of " + command.label + " is for another build (" + lookup.storedKey +
             ", traced " + lookup.storedCreatedUtc + "); run `hetopt trace` on it again";
    return whyNoProfile(command);
  }
  analyzer::LauncherRecord record;
  bool found = false;
  if (!analyzer::loadLauncher(db, identity.profilePath(), {}, &record, &found, &error))
    return error;
  if (!found)
    return "no profile named '" + identity.profileName + "'; run `hetopt trace --profile " +
           identity.profileName + "` first";
  if (record.launcherKey != identity.key())
    warn(
        "the profile '%s' was traced from another program or build (%s, %s); %s is %s: using "
        "it as asked (sites of a rebuilt binary will not match; trace again if it changed)",
        identity.profileName.c_str(), record.launcherKey.c_str(), record.createdUtc.c_str(),
        identity.describe().c_str(), identity.key().c_str());
  return loadLaunched(db, record, identity, targets);
}
#endif

}  // namespace hetopt::cli
