// SPDX-License-Identifier: MIT
/** @file Run records; see run_record.h.
 * RunRecord::serialize() and parseRunRecord(); plan identity and the file names beside a plan. */
#include "contracts/run_record.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "common/paths.h"
#include "contracts/text_fields.h"

namespace hetopt {

using text::parseU64;
using text::readNumbers;

const char* runKindName(RunKind kind) {
  return kind == RunKind::Untouched ? "untouched" : "optimized";
}

bool parseRunKind(const std::string& name, RunKind* out) {
  for (RunKind k : {RunKind::Optimized, RunKind::Untouched})
    if (name == runKindName(k)) return *out = k, true;
  return false;
}

std::string RunRecord::serialize() const {
  char line[256];
  const bool optimized = kind == RunKind::Optimized;
  std::string s = "hetopt-run " + std::to_string(kRunRecordFormatVersion) + " " + writer + "\n";
  s += std::string("kind ") + runKindName(kind) + "\nprogram " + programKey + "\n";
  if (optimized) {
    snprintf(line, sizeof line, "plan %016" PRIx64 " %.0f\n", planId, predictedSavingNs);
    s += line;
  }
  s += "pid " + std::to_string(pid) + "\nstarted " + std::to_string(startedUnixNs) + "\nwall " +
       std::to_string(wallNs) + "\n";
  if (signal)
    s += "signal " + std::to_string(signal) + "\n";
  else if (exited || !optimized)
    s += "exit " + std::to_string(exitStatus) + "\n";
  if (seq) s += "seq " + std::to_string(seq) + "\n";
  if (!note.empty()) s += "note " + note + "\n";
  if (!optimized) return s + "end\n";
  snprintf(line, sizeof line,
           "transfers %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
           pinned, pinnedBytes, pageable, pageableBytes, other, otherBytes);
  s += line;
  for (const RunSiteCounts& c : sites) {
    snprintf(line, sizeof line,
             "site %016" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", c.key,
             c.transfers, c.bytes, c.pinned, c.pageable);
    s += line;
  }
  return s + "end\n";
}

bool parseRunRecord(const std::string& text, RunRecord* out, std::string* error) {
  *out = RunRecord();
  std::istringstream in(text);
  std::string line;
  int lineNo = 0;
  bool header = false, ended = false, sawPlan = false, sawWall = false, sawExit = false,
       sawCounts = false;
  bool sawSignal = false;
  int version = 0;
  auto fail = [&](const std::string& why) {
    *error = "line " + std::to_string(lineNo) + ": " + why;
    return false;
  };
  while (std::getline(in, line)) {
    ++lineNo;
    if (ended) return fail("text after 'end'");
    std::istringstream words(line);
    std::string tag;
    words >> tag;
    if (!header) {
      std::string v;
      if (tag != "hetopt-run") return fail("not a hetopt run record");
      if (!(words >> v >> out->writer)) return fail("the header needs a version and a writer");
      for (int known = 1; known <= kRunRecordFormatVersion; ++known)
        if (v == std::to_string(known)) version = known;
      if (version == 0)
        return fail("run record format version " + v +
                    " is not supported (this hetopt reads 1 to " +
                    std::to_string(kRunRecordFormatVersion) + ")");
      header = true;
      continue;
    }
    bool ok = true;
    if (tag == "kind" && version >= 2) {
      std::string name, extra;
      ok = (words >> name) && parseRunKind(name, &out->kind) && !(words >> extra);
    } else if (tag == "program") {
      ok = static_cast<bool>(words >> out->programKey);
      std::string extra;
      ok = ok && !(words >> extra);
    } else if (tag == "plan") {
      uint64_t predicted = 0;
      ok = readNumbers(words, {&out->planId, &predicted}, true);
      out->predictedSavingNs = static_cast<double>(predicted);
      sawPlan = true;
    } else if (tag == "pid") {
      ok = readNumbers(words, {&out->pid});
    } else if (tag == "started") {
      ok = readNumbers(words, {&out->startedUnixNs});
    } else if (tag == "wall") {
      ok = readNumbers(words, {&out->wallNs});
      sawWall = true;
    } else if (tag == "exit" && version >= 2) {
      ok = !sawExit && !sawSignal && readNumbers(words, {&out->exitStatus}) &&
           out->exitStatus <= 255;
      sawExit = out->exited = true;
    } else if (tag == "signal" && version >= 3) {
      ok = !sawExit && !sawSignal && readNumbers(words, {&out->signal}) && out->signal >= 1 &&
           out->signal <= 128;
      sawSignal = true;
    } else if (tag == "seq" && version >= 3) {
      ok = readNumbers(words, {&out->seq});
    } else if (tag == "note" && version >= 3) {
      std::string extra;
      ok = (words >> out->note) && !(words >> extra) && out->note.size() <= 64;
    } else if (tag == "transfers") {
      sawCounts = true;
      ok = readNumbers(words, {&out->pinned, &out->pinnedBytes, &out->pageable, &out->pageableBytes,
                               &out->other, &out->otherBytes});
    } else if (tag == "site") {
      RunSiteCounts c;
      ok = readNumbers(words, {&c.key, &c.transfers, &c.bytes, &c.pinned, &c.pageable}, true) &&
           c.pinned + c.pageable <= c.transfers;
      out->sites.push_back(c);
      sawCounts = true;
    } else if (tag == "end") {
      ended = true;
    } else {
      return fail("unknown entry '" + tag + "'");
    }
    if (!ok) return fail("malformed '" + tag + "' line");
  }
  if (!header) return fail("empty run record");
  if (!ended || !sawWall || out->programKey.empty())
    return fail("incomplete run record (truncated?)");
  const bool ending = sawExit || sawSignal;
  if (out->kind == RunKind::Optimized && (!sawPlan || (ending && version < 3)))
    return fail(sawPlan ? "an optimized run record with an exit status"
                        : "incomplete run record (truncated?)");
  if (out->kind == RunKind::Untouched && (sawPlan || sawCounts || !ending))
    return fail(ending ? "an untouched run record with a plan or transfers"
                       : "incomplete run record (truncated?)");
  return true;
}

uint64_t planIdentity(const Plan& plan) {
  // The plan as the shim reads it back: parsePlan() orders the sites by key, and the planner
  // writes them by value. Hashing the file's order gave `hetopt run` (the ledger, the verdict) and
  // the shim (its run record) two identities for one plan of several sites.
  Plan canonical = plan;
  sortPlanSites(&canonical);
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : canonical.serialize()) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string planFileName(const std::string& programKey) {
  std::string name = programKey;
  for (char& c : name)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return name.substr(0, 200) + ".plan";
}

std::string runRecordPrefix(const std::string& planPath) {
  const std::string ext = ".plan";
  const bool plain = planPath.size() > ext.size() &&
                     planPath.compare(planPath.size() - ext.size(), ext.size(), ext) == 0;
  return (plain ? planPath.substr(0, planPath.size() - ext.size()) : planPath) + ".";
}

std::string runRecordPath(const std::string& planPath, uint64_t pid, uint64_t startedUnixNs) {
  return runRecordPrefix(planPath) + std::to_string(pid) + "-" + std::to_string(startedUnixNs) +
         kRunRecordSuffix;
}

std::string forkMarkerPath(const std::string& planPath) {
  return runRecordPrefix(planPath) + "forked";
}

bool writeRunRecordFile(const std::string& path, const RunRecord& record, std::string* error) {
  const std::string tmp = path + ".tmp";
  if (!writePrivateFile(tmp, record.serialize(), error)) {
    unlink(tmp.c_str());  // what a full disk or a size limit left of it
    return false;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot rename " + tmp + " to " + path + ": " + strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

bool readRunRecordFile(const std::string& path, RunRecord* out, std::string* error) {
  std::string text;
  if (!readOwnFile(path, 1u << 20, "a run record", &text, error)) return false;
  if (!parseRunRecord(text, out, error)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

}  // namespace hetopt
