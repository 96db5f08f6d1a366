// SPDX-License-Identifier: MIT
/** @file Program identity (ELF build id or SHA-256); see program_identity.h.
 * ELF build-id notes, a SHA-256 of the file otherwise (cached by file stamp). */
#include "common/program_identity.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "common/paths.h"

namespace hetopt {
namespace {

constexpr uint32_t kSha256K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

std::string toHex(const unsigned char* p, size_t n) {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s += kHex[p[i] >> 4];
    s += kHex[p[i] & 15];
  }
  return s;
}

/// An open regular file read by offset: the build id needs the headers and the note areas only,
/// never the whole file (executables with embedded kernels or data reach hundreds of MiB).
struct ElfFile {
  int fd = -1;
  struct stat st {};
  std::string path;
  ~ElfFile() {
    if (fd >= 0) ::close(fd);
  }
  bool open(const std::string& p, std::string* error) {
    path = p;
    fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      *error = p + ": " + strerror(errno);
      return false;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      *error = p + " is not a regular file";
      return false;
    }
    return true;
  }
  uint64_t size() const { return static_cast<uint64_t>(st.st_size); }
  /// Exactly `n` bytes at `off`; false when the file is shorter or cannot be read.
  bool read(uint64_t off, void* out, size_t n) const {
    if (off > size() || size() - off < n) return false;
    size_t got = 0;
    while (got < n) {
      ssize_t r =
          ::pread(fd, static_cast<char*>(out) + got, n - got, static_cast<off_t>(off + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  }
  // Little-endian ELF only (every platform hetopt targets).
  template <typename T>
  bool readAt(uint64_t off, T* out) const {
    return read(off, out, sizeof(T));
  }
};

// Note areas larger than this are not build-id notes worth reading (a corrupt header could name
// gigabytes).
constexpr uint64_t kMaxNoteArea = 1 << 20;

// Walks one note area [off, off+size) for NT_GNU_BUILD_ID.
bool findBuildIdNote(const ElfFile& f, uint64_t off, uint64_t size, std::string* buildId) {
  if (size > kMaxNoteArea) return false;
  std::vector<unsigned char> area(size);
  if (!f.read(off, area.data(), area.size())) return false;
  uint64_t p = 0, end = size;
  while (end - p >= sizeof(Elf64_Nhdr)) {
    Elf64_Nhdr nh;  // Elf32_Nhdr has the same layout
    memcpy(&nh, area.data() + p, sizeof nh);
    uint64_t name = p + sizeof nh;
    uint64_t desc = name + ((uint64_t(nh.n_namesz) + 3) & ~uint64_t(3));
    uint64_t next = desc + ((uint64_t(nh.n_descsz) + 3) & ~uint64_t(3));
    if (desc > end || next > end || desc + nh.n_descsz > end) return false;
    if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(&area[name], "GNU", 4) == 0 &&
        nh.n_descsz > 0) {
      *buildId = toHex(&area[desc], nh.n_descsz);
      return true;
    }
    p = next;
  }
  return false;
}

template <typename Ehdr, typename Phdr, typename Shdr>
bool elfBuildId(const ElfFile& f, std::string* buildId, std::string* error) {
  const std::string& path = f.path;
  Ehdr eh;
  if (!f.readAt(0, &eh)) {
    *error = path + ": truncated ELF header";
    return false;
  }
  buildId->clear();
  // Program headers first: executables and shared libraries keep the note in a PT_NOTE segment,
  // which is also what the shim reads at run time.
  if (eh.e_phoff != 0 && eh.e_phentsize == sizeof(Phdr)) {
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
      Phdr ph;
      if (!f.readAt(eh.e_phoff + uint64_t(i) * sizeof(Phdr), &ph)) {
        *error = path + ": truncated ELF program headers";
        return false;
      }
      if (ph.p_type == PT_NOTE && findBuildIdNote(f, ph.p_offset, ph.p_filesz, buildId))
        return true;
    }
  }
  if (eh.e_shoff != 0 && eh.e_shentsize == sizeof(Shdr)) {
    for (unsigned i = 0; i < eh.e_shnum; ++i) {
      Shdr sh;
      if (!f.readAt(eh.e_shoff + uint64_t(i) * sizeof(Shdr), &sh)) {
        *error = path + ": truncated ELF section headers";
        return false;
      }
      if (sh.sh_type == SHT_NOTE && findBuildIdNote(f, sh.sh_offset, sh.sh_size, buildId))
        return true;
    }
  }
  return true;
}

bool isElf(const ElfFile& f) {
  unsigned char ident[EI_NIDENT];
  return f.read(0, ident, sizeof ident) && memcmp(ident, ELFMAG, SELFMAG) == 0;
}

bool buildIdOfFile(const ElfFile& f, std::string* buildId, std::string* error) {
  unsigned char ident[EI_NIDENT];
  if (!f.read(0, ident, sizeof ident) || memcmp(ident, ELFMAG, SELFMAG) != 0) {
    *error = f.path + " is not an ELF file";
    return false;
  }
  if (ident[EI_DATA] != ELFDATA2LSB) {
    *error = f.path + ": big-endian ELF is not supported";
    return false;
  }
  if (ident[EI_CLASS] == ELFCLASS64)
    return elfBuildId<Elf64_Ehdr, Elf64_Phdr, Elf64_Shdr>(f, buildId, error);
  if (ident[EI_CLASS] == ELFCLASS32)
    return elfBuildId<Elf32_Ehdr, Elf32_Phdr, Elf32_Shdr>(f, buildId, error);
  *error = f.path + ": unknown ELF class";
  return false;
}

/// SHA-256 of the whole file, read in pieces.
bool hashFile(const ElfFile& f, std::string* hex, std::string* error) {
  Sha256 sha;
  std::vector<unsigned char> buf(1 << 20);
  for (uint64_t off = 0; off < f.size();) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), f.size() - off));
    if (!f.read(off, buf.data(), n)) {
      *error = f.path + ": read failed";
      return false;
    }
    sha.update(buf.data(), n);
    off += n;
  }
  *hex = sha.hexDigest();
  return true;
}

