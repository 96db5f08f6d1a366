// SPDX-License-Identifier: MIT
/** @file Trace file writing; see writer.h and FORMAT.md.
 * The header, zstd chunks with their CRCs, the tail rewritten in place and the pad after it. */
#include "trace/writer.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/private_file.h"
#include "common/sigxfsz_block.h"
#include "hetopt/version.h"
#include "trace/format.h"

namespace hetopt::trace {
namespace {

// Writes all of [p, p+n) at `off`; false with *error (errno's text, or the file size limit, which
// is checked first so that nothing partial is written past it).
bool pwriteAll(int fd, const char* p, size_t n, uint64_t off, std::string* error) {
  rlimit limit{};
  if (getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      off + n > limit.rlim_cur) {
    *error =
        "the file size limit (ulimit -f: " + std::to_string(limit.rlim_cur) + " bytes) is reached";
    return false;
  }
  SigxfszBlock block;  // a limit lowered meanwhile makes this write fail, not kill the program
  while (n > 0) {
    ssize_t w = pwrite(fd, p, n, static_cast<off_t>(off));
    if (w < 0) {
      if (errno == EINTR) continue;
      *error = strerror(errno);
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
    off += static_cast<uint64_t>(w);
  }
  return true;
}

}  // namespace

std::string encodeHeader(const FileHeader& h, uint32_t formatVersion) {
  std::string out(kFixedHeaderBytes, '\0');
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  memcpy(p, kFileMagic, sizeof kFileMagic);
  putU32(p + 8, formatVersion);
  memcpy(p + 16, h.writerVersion.data(), std::min(h.writerVersion.size(), kWriterVersionBytes - 1));
  ByteWriter w(&out);
  w.var(h.pid);
  w.var(h.parentPid);
  w.var(h.startUnixNs);
  w.str(h.program);
  w.str(h.arguments);
  if (formatVersion >= kScriptFormatVersion) {
    w.u8(h.scriptKind);
    w.str(h.scriptName);
    w.str(h.scriptHash);
  }
  const uint32_t length = static_cast<uint32_t>(out.size() + 4);
  putU32(reinterpret_cast<unsigned char*>(out.data()) + 12, length);
  unsigned char crc[4];
  putU32(crc, crc32(out.data(), out.size()));
  out.append(reinterpret_cast<const char*>(crc), 4);
  return out;
}

TraceFileWriter::~TraceFileWriter() {
  close();
  if (m_cctx) ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(m_cctx));
}

bool TraceFileWriter::open(const std::string& path, const FileHeader& header, std::string* error) {
  abandon();
  const char* openError = nullptr;
  m_fd = openPrivateFile(path.c_str(), true, false, &openError);
  if (m_fd < 0) {
    *error = "cannot create " + path + ": " + openError;
    return false;
  }
  static_assert(HETOPT_TRACE_FORMAT_VERSION >= kTimelineFormatVersion,
                "leaf times need their format");
  std::string h = encodeHeader(header, HETOPT_TRACE_FORMAT_VERSION);
  std::string writeError;
  if (!pwriteAll(m_fd, h.data(), h.size(), 0, &writeError)) {
    *error = "cannot write " + path + ": " + writeError;
    abandon();
    return false;
  }
  m_failed = false;
  m_error.clear();
  m_end = m_tailEnd = h.size();
  m_sequence = 0;
  if (!m_cctx) {
    m_cctx = ZSTD_createCCtx();
    if (m_cctx) {
      ZSTD_CCtx_setParameter(static_cast<ZSTD_CCtx*>(m_cctx), ZSTD_c_compressionLevel, 3);
      ZSTD_CCtx_setParameter(static_cast<ZSTD_CCtx*>(m_cctx), ZSTD_c_checksumFlag, 1);
    }
  }
  return true;
}

bool TraceFileWriter::appendChunk(std::string* out, uint8_t kind, const std::string& raw,
                                  uint32_t sequence) {
  std::string payload;
  if (kind == static_cast<uint8_t>(ChunkKind::Pad)) {
    payload.assign(raw.size(), '\0');
  } else {
    if (!m_cctx) {
      m_error = "zstd: cannot create a compression context";
      return false;
    }
    payload.resize(ZSTD_compressBound(raw.size()));
    size_t n = ZSTD_compress2(static_cast<ZSTD_CCtx*>(m_cctx), payload.data(), payload.size(),
                              raw.data(), raw.size());
    if (ZSTD_isError(n)) {
      m_error = std::string("zstd: ") + ZSTD_getErrorName(n);
      return false;
    }
    payload.resize(n);
  }
  unsigned char h[kChunkHeaderBytes] = {};
  memcpy(h, kChunkMagic, sizeof kChunkMagic);
  h[4] = kind;
  putU32(h + 8, static_cast<uint32_t>(payload.size()));
  putU32(h + 12,
         kind == static_cast<uint8_t>(ChunkKind::Pad) ? 0 : static_cast<uint32_t>(raw.size()));
  putU32(h + 16, sequence);  // the chunk's index in the file
  // The CRC covers the header's other fields too: a flipped length, kind or sequence is caught.
  putU32(h + 20, crc32(payload.data(), payload.size(), crc32(h, 20)));
  out->append(reinterpret_cast<const char*>(h), sizeof h);
  out->append(payload);
  return true;
}

bool TraceFileWriter::write(const std::string& records, const std::string* tail) {
  if (m_fd < 0 || m_failed) return false;
  std::string out;
  uint32_t sequence = m_sequence;
  if (!records.empty() &&
      !appendChunk(&out, static_cast<uint8_t>(ChunkKind::Records), records, sequence++))
    return false;
  const size_t finalBytes = out.size();
  const uint32_t finalChunks = sequence;
  if (tail && !appendChunk(&out, static_cast<uint8_t>(ChunkKind::Tail), *tail, sequence++))
    return false;
  // Whatever of the old tail this write does not overwrite is covered by padding first.
  const uint64_t contentEnd = m_end + out.size();
  if (contentEnd < m_tailEnd) {
    uint64_t gap = std::max<uint64_t>(m_tailEnd - contentEnd, kChunkHeaderBytes);
    std::string zeros(gap - kChunkHeaderBytes, '\0');
    if (!appendChunk(&out, static_cast<uint8_t>(ChunkKind::Pad), zeros, sequence)) return false;
  }
  if (out.empty()) return true;
  std::string why;
  if (!pwriteAll(m_fd, out.data(), out.size(), m_end, &why)) {
    // These records are lost, so nothing after them may follow: the file ends at the last whole
    // chunk (no End record: readers see an incomplete trace) and every later write is refused.
    m_error = "write failed: " + why;
    m_failed = true;
    if (ftruncate(m_fd, static_cast<off_t>(m_end)) == 0) m_tailEnd = m_end;
    return false;
  }
  if (m_end + out.size() > contentEnd) {
    if (ftruncate(m_fd, static_cast<off_t>(contentEnd)) != 0) {
      m_tailEnd = m_end + out.size();  // the padding stays; still a valid file
      m_end += finalBytes;
      m_sequence = finalChunks;
      return true;
    }
  }
  m_end += finalBytes;
  m_sequence = finalChunks;
  m_tailEnd = contentEnd;
  return true;
}

void TraceFileWriter::close() {
  if (m_fd < 0) return;
  if (m_tailEnd > m_end) {
    if (ftruncate(m_fd, static_cast<off_t>(m_end)) == 0) m_tailEnd = m_end;
  }
  ::close(m_fd);
  m_fd = -1;
}

void TraceFileWriter::abandon() {
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
  m_end = m_tailEnd = 0;
}

}  // namespace hetopt::trace
