// SPDX-License-Identifier: MIT
/**
 * @file Constants and byte-level primitives of the trace file format (trace/FORMAT.md is the
 * specification; keep both in step). Shared by the writer (inside the shim) and the reader: lean,
 * header-only except crc32.
 */
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace hetopt::trace {

// ---- file layout -----------------------------------------------------------------------------
inline constexpr char kFileMagic[8] = {'H', 'E', 'T', 'O', 'P', 'T', 'T', 'R'};
/// The first 32 bytes (magic, format version, header length, writer version) keep this layout in
/// every format version, so that any reader can name both versions when it refuses a file.
inline constexpr size_t kFixedHeaderBytes = 32;
inline constexpr size_t kWriterVersionBytes = 16;
inline constexpr size_t kMaxHeaderBytes = 64 * 1024;

inline constexpr char kChunkMagic[4] = {'C', 'H', 'N', 'K'};
inline constexpr size_t kChunkHeaderBytes = 24;
/// A chunk never holds more than this many uncompressed bytes (the writer flushes at 64 KiB; the
/// reader refuses larger claims instead of allocating them).
inline constexpr uint32_t kMaxChunkRawBytes = 64u << 20;

enum class ChunkKind : uint8_t {
  Records = 1,  ///< final records
  Tail = 2,     ///< snapshot of records not final yet; superseded by any later Records chunk
  Pad = 3,      ///< filler (zeros) left where an older, longer tail was overwritten
};

// ---- records inside a chunk ------------------------------------------------------------------
enum class RecordTag : uint8_t {
  Thread = 1,
  Module = 2,
  Site = 3,
  Object = 4,
  Entry = 5,
  End = 6,
  Time = 7,
  RecordingCost = 8,
  Startup = 9,  ///< version 4
  Clock = 10,   ///< version 6
  Exec = 11,    ///< version 7: in the tail written just before exec
};

/// The format version that added leaf times (Stamp, Leaf::endNs) and Clock records.
/// The version from which the header names the script an interpreter ran.
inline constexpr uint32_t kScriptFormatVersion = 5;
inline constexpr uint32_t kTimelineFormatVersion = 6;
/// The version from which a trace says that it ended because the process exec'd.
inline constexpr uint32_t kExecFormatVersion = 7;

/// How a Clock record knows the offset between a device's profiling clock and the trace's.
enum class ClockMethod : uint8_t {
  Timer = 1,      ///< clGetDeviceAndHostTimer (OpenCL 2.1) against the host timer, bracketed
  Estimated = 2,  ///< from timed commands: their QUEUED timestamp lies inside their host call
};
const char* clockMethodName(ClockMethod m);

/// Zigzag encoding of signed values as varints.
inline uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t unzigzag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

enum class NodeTag : uint8_t { Leaf = 1, Loop = 2 };

/// What a leaf of the call tree records.
enum class LeafType : uint8_t {
  Call = 0,     ///< an OpenCL call; code = api::ApiId
  Alloc = 1,    ///< a tracked host allocation; code = AllocFn (contracts/alloc_fn.h)
  Free = 2,     ///< free of a tracked host segment
  Realloc = 3,  ///< realloc of any block that was or becomes tracked; code = AllocFn::Realloc
};

/// Kinds of objects the trace tracks by identity.
enum class ObjectKind : uint8_t {
  Segment = 0,    ///< host memory from a tracked allocation
  Untracked = 1,  ///< host memory malloc never gave us: static data, stack, mmap, small blocks
  Svm = 2,        ///< SVM / USM allocation made through OpenCL
  Platform = 3,
  Device = 4,
  Context = 5,
  Queue = 6,
  Mem = 7,
  Program = 8,
  Kernel = 9,
  Sampler = 10,
  Count
};
const char* objectKindName(ObjectKind kind);

/// Where untracked host memory lies (from /proc/self/maps when first seen).
enum class RegionClass : uint8_t {
  Unknown = 0,
  Static = 1,
  Stack = 2,
  Heap = 3,
  Mmap = 4,
  File = 5
};
const char* regionClassName(RegionClass c);

/// Reference flags: how a call treats an object.
enum RefFlag : uint8_t {
  kRefRead = 1,     ///< uses the current version
  kRefWrite = 2,    ///< defines a new version
  kRefCreate = 4,   ///< creates the object (its first version)
  kRefDestroy = 8,  ///< frees / releases it
  kRefHost = 16,    ///< a host-memory range: offset/end/bytes follow
};

/// What a call does with a host-memory range.
enum class HostAccess : uint8_t {
  None = 0,
  Read = 1,    ///< the call reads host memory (host -> device, incl. CL_MEM_COPY_HOST_PTR)
  Write = 2,   ///< the call writes host memory (device -> host)
  Wrap = 3,    ///< CL_MEM_USE_HOST_PTR: the buffer lives in this host memory
  Mapped = 4,  ///< a map returned this host range
  Unmap = 5,   ///< the range handed back to clEnqueueUnmapMemObject
};
const char* hostAccessName(HostAccess a);

/// Whether a call's host range is a host<->device transfer, as hetopt counts one everywhere: the
/// trace summary (summarize(), `hetopt show --json`), optimize mode's `--stats`, its JSON and the
/// run record. A range read to the device or written from it is one, whatever the call (read,
/// write, rect, image, CL_MEM_COPY_HOST_PTR creation, SVM copy), provided the memory is not an
/// SVM/USM allocation (that is device memory: the trace's Svm objects, optimize mode's SvmRanges).
/// Wrap (CL_MEM_USE_HOST_PTR) and Mapped/Unmap are not: whether and when a driver copies there
/// (at creation, at a kernel, at a map, or never on a device sharing host memory) is invisible at
/// the call, and which bytes it would move depends on flags and usage the call does not say.
inline bool isTransfer(HostAccess a) { return a == HostAccess::Read || a == HostAccess::Write; }

/// Reference index for refs that are not an argument of the call.
inline constexpr uint8_t kRefArgReturn = 255;  ///< the return value
inline constexpr uint8_t kRefArgBound = 254;   ///< an object bound to the launched kernel

/// Object record field bits.
enum ObjectField : uint8_t {
  kObjAddress = 1,  ///< address, size
  kObjSite = 2,     ///< allocation site id, alloc fn
  kObjLabel = 4,    ///< label string (kernel name, device name)
  kObjRegion = 8,   ///< region class, mapping start, mapping end, mapping file offset, mapping name
  kObjParent = 16,  ///< related object (realloc source, USE_HOST_PTR memory, sub-buffer parent)
  kObjModule = 32,  ///< module id holding the memory (static data)
};

// ---- little-endian fixed and LEB128 variable integers ------------------------------------------
inline void putU32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline uint32_t getU32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

/// Appends encoded values to a byte string.
class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : m_out(out) {}
  void u8(uint8_t v) { m_out->push_back(static_cast<char>(v)); }
  void var(uint64_t v) {
    while (v >= 0x80) {
      m_out->push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    m_out->push_back(static_cast<char>(v));
  }
  void str(std::string_view s) {
    var(s.size());
    m_out->append(s.data(), s.size());
  }
  std::string* out() { return m_out; }

 private:
  std::string* m_out;
};

/// Reads encoded values; never reads past the end. After the first failure every read returns 0
/// and ok() stays false, so parsers check once per record.
class ByteReader {
 public:
  ByteReader(const unsigned char* p, size_t n) : m_p(p), m_end(p + n) {}
  bool ok() const { return m_ok; }
  bool atEnd() const { return m_p == m_end; }
  size_t left() const { return static_cast<size_t>(m_end - m_p); }
  uint8_t u8() {
    if (m_p == m_end) return fail();
    return *m_p++;
  }
  uint64_t var() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (m_p == m_end) return fail();
      unsigned char b = *m_p++;
      if (shift == 63 && (b & 0x7e)) return fail();  // more than 64 bits
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return fail();
  }
  /// A varint that must fit `limit` (inclusive).
  uint64_t varMax(uint64_t limit) {
    uint64_t v = var();
    return v > limit ? fail() : v;
  }
  std::string str(size_t maxLen = 1 << 20) {
    uint64_t n = var();
    if (!m_ok || n > maxLen || n > left()) {
      fail();
      return {};
    }
    std::string s(reinterpret_cast<const char*>(m_p), n);
    m_p += n;
    return s;
  }
  uint64_t fail() {
    m_ok = false;
    m_p = m_end;
    return 0;
  }

 private:
  const unsigned char* m_p;
  const unsigned char* m_end;
  bool m_ok = true;
};

/// CRC-32 (IEEE 802.3, as zlib) of a byte range; `crc` chains calls.
uint32_t crc32(const void* data, size_t n, uint32_t crc = 0);

}  // namespace hetopt::trace