int64_t nanoseconds(const struct timespec& t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; }

FileStamp stampOf(const struct stat& st) {
  return FileStamp{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                   static_cast<uint64_t>(st.st_size), nanoseconds(st.st_mtim),
                   nanoseconds(st.st_ctim)};
}

// The hash cache: one file per (device, inode) holding "hetopt-identity 1\n<size> <mtime ns>
// <ctime ns> <sha256>\n". A rewritten file changes its ctime (which no user can set back), a
// replaced one its inode: either misses.
constexpr const char* kCacheMagic = "hetopt-identity 1\n";

std::string cacheFileOf(const std::string& dir, const FileStamp& s) {
  return dir + "/" + std::to_string(s.dev) + "-" + std::to_string(s.inode);
}

bool readCachedHash(const std::string& dir, const FileStamp& s, std::string* hex) {
  std::string file = cacheFileOf(dir, s);
  if (!isSafeToRead(file, nullptr)) return false;
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[256];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  size_t magic = strlen(kCacheMagic);
  if (static_cast<size_t>(n) <= magic || memcmp(buf, kCacheMagic, magic) != 0) return false;
  unsigned long long size = 0;
  long long mtime = 0, ctime = 0;
  char digest[65];
  int end = 0;
  if (sscanf(buf + magic, "%llu %lld %lld %64[0-9a-f]\n%n", &size, &mtime, &ctime, digest, &end) !=
          4 ||
      end == 0 || strlen(digest) != 64 || buf[magic + end] != '\0')
    return false;
  if (size != s.size || mtime != s.mtimeNs || ctime != s.ctimeNs) return false;
  *hex = digest;
  return true;
}

void writeCachedHash(const std::string& dir, const FileStamp& s, const std::string& hex) {
  // A file changed within the last moments may change again within the same timestamp tick
  // without its stamp showing it: not remembered until it has been still for a while.
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  if (nanoseconds(now) - s.ctimeNs < kHashCacheSettleNs ||
      nanoseconds(now) - s.mtimeNs < kHashCacheSettleNs)
    return;
  std::string error;
  if (!makePrivateDirs(dir, &error)) return;  // only a cache: the next run hashes again
  char line[160];
  snprintf(line, sizeof line, "%llu %lld %lld %s\n", static_cast<unsigned long long>(s.size),
           static_cast<long long>(s.mtimeNs), static_cast<long long>(s.ctimeNs), hex.c_str());
  // Written aside and renamed: readers never see half an entry, and the entry is a fresh 0600 file.
  std::string file = cacheFileOf(dir, s), temp = file + ".tmp" + std::to_string(getpid());
  if (!writePrivateFile(temp, std::string(kCacheMagic) + line, &error) ||
      rename(temp.c_str(), file.c_str()) != 0)
    unlink(temp.c_str());
}

/// The file's SHA-256, from the hash cache while its stamp holds (`dir` empty: no cache).
bool cachedContentHash(const ElfFile& f, const FileStamp& stamp, std::string* hex,
                       std::string* error, const std::string& dir) {
  if (!dir.empty() && readCachedHash(dir, stamp, hex)) return true;
  if (!hashFile(f, hex, error)) return false;
  if (!dir.empty()) writeCachedHash(dir, stamp, *hex);
  return true;
}

}  // namespace

