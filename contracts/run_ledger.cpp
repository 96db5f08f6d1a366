// SPDX-License-Identifier: MIT
/** @file The run ledger; see run_ledger.h.
 * Line writing and parsing, and LedgerFile: open under flock, append, compact. */
#include "contracts/run_ledger.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "common/paths.h"
#include "common/private_file.h"
#include "contracts/run_record.h"
#include "contracts/text_fields.h"

namespace hetopt {
namespace {

constexpr LedgerKind kKinds[] = {LedgerKind::Control, LedgerKind::Optimized, LedgerKind::Untouched,
                                 LedgerKind::Declined};
constexpr RunEnd kEnds[] = {RunEnd::Exited, RunEnd::Signaled, RunEnd::Interrupted, RunEnd::Lost};

std::string hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

std::string startLine(const LedgerRun& r) {
  return "run " + std::to_string(r.seq) + " " + ledgerKindName(r.kind) + " " + hex(r.planId) + " " +
         std::to_string(r.startedUnixNs) + " " + std::to_string(r.hetoptPid) + "\n";
}

std::string endLine(const LedgerRun& r) {
  return "end " + std::to_string(r.seq) + " " + std::to_string(r.pid) + " " +
         std::to_string(r.wallNs) + " " + runEndName(r.end) + " " + std::to_string(r.code) + "\n";
}

std::string revertLine(const LedgerRevert& r) {
  return "revert " + hex(r.planId) + " " + std::to_string(r.seq) + " " + r.reason + "\n";
}

bool oneWord(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  return true;
}

}  // namespace

const char* ledgerKindName(LedgerKind kind) {
  switch (kind) {
    case LedgerKind::Control:
      return "control";
    case LedgerKind::Optimized:
      return "optimized";
    case LedgerKind::Untouched:
      return "untouched";
    case LedgerKind::Declined:
      return "declined";
  }
  return "optimized";
}

const char* runEndName(RunEnd end) {
  switch (end) {
    case RunEnd::Running:
      return "running";
    case RunEnd::Exited:
      return "exit";
    case RunEnd::Signaled:
      return "signal";
    case RunEnd::Interrupted:
      return "interrupted";
    case RunEnd::Lost:
      return "lost";
  }
  return "lost";
}

const LedgerRun* Ledger::find(uint64_t seq) const {
  // Seqs are dense from the first kept run on: a direct index, checked.
  if (runs.empty() || seq < runs.front().seq) return nullptr;
  const uint64_t i = seq - runs.front().seq;
  return i < runs.size() && runs[i].seq == seq ? &runs[i] : nullptr;
}

bool Ledger::reverted(uint64_t planId) const {
  for (const LedgerRevert& r : reverts)
    if (r.planId == planId) return true;
  return false;
}

bool parseLedger(const std::string& text, Ledger* out, std::string* error) {
  *out = Ledger{};
  size_t lineNo = 0;
  auto fail = [&](const std::string& what) {
    *error = "line " + std::to_string(lineNo) + ": " + what;
    return false;
  };
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // a write cut short: skipped
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++lineNo;
    std::istringstream words(line);
    std::string tag;
    words >> tag;
    if (lineNo == 1) {
      uint64_t version = 0;
      if (tag != "hetopt-ledger" || !text::readNumbers(words, {&version}))
        return fail("not a hetopt run ledger");
      if (version != kLedgerFormatVersion)
        return fail("ledger format " + std::to_string(version) + ", this hetopt reads " +
                    std::to_string(kLedgerFormatVersion));
      continue;
    }
    if (tag == "run") {
      LedgerRun r;
      std::string seq, kind, rest;
      if (!(words >> seq >> kind) || !text::parseU64(seq, 10, &r.seq)) return fail("bad run line");
      bool known = false;
      for (LedgerKind k : kKinds) known |= kind == ledgerKindName(k) && (r.kind = k, true);
      if (!known) return fail("unknown run kind " + kind);
      if (!text::readNumbers(words, {&r.planId, &r.startedUnixNs, &r.hetoptPid}, true))
        return fail("bad run line");
      if (!out->runs.empty() && r.seq != out->runs.back().seq + 1) return fail("runs out of order");
      out->runs.push_back(r);
    } else if (tag == "end") {
      uint64_t seq = 0, pid = 0, wall = 0, code = 0;
      std::string how;
      if (!text::readNumbers(words, {&seq, &pid, &wall}, false, false) || !(words >> how) ||
          !text::readNumbers(words, {&code}))
        return fail("bad end line");
      auto* r = const_cast<LedgerRun*>(out->find(seq));
      if (!r || r->end != RunEnd::Running || !r->timed())
        return fail("an end line for no running timed run");
      bool known = false;
      for (RunEnd e : kEnds) known |= how == runEndName(e) && (r->end = e, true);
      if (!known) return fail("unknown ending " + how);
      r->pid = pid, r->wallNs = wall, r->code = code;
    } else if (tag == "revert") {
      LedgerRevert v;
      if (!text::readNumbers(words, {&v.planId, &v.seq}, true, false) || !(words >> v.reason) ||
          !oneWord(v.reason))
        return fail("bad revert line");
      std::string extra;
      if (words >> extra) return fail("bad revert line");
      out->reverts.push_back(v);
    } else {
      return fail("unknown line '" + tag + "'");
    }
  }
  if (lineNo == 0) return text.empty() ? true : fail("not a hetopt run ledger");
  return true;
}

std::string serializeLedger(const Ledger& ledger) {
  std::string s = "hetopt-ledger " + std::to_string(kLedgerFormatVersion) + "\n";
  for (const LedgerRun& r : ledger.runs) s += startLine(r);
  for (const LedgerRun& r : ledger.runs)
    if (r.end != RunEnd::Running) s += endLine(r);
  for (const LedgerRevert& v : ledger.reverts) s += revertLine(v);
  return s;
}

