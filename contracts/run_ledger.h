// SPDX-License-Identifier: MIT
/**
 * @file The run ledger: every `hetopt run` of one program, in the order they started, beside its
 * plan (`<plans>/<key>.ledger`, 0600). `hetopt run` appends a line when a run starts and one when
 * it ends, each under an exclusive lock of the file, so runs of one program at the same time (make
 * -j, job arrays) share it; `hetopt report` reads it, and the closed loop (analyzer/closed_loop.h)
 * pairs control and optimized runs from it. The text format is in trace/FORMAT.md ("Run ledger").
 */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hetopt {

inline constexpr int kLedgerFormatVersion = 1;

/// Control: untouched, timed. Optimized: timed. Untouched: a reverted plan's run, not timed.
/// Declined: `hetopt run` found nothing worth doing.
enum class LedgerKind : uint8_t { Control, Optimized, Untouched, Declined };
const char* ledgerKindName(LedgerKind kind);

/// How a timed run ended; Running until its end line is written. Interrupted: the terminal's
/// signal reached hetopt during the run. Lost: no status.
enum class RunEnd : uint8_t { Running, Exited, Signaled, Interrupted, Lost };
const char* runEndName(RunEnd end);

struct LedgerRun {
  uint64_t seq = 0;
  LedgerKind kind = LedgerKind::Optimized;
  uint64_t planId = 0;  ///< optimized: the plan it ran; control: the plan it was the control of
  uint64_t startedUnixNs = 0;
  uint64_t hetoptPid = 0;
  RunEnd end = RunEnd::Running;
  uint64_t pid = 0;     ///< the program's
  uint64_t wallNs = 0;  ///< from hetopt's start until the program was reaped
  uint64_t code = 0;    ///< exit status or signal number
  bool timed() const { return kind == LedgerKind::Control || kind == LedgerKind::Optimized; }
  /// Ended in a way that says how the program behaves: exited or killed, not interrupted by the
  /// user's terminal, not lost.
  bool usable() const { return end == RunEnd::Exited || end == RunEnd::Signaled; }
  /// The same ending (status, or signal) as `other`.
  bool sameEnding(const LedgerRun& other) const { return end == other.end && code == other.code; }
};

/// A plan reverted for good by run `seq` (a failed run).
struct LedgerRevert {
  uint64_t planId = 0;
  uint64_t seq = 0;    ///< the run that caused it
  std::string reason;  ///< one word
};

struct Ledger {
  std::vector<LedgerRun> runs;  ///< by seq, oldest first
  std::vector<LedgerRevert> reverts;
  const LedgerRun* find(uint64_t seq) const;
  bool reverted(uint64_t planId) const;
};

/// Parses a ledger; false with a one-line *error when it is corrupt. A last line without its
/// newline is a write that was cut short and is skipped; anything else that does not parse makes
/// the whole ledger corrupt (the caller moves it aside with a warning).
bool parseLedger(const std::string& text, Ledger* out, std::string* error);
std::string serializeLedger(const Ledger& ledger);

/// `<plan minus .plan>.ledger`: the ledger of the program whose plan is `planPath`.
std::string ledgerPath(const std::string& planPath);

/// The ledger file, opened (created 0600 if missing) and locked exclusively for as long as the
/// object lives. Every change is one appended line; the file is rewritten only to drop old runs
/// (beyond kLedgerKeptRuns), through a new file renamed over it.
class LedgerFile {
 public:
  /// Runs kept when the ledger is compacted (with every revert line).
  static constexpr size_t kLedgerKeptRuns = 400;

  LedgerFile() = default;
  LedgerFile(const LedgerFile&) = delete;
  LedgerFile& operator=(const LedgerFile&) = delete;
  ~LedgerFile() { close(); }

  /// Opens, locks and reads. False with *error; *corrupt is true when the file is there but does
  /// not parse (it is left as it is, the lock released).
  bool open(const std::string& path, std::string* error, bool* corrupt);
  const Ledger& ledger() const { return m_ledger; }
  /// Appends a run's start line; its seq (one more than the last) in *seq.
  bool start(LedgerKind kind, uint64_t planId, uint64_t startedUnixNs, uint64_t hetoptPid,
             uint64_t* seq, std::string* error);
  /// Appends run `seq`'s end line.
  bool finish(uint64_t seq, uint64_t pid, uint64_t wallNs, RunEnd end, uint64_t code,
              std::string* error);
  bool revert(uint64_t planId, uint64_t seq, const std::string& reason, std::string* error);
  /// Unlocks and closes.
  void close();

 private:
  bool append(const std::string& line, std::string* error);
  /// Rewrites the file with the newest runs; true when it did (the lock is then released).
  bool compact();

  std::string m_path;
  int m_fd = -1;
  Ledger m_ledger;
};

/// Moves a corrupt ledger aside (`<path>.corrupt`), so the next run starts a new one. False with
/// *error.
bool setLedgerAside(const std::string& path, std::string* error);

}  // namespace hetopt