Sha256::Sha256()
    : m_h{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
          0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void Sha256::block(const unsigned char* p) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 |
           uint32_t(p[4 * i + 3]);
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = m_h[0], b = m_h[1], c = m_h[2], d = m_h[3], e = m_h[4], f = m_h[5], g = m_h[6],
           h = m_h[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t t1 =
        h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kSha256K[i] + w[i];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  m_h[0] += a;
  m_h[1] += b;
  m_h[2] += c;
  m_h[3] += d;
  m_h[4] += e;
  m_h[5] += f;
  m_h[6] += g;
  m_h[7] += h;
}

void Sha256::update(const void* data, size_t size) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  m_totalBytes += size;
  while (size > 0) {
    if (m_bufLen == 0 && size >= 64) {
      block(p);
      p += 64;
      size -= 64;
      continue;
    }
    size_t take = std::min(size, 64 - m_bufLen);
    memcpy(m_buf + m_bufLen, p, take);
    m_bufLen += take;
    p += take;
    size -= take;
    if (m_bufLen == 64) {
      block(m_buf);
      m_bufLen = 0;
    }
  }
}

std::string Sha256::hexDigest() {
  uint64_t bits = m_totalBytes * 8;
  unsigned char pad = 0x80;
  update(&pad, 1);
  unsigned char zero = 0;
  while (m_bufLen != 56) update(&zero, 1);
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
  update(len, 8);
  unsigned char out[32];
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<unsigned char>(m_h[i] >> (24 - 8 * j));
  return toHex(out, sizeof out);
}

std::string ProgramIdentity::executableKey() const {
  return buildId.empty() ? "sha256:" + contentHash : "build-id:" + buildId;
}

std::string ProgramIdentity::key() const {
  switch (script.kind) {
    case ScriptRef::Kind::None:
      break;
    case ScriptRef::Kind::File:
      return executableKey() + "+script-sha256:" + script.hash;
    case ScriptRef::Kind::Module:
      return executableKey() + "+module:" + script.name;
    case ScriptRef::Kind::Code:
      return executableKey() + "+code-sha256:" + script.hash;
  }
  return executableKey();
}

std::string ProgramIdentity::profilePath() const {
  if (!profileName.empty()) return "@" + profileName;
  switch (script.kind) {
    case ScriptRef::Kind::None:
      break;
    case ScriptRef::Kind::File:
      return script.name;
    case ScriptRef::Kind::Module:
      return path + " -m " + script.name;
    case ScriptRef::Kind::Code:
      return path + " -c " + script.hash.substr(0, 12);
  }
  return path;
}

std::string ProgramIdentity::describe() const {
  switch (script.kind) {
    case ScriptRef::Kind::None:
      break;
    case ScriptRef::Kind::File:
      return path + " running " + script.name;
    case ScriptRef::Kind::Module:
      return path + " -m " + script.name;
    case ScriptRef::Kind::Code:
      return path + " -c <code " + script.hash.substr(0, 12) + ">";
  }
  return path;
}

bool fileStamp(const std::string& path, FileStamp* out) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return false;
  *out = stampOf(st);
  return true;
}

bool readElfBuildId(const std::string& path, std::string* buildId, std::string* error) {
  ElfFile f;
  return f.open(path, error) && buildIdOfFile(f, buildId, error);
}

std::string identityCacheDir() { return cacheDirectory() + "/identity"; }

bool programIdentity(const std::string& path, ProgramIdentity* out, std::string* error,
                     const std::string& hashCacheDir) {
  char resolved[PATH_MAX];
  if (!realpath(path.c_str(), resolved)) {
    *error = path + ": " + strerror(errno);
    return false;
  }
  ElfFile f;
  if (!f.open(resolved, error)) return false;
  *out = ProgramIdentity{};
  out->path = resolved;
  out->stamp = stampOf(f.st);
  std::string ignored;
  if (isElf(f) && buildIdOfFile(f, &out->buildId, &ignored) && !out->buildId.empty()) return true;
  out->buildId.clear();
  // No build id (or not ELF, or an ELF we cannot parse): the bytes themselves identify it.
  return cachedContentHash(f, out->stamp, &out->contentHash, error, hashCacheDir);
}

bool fileContentHash(const std::string& path, std::string* resolvedOut, std::string* hex,
                     std::string* error, const std::string& hashCacheDir) {
  char resolved[PATH_MAX];
  if (!realpath(path.c_str(), resolved)) {
    *error = path + ": " + strerror(errno);
    return false;
  }
  ElfFile f;
  if (!f.open(resolved, error)) return false;
  *resolvedOut = resolved;
  return cachedContentHash(f, stampOf(f.st), hex, error, hashCacheDir);
}

}  // namespace hetopt