std::string ledgerPath(const std::string& planPath) { return runRecordPrefix(planPath) + "ledger"; }

bool LedgerFile::open(const std::string& path, std::string* error, bool* corrupt) {
  close();
  *corrupt = false;
  m_path = path;
  m_ledger = Ledger{};
  // The file may be replaced by a compaction between our open and our lock: lock, then check
  // that the path still names what we locked.
  for (int attempt = 0; attempt < 8; ++attempt) {
    const char* why = nullptr;
    int fd = openPrivateFileReadWrite(path.c_str(), &why);
    if (fd < 0) return *error = path + ": " + why, false;
    while (flock(fd, LOCK_EX) != 0) {
      if (errno != EINTR) {
        *error = path + ": cannot lock: " + strerror(errno);
        ::close(fd);
        return false;
      }
    }
    struct stat mine, now;
    if (fstat(fd, &mine) == 0 && stat(path.c_str(), &now) == 0 && mine.st_ino == now.st_ino &&
        mine.st_dev == now.st_dev) {
      m_fd = fd;
      break;
    }
    ::close(fd);
  }
  if (m_fd < 0) return *error = path + ": replaced while being locked", false;
  std::string text;
  char buf[8192];
  ssize_t n;
  while ((n = pread(m_fd, buf, sizeof buf, static_cast<off_t>(text.size()))) > 0)
    text.append(buf, n);
  if (n < 0) {
    *error = path + ": " + strerror(errno);
    close();
    return false;
  }
  if (text.find('\n') == std::string::npos) {
    // New, or its first line was cut short as it was created.
    if (ftruncate(m_fd, 0) != 0) {
      *error = path + ": " + strerror(errno);
      close();
      return false;
    }
    return append("hetopt-ledger " + std::to_string(kLedgerFormatVersion) + "\n", error);
  }
  if (!parseLedger(text, &m_ledger, error)) {
    *error = path + ": " + *error;
    *corrupt = true;
    close();
    return false;
  }
  if (text.back() != '\n') {
    // Drop the cut-short line, so the next line starts on its own.
    const size_t keep = text.rfind('\n') + 1;
    if (ftruncate(m_fd, static_cast<off_t>(keep)) != 0) {
      *error = path + ": " + strerror(errno);
      close();
      return false;
    }
  }
  if (m_ledger.runs.size() > 2 * kLedgerKeptRuns && compact()) return open(path, error, corrupt);
  return true;
}

bool LedgerFile::append(const std::string& line, std::string* error) {
  const off_t end = lseek(m_fd, 0, SEEK_END);
  size_t done = 0;
  while (end >= 0 && done < line.size()) {
    const ssize_t n =
        pwrite(m_fd, line.data() + done, line.size() - done, end + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  if (done == line.size()) return true;
  *error = m_path + ": cannot write: " + strerror(errno ? errno : EIO);
  if (end >= 0 && ftruncate(m_fd, end) != 0) {
  }  // no half line left behind where possible
  return false;
}

bool LedgerFile::start(LedgerKind kind, uint64_t planId, uint64_t startedUnixNs, uint64_t hetoptPid,
                       uint64_t* seq, std::string* error) {
  LedgerRun r;
  r.seq = m_ledger.runs.empty() ? 1 : m_ledger.runs.back().seq + 1;
  r.kind = kind, r.planId = planId, r.startedUnixNs = startedUnixNs, r.hetoptPid = hetoptPid;
  if (!append(startLine(r), error)) return false;
  m_ledger.runs.push_back(r);
  *seq = r.seq;
  return true;
}

bool LedgerFile::finish(uint64_t seq, uint64_t pid, uint64_t wallNs, RunEnd end, uint64_t code,
                        std::string* error) {
  auto* r = const_cast<LedgerRun*>(m_ledger.find(seq));
  if (!r || r->end != RunEnd::Running)
    return *error = m_path + ": run " + std::to_string(seq) + " is not running", false;
  LedgerRun ended = *r;
  ended.end = end, ended.pid = pid, ended.wallNs = wallNs, ended.code = code;
  if (!append(endLine(ended), error)) return false;
  *r = ended;
  return true;
}

bool LedgerFile::revert(uint64_t planId, uint64_t seq, const std::string& reason,
                        std::string* error) {
  LedgerRevert v{planId, seq, oneWord(reason) ? reason : "failed"};
  if (!append(revertLine(v), error)) return false;
  m_ledger.reverts.push_back(v);
  return true;
}

bool LedgerFile::compact() {
  // Under the lock: a new file with the newest runs (and every revert), renamed over the old one.
  // Whoever waits for the old file's lock finds it replaced and opens the new one (open()).
  Ledger kept;
  kept.runs.assign(m_ledger.runs.end() - static_cast<ptrdiff_t>(kLedgerKeptRuns),
                   m_ledger.runs.end());
  kept.reverts = m_ledger.reverts;
  const std::string tmp = m_path + ".tmp";
  std::string error;
  if (!writePrivateFile(tmp, serializeLedger(kept), &error) ||
      rename(tmp.c_str(), m_path.c_str()) != 0) {
    unlink(tmp.c_str());
    return false;  // the old file stays whole; the next run tries again
  }
  close();
  return true;
}

void LedgerFile::close() {
  if (m_fd >= 0) ::close(m_fd);  // releases the lock
  m_fd = -1;
}

bool setLedgerAside(const std::string& path, std::string* error) {
  const std::string aside = path + ".corrupt";
  if (rename(path.c_str(), aside.c_str()) != 0)
    return *error = "cannot move " + path + " aside: " + strerror(errno), false;
  return true;
}

}  // namespace hetopt
