// SPDX-License-Identifier: MIT
/**
 * @file The trace file on disk: header, zstd-compressed chunks, and the crash-safe tail.
 * Final records are appended as Records chunks and never rewritten. The records that may still
 * change (each thread's folding window) are written as one Tail chunk after them, overwritten in
 * place by the next write; a Pad chunk covers what is left of a longer old tail until the file is
 * truncated, so at every instant the file is a valid sequence of whole chunks (one pwrite of a
 * few KiB; a SIGKILL between the write and the truncation leaves the padding, not garbage).
 * Files are created 0600.
 */
#pragma once
#include <cstdint>
#include <string>

namespace hetopt::trace {

struct FileHeader {
  uint64_t pid = 0;
  uint64_t parentPid = 0;
  uint64_t startUnixNs = 0;   ///< wall-clock time the trace started
  std::string writerVersion;  ///< hetopt version that wrote it (at most 15 characters kept)
  std::string program;        ///< executable path
  std::string arguments;      ///< command line, arguments separated by NUL
  /// What the process runs when it is an interpreter (version 5; common/program_identity.h
  /// ScriptRef): kind 0 none, 1 file, 2 module, 3 code; the file's resolved path or the module's
  /// name; the hex SHA-256 of the file or the code.
  uint8_t scriptKind = 0;
  std::string scriptName, scriptHash;
};

/// Serializes the header: the fixed 32 bytes, the variable fields and a CRC.
std::string encodeHeader(const FileHeader& h, uint32_t formatVersion);

class TraceFileWriter {
 public:
  TraceFileWriter() = default;
  ~TraceFileWriter();
  TraceFileWriter(const TraceFileWriter&) = delete;
  TraceFileWriter& operator=(const TraceFileWriter&) = delete;

  /// Creates (truncates) `path` with mode 0600, never following a symlink, and writes the header.
  bool open(const std::string& path, const FileHeader& header, std::string* error);
  bool isOpen() const { return m_fd >= 0; }
  /// Appends `records` (uncompressed record bytes; may be empty) as a Records chunk, then `tail`
  /// (when non-null) as the new Tail chunk replacing the previous one; null drops the old tail.
  /// False with error() when the file cannot take them (full disk, file size limit: SIGXFSZ is
  /// never raised by this write); the file then ends at the last whole chunk and every later
  /// write is refused (failed()).
  bool write(const std::string& records, const std::string* tail);
  bool failed() const { return m_failed; }
  /// Drops the tail (truncates) and closes.
  void close();
  /// Closes without writing anything more (a forked child lets go of its parent's file).
  void abandon();
  uint64_t fileBytes() const { return m_end; }
  const std::string& error() const { return m_error; }

 private:
  bool appendChunk(std::string* out, uint8_t kind, const std::string& raw, uint32_t sequence);
  int m_fd = -1;
  uint64_t m_end = 0;       ///< end of the last final chunk
  uint64_t m_tailEnd = 0;   ///< end of tail + padding currently on disk (>= m_end)
  uint32_t m_sequence = 0;  ///< final chunks written
  void* m_cctx = nullptr;   ///< ZSTD_CCtx, reused across chunks
  bool m_failed = false;    ///< a write failed: the file ends at m_end
  std::string m_error;
};

}  // namespace hetopt::trace
