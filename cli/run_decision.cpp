// SPDX-License-Identifier: MIT
/**
 * @file The decision cache of `hetopt run`; see run_decision.h. A small line-based file (kMagic
 * lists its lines), written through a temporary file renamed into place and trusted only while
 * every stamp and mark in it still holds.
 */
#include "cli/run_decision.h"

#include <time.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <sstream>

#include "common/clock.h"
#include "common/paths.h"
#include "common/program_identity.h"
#include "contracts/run_record.h"
#include "contracts/text_fields.h"
#include "hetopt/version.h"

namespace hetopt::cli {
namespace {

// The file, one entry per line, in this order:
//   hetopt-decision 2
//   version <hetopt version>
//   exe <stamp>
//   db <stamp, or none>
//   options <the options>
//   program <stamp> <path>       one per program planned for
//   mark <0|1> <path>            one per mark: whether it exists
//   key <identity key>
//   command-plan <path>
//   ledger <path>
//   why <text>                   declined; or, per step of the chain:
//   plan <stamp> <path>          per step, one per plan file: the file as this decision wrote it
//   step <id-hex> <plan files>
//   summary <text>
//   end
// A stamp is "dev inode size mtime-ns ctime-ns" (common/program_identity.h's FileStamp).
constexpr const char* kMagic = "hetopt-decision 2";

// One file per command and option set: runs of one program with other options (--policy, say)
// must not evict each other's decision.
std::string cachePath(const std::string& key, const std::string& options) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : options) h = (h ^ c) * 16777619u;
  char tag[16];
  snprintf(tag, sizeof tag, "%08x", h);
  return runRecordPrefix(cacheDirectory() + "/plans/" + planFileName(key)) + tag + ".decision";
}

std::string stampText(const std::string& path) {
  FileStamp s;
  if (!fileStamp(path, &s)) return "none";
  char buf[128];
  snprintf(buf, sizeof buf, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64, s.dev,
           s.inode, s.size, s.mtimeNs, s.ctimeNs);
  return buf;
}

// A file changed within the last second may change again without its stamp showing it.
bool settled(const std::string& path) {
  FileStamp s;
  if (!fileStamp(path, &s)) return true;
  const int64_t now = static_cast<int64_t>(clockNs(CLOCK_REALTIME));
  return now - s.mtimeNs > kHashCacheSettleNs && now - s.ctimeNs > kHashCacheSettleNs;
}

bool noLineBreak(const std::string& s) { return s.find('\n') == std::string::npos; }

}  // namespace

bool loadCachedDecision(const std::string& key, const std::string& options,
                        const std::string& dbPath, PreparedRun* out) {
  std::string text, error;
  if (!readOwnFile(cachePath(key, options), 1 << 20, "a decision", &text, &error)) return false;
  *out = PreparedRun{};
  std::istringstream in(text);
  std::string line;
  bool magic = false, ended = false;
  while (std::getline(in, line)) {
    const size_t blank = line.find(' ');
    const std::string tag = line.substr(0, blank),
                      rest = blank == std::string::npos ? "" : line.substr(blank + 1);
    if (!magic) {
      if (line != kMagic) return false;
      magic = true;
    } else if (tag == "version") {
      if (rest != HETOPT_VERSION_STRING) return false;
    } else if (tag == "exe") {
      if (rest != stampText("/proc/self/exe")) return false;
    } else if (tag == "db") {
      if (rest != stampText(dbPath)) return false;
    } else if (tag == "options") {
      if (rest != options) return false;
    } else if (tag == "program" || tag == "mark" || tag == "plan") {
      // "<stamp> <path>" (five numbers) or "<0|1> <path>".
      std::istringstream words(rest);
      std::string stamp;
      const bool stamped = tag != "mark";
      const int fields = stamped ? 5 : 1;
      for (int i = 0; i < fields; ++i) {
        std::string w;
        if (!(words >> w)) return false;
        stamp += (i ? " " : "") + w;
      }
      std::string path;
      std::getline(words, path);
      if (path.empty() || path[0] != ' ') return false;
      path.erase(0, 1);
      // A plan file another option set's decision rewrote since (they share the plan's path)
      // is not this decision's plan any more.
      if (stamped ? stampText(path) != stamp : (access(path.c_str(), F_OK) == 0) != (stamp == "1"))
        return false;
      if (tag != "plan") (tag == "program" ? out->programs : out->marks).push_back(path);
    } else if (tag == "key") {
      out->programKey = rest;
    } else if (tag == "command-plan") {
      out->commandPlan = rest;
    } else if (tag == "ledger") {
      out->ledger = rest;
    } else if (tag == "why") {
      out->whyNot = rest;
    } else if (tag == "step") {
      PreparedRun::Step step;
      const size_t space = rest.find(' ');
      if (space == std::string::npos || !text::parseU64(rest.substr(0, space), 16, &step.id))
        return false;
      step.planFiles = rest.substr(space + 1);
      // The plans must still be there for the shim to read.
      for (size_t start = 0; start <= step.planFiles.size();) {
        size_t end = step.planFiles.find(':', start);
        if (end == std::string::npos) end = step.planFiles.size();
        if (access(step.planFiles.substr(start, end - start).c_str(), R_OK) != 0) return false;
        start = end + 1;
      }
      out->chain.push_back(step);
    } else if (tag == "summary") {
      if (out->chain.empty()) return false;
      out->chain.back().summary = rest;
    } else if (tag == "end") {
      ended = true;
    } else {
      return false;
    }
  }
  return ended && (out->whyNot.empty() != out->chain.empty());
}

void storeCachedDecision(const std::string& key, const std::string& options,
                         const std::string& dbPath, const PreparedRun& run) {
  std::string text = std::string(kMagic) + "\nversion " + HETOPT_VERSION_STRING + "\nexe " +
                     stampText("/proc/self/exe") + "\ndb " + stampText(dbPath) + "\noptions " +
                     options + "\n";
  bool ok = settled(dbPath) && noLineBreak(options) && noLineBreak(run.whyNot);
  for (const std::string& p : run.programs) {
    ok = ok && settled(p) && noLineBreak(p);
    text += "program " + stampText(p) + " " + p + "\n";
  }
  for (const std::string& m : run.marks) {
    ok = ok && noLineBreak(m);
    text += std::string("mark ") + (access(m.c_str(), F_OK) == 0 ? "1 " : "0 ") + m + "\n";
  }
  text += "key " + run.programKey + "\ncommand-plan " + run.commandPlan + "\nledger " + run.ledger +
          "\n";
  if (!run.whyNot.empty()) text += "why " + run.whyNot + "\n";
  for (const PreparedRun::Step& s : run.chain) {
    char id[24];
    snprintf(id, sizeof id, "%016" PRIx64, s.id);
    ok = ok && noLineBreak(s.planFiles) && noLineBreak(s.summary);
    for (size_t start = 0; start <= s.planFiles.size();) {
      size_t end = s.planFiles.find(':', start);
      if (end == std::string::npos) end = s.planFiles.size();
      const std::string file = s.planFiles.substr(start, end - start);
      text += "plan " + stampText(file) + " " + file + "\n";
      start = end + 1;
    }
    text += std::string("step ") + id + " " + s.planFiles + "\nsummary " + s.summary + "\n";
  }
  if (!ok) return;
  const std::string path = cachePath(key, options), tmp = path + ".tmp";
  std::string error;
  if (!makePrivateDirs(dirName(path), &error) || !writePrivateFile(tmp, text + "end\n", &error) ||
      rename(tmp.c_str(), path.c_str()) != 0)
    unlink(tmp.c_str());
}

}  // namespace hetopt::cli
