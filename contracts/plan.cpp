// SPDX-License-Identifier: MIT
/** @file Plan file reading and writing; see plan.h.
 * Plan::serialize() and parsePlan() side by side, so both change in one place; the files. */
#include "contracts/plan.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "common/paths.h"
#include "contracts/text_fields.h"

namespace hetopt {
namespace {

using text::parseU64;

// The six numbers after `site ... profile`.
bool parseSiteProfile(std::istringstream& words, SiteProfile* p) {
  if (!text::readNumbers(words,
                         {&p->allocations, &p->minAllocBytes, &p->maxAllocBytes,
                          &p->typicalAllocBytes, &p->peakLiveBytes, &p->peakLiveBlocks},
                         false, false))
    return false;
  return p->minAllocBytes <= p->typicalAllocBytes && p->typicalAllocBytes <= p->maxAllocBytes;
}

}  // namespace

const char* siteStrategyName(SiteStrategy s) {
  return s == SiteStrategy::Register ? "register" : "pool";
}

const PlanSite* Plan::find(uint64_t key, uint64_t size) const {
  auto it = std::lower_bound(sites.begin(), sites.end(), key,
                             [](const PlanSite& s, uint64_t k) { return s.key < k; });
  for (; it != sites.end() && it->key == key; ++it)
    if (size >= it->minBytes && size <= it->maxBytes) return &*it;
  return nullptr;
}

std::string Plan::unwritableReason() const {
  auto bad = [](const std::string& s, bool blanksOk) {
    for (char c : s)
      if (c == '\n' || c == '\r' || c == '\0' ||
          (!blanksOk && isspace(static_cast<unsigned char>(c))))
        return true;
    return false;
  };
  // Readers skip white space before the path and the device name.
  auto leadingSpace = [](const std::string& s) {
    return !s.empty() && isspace(static_cast<unsigned char>(s[0]));
  };
  if (programPath.empty() || bad(programPath, true) || leadingSpace(programPath))
    return "the program path cannot be written in a plan";
  if (programKey.empty() || bad(programKey, false))
    return "the program key cannot be written in a plan";
  if (bad(device, true) || leadingSpace(device))
    return "the device name cannot be written in a plan";
  if (!buildAheadRecipe.empty() && (bad(buildAheadRecipe, true) || leadingSpace(buildAheadRecipe)))
    return "the program recipe's path cannot be written in a plan";
  if (poolPolicy.empty() || bad(poolPolicy, false))
    return "the pool policy cannot be written in a plan";
  // What the reader takes as complete: pooled sites with a pool, or none and no pool.
  if (hasPoolSites() != (poolBytes != 0))
    return "a plan has pooled sites but no pool, or a pool but none";
  if (startupOnly() && (!earlyContext || directAllocation))
    return "a plan needs a site, a registration or the early context (start-up only)";
  return {};
}

std::string Plan::serialize() const {
  std::ostringstream out;
  out << "hetopt-plan " << kPlanFormatVersion << "\n";
  out << "program " << programPath << " " << programKey << "\n";
  if (hasProgramStamp)
    out << "stamp " << programStamp.dev << " " << programStamp.inode << " " << programStamp.size
        << " " << programStamp.mtimeNs << " " << programStamp.ctimeNs << "\n";
  out << "device " << device << "\n";
  out << "pool " << poolPolicy << " " << poolBytes << "\n";
  if (directAllocation) out << "pool-mode direct\n";
  if (earlyContext) out << "context early\n";
  if (driverLate) out << "driver late\n";
  if (!buildAheadRecipe.empty())
    out << "build-ahead " << buildAheadPrograms << " " << buildAheadNs << " " << buildAheadRecipe
        << "\n";
  for (const PlanSite& s : sites) {
    char line[256];
    int n = snprintf(line, sizeof line, "site %016" PRIx64 " %" PRIu64 " %" PRIu64, s.key,
                     s.minBytes, s.maxBytes);
    if (s.strategy == SiteStrategy::Register) n += snprintf(line + n, sizeof line - n, " register");
    if (s.waitNsPerMiB) n += snprintf(line + n, sizeof line - n, " wait %" PRIu64, s.waitNsPerMiB);
    const SiteProfile& p = s.profile;
    if (s.profiled)
      snprintf(line + n, sizeof line - n,
               " profile %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64,
               p.allocations, p.minAllocBytes, p.maxAllocBytes, p.typicalAllocBytes,
               p.peakLiveBytes, p.peakLiveBlocks);
    out << line << "\n";
  }
  for (const PlanStaticRange& r : staticRanges) {
    char line[112];
    snprintf(line, sizeof line, "register static %016" PRIx64 " %" PRIu64 " %" PRIu64 "\n",
             r.moduleKey, r.offset, r.bytes);
    out << line;
  }
  if (registersMappings()) out << "register mmap " << mmapMinBytes << " " << mmapMaxBytes << "\n";
  if (registerLatencyNs || registerNsPerMiB)
    out << "register-cost " << registerLatencyNs << " " << registerNsPerMiB << "\n";
  if (predictedSavingNs) out << "predicted " << predictedSavingNs << "\n";
  if (startupOnly()) out << "startup-only\n";  // last: a plan cut before it reads as incomplete
  return out.str();
}

bool parsePlan(const std::string& text, Plan* plan, std::string* error) {
  *plan = Plan();
  std::istringstream in(text);
  std::string line;
  int lineNo = 0;
  bool sawHeader = false, sawPool = false, sawStartupOnly = false;
  auto fail = [&](const std::string& why) {
    *error = "plan line " + std::to_string(lineNo) + ": " + why;
    return false;
  };
  // A plan cut short (disk full, a killed writer) inside a line: said as such, whatever the cut
  // line would otherwise look like. The writer ends every line with a newline.
  if (!text.empty() && text.back() != '\n') {
    lineNo = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
    return fail("truncated plan (its last line is incomplete)");
  }
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string tag;
    words >> tag;
    if (sawStartupOnly) return fail("'startup-only' must be the plan's last line");
    if (!sawHeader) {
      std::string version;
      words >> version;
      if (tag != "hetopt-plan") return fail("not a hetopt plan");
      if (version != std::to_string(kPlanFormatVersion) && version != "1" && version != "2")
        return fail("plan format version " + version + " is not supported (this hetopt reads " +
                    std::to_string(kPlanFormatVersion) + ")");
      sawHeader = true;
      continue;
    }
    if (tag == "program") {
      // "program <path> <key>": the key is the last word, the path everything before it (blanks
      // included: programs live in "My Programs" too).
      std::string rest;
      std::getline(words >> std::ws, rest);
      size_t blank = rest.find_last_of(" \t");
      if (blank == std::string::npos || blank == 0) return fail("program needs path and key");
      plan->programPath = rest.substr(0, blank);
      plan->programKey = rest.substr(blank + 1);
      if (plan->programKey.empty()) return fail("program needs path and key");
    } else if (tag == "stamp") {
      FileStamp& st = plan->programStamp;
      if (!(words >> st.dev >> st.inode >> st.size >> st.mtimeNs >> st.ctimeNs))
        return fail("stamp needs device, inode, size, mtime and ctime");
      plan->hasProgramStamp = true;
    } else if (tag == "device") {
      std::getline(words >> std::ws, plan->device);
    } else if (tag == "pool") {
      std::string bytes;
      if (!(words >> plan->poolPolicy >> bytes) || !parseU64(bytes, 10, &plan->poolBytes))
        return fail("pool needs a policy and a size");
      sawPool = true;
    } else if (tag == "site") {
      std::string key, lo, hi;
      PlanSite s;
      if (!(words >> key >> lo >> hi) || !parseU64(key, 16, &s.key) ||
          !parseU64(lo, 10, &s.minBytes) || !parseU64(hi, 10, &s.maxBytes) ||
          s.minBytes > s.maxBytes)
        return fail("site needs a hex key and a size range");
      std::string more;
      while (words >> more) {
        if (more == "register" && s.strategy == SiteStrategy::Pool && !s.waitNsPerMiB &&
            !s.profiled) {
          s.strategy = SiteStrategy::Register;
        } else if (more == "wait" && !s.waitNsPerMiB && !s.profiled) {
          std::string ns;
          if (!(words >> ns) || !parseU64(ns, 10, &s.waitNsPerMiB) || s.waitNsPerMiB == 0)
            return fail("site wait needs a positive number of nanoseconds per MiB");
        } else if (more == "profile" && !s.profiled) {
          if (!parseSiteProfile(words, &s.profile))
            return fail(
                "site profile needs allocations, min/max/typical allocation bytes, peak "
                "live bytes and blocks (min <= typical <= max)");
          s.profiled = true;
        } else {
          return fail("unexpected '" + more + "'");
        }
      }
      plan->sites.push_back(s);
    } else if (tag == "register") {
      std::string what, a, b, c;
      words >> what;
      if (what == "static") {
        PlanStaticRange r;
        if (!(words >> a >> b >> c) || !parseU64(a, 16, &r.moduleKey) || r.moduleKey == 0 ||
            !parseU64(b, 10, &r.offset) || !parseU64(c, 10, &r.bytes) || r.bytes == 0 ||
            r.offset + r.bytes < r.offset)
          return fail("register static needs a hex module key, an offset and a size");
        plan->staticRanges.push_back(r);
      } else if (what == "mmap") {
        if (plan->registersMappings()) return fail("register mmap given twice");
        if (!(words >> a >> b) || !parseU64(a, 10, &plan->mmapMinBytes) ||
            !parseU64(b, 10, &plan->mmapMaxBytes) || plan->mmapMaxBytes == 0 ||
            plan->mmapMinBytes > plan->mmapMaxBytes)
          return fail("register mmap needs a size range");
      } else {
        return fail("register needs 'static' or 'mmap', not '" + what + "'");
      }
    } else if (tag == "context") {
      std::string when;
      if (!(words >> when) || when != "early") return fail("context needs 'early'");
      plan->earlyContext = true;
    } else if (tag == "build-ahead") {
      std::string n, ns;
      if (!(words >> n >> ns) || !parseU64(n, 10, &plan->buildAheadPrograms) ||
          !parseU64(ns, 10, &plan->buildAheadNs))
        return fail("build-ahead needs programs, a saving in nanoseconds and a recipe path");
      std::getline(words >> std::ws, plan->buildAheadRecipe);
      if (plan->buildAheadRecipe.empty())
        return fail("build-ahead needs programs, a saving in nanoseconds and a recipe path");
    } else if (tag == "driver") {
      std::string when;
      if (!(words >> when) || when != "late") return fail("driver needs 'late'");
      plan->driverLate = true;
    } else if (tag == "register-cost") {
      std::string a, b;
      if (!(words >> a >> b) || !parseU64(a, 10, &plan->registerLatencyNs) ||
          !parseU64(b, 10, &plan->registerNsPerMiB))
        return fail("register-cost needs a latency and a cost per MiB, in nanoseconds");
    } else if (tag == "predicted") {
      std::string ns;
      if (!(words >> ns) || !parseU64(ns, 10, &plan->predictedSavingNs))
        return fail("predicted needs a saving in nanoseconds");
    } else if (tag == "startup-only") {
      sawStartupOnly = true;
    } else if (tag == "pool-mode") {
      std::string mode;
      if (!(words >> mode) || (mode != "direct" && mode != "pool"))
        return fail("pool-mode needs 'pool' or 'direct'");
      plan->directAllocation = mode == "direct";
    } else {
      return fail("unknown entry '" + tag + "'");
    }
    std::string extra;
    if (tag != "device" && tag != "program" && (words >> extra))
      return fail("unexpected '" + extra + "'");
  }
  if (!sawHeader) {
    lineNo = 0;
    return fail("empty plan");
  }
  // Nor must one cut at a line end pass for a smaller plan: the writer always writes a pool line
  // and at least one site (with a pool) or registration, or else `startup-only` last.
  if (!sawPool || (plan->startupOnly() && !sawStartupOnly))
    return fail(
        "incomplete plan (truncated?): no pool, or no site, registration or 'startup-only' line");
  if (sawStartupOnly && !plan->startupOnly())
    return fail("'startup-only' with sites or registrations");
  if (sawStartupOnly && (!plan->earlyContext || plan->directAllocation))
    return fail("'startup-only' needs 'context early' and no 'pool-mode direct'");
  if (plan->hasPoolSites() != (plan->poolBytes != 0))
    return fail(plan->hasPoolSites() ? "pooled sites but no pool" : "a pool but no pooled site");
  sortPlanSites(plan);
  return true;
}

void sortPlanSites(Plan* plan) {
  std::stable_sort(plan->sites.begin(), plan->sites.end(),
                   [](const PlanSite& a, const PlanSite& b) { return a.key < b.key; });
}

bool readPlanFile(const std::string& path, Plan* plan, std::string* error) {
  std::string text;
  // No plan is this large: refused, not read into memory.
  if (!readOwnFile(path, 16u << 20, "a plan", &text, error)) return false;
  if (!parsePlan(text, plan, error)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

bool writePlanFile(const std::string& path, const Plan& plan, std::string* error) {
  std::string why = plan.unwritableReason();
  if (!why.empty()) {
    *error = "cannot write the plan " + path + ": " + why;
    return false;
  }
  return writePrivateFile(path, plan.serialize(), error);
}

}  // namespace hetopt
