// SPDX-License-Identifier: MIT
/**
 * @file Which program a profile belongs to: its path plus the ELF build id, or a SHA-256 of the
 * file where it has none. `hetopt trace` stores a profile under it and `hetopt run` looks it up
 * the same way, so a rebuilt binary (new build id or new content) never silently gets the old
 * binary's profile. Tools only, no LLVM: the run phase computes it on machines without LLVM.
 */
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace hetopt {

/// What says a file is unchanged since it was last looked at (its content hash is remembered by
/// it): the same device and inode, size, modification and status-change times.
struct FileStamp {
  uint64_t dev = 0, inode = 0, size = 0;
  int64_t mtimeNs = 0, ctimeNs = 0;
  bool operator==(const FileStamp&) const = default;
};

/// The stamp of the file at `path` (symlinks followed); false when it cannot be stat()ed.
bool fileStamp(const std::string& path, FileStamp* out);

/// A file is remembered in the hash cache only once it has not changed for this long: within one
/// timestamp tick a rewrite need not show in its stamp.
inline constexpr int64_t kHashCacheSettleNs = 1000000000;

struct ProgramIdentity {
  std::string path;         ///< absolute, symlinks resolved
  std::string buildId;      ///< hex of NT_GNU_BUILD_ID; empty when the file has none
  std::string contentHash;  ///< hex SHA-256 of the file; only computed when there is no build id
  FileStamp stamp;          ///< of the file identified
  /// "build-id:<hex>" or "sha256:<hex>": what must match for a profile to apply.
  std::string key() const;
};

/// Identity of the file at `path` (resolved to an absolute path). False with *error when it cannot
/// be read. Non-ELF files (scripts) are identified by content hash. Only the ELF headers and notes
/// are read when there is a build id. With `hashCacheDir`, a content hash is remembered there by
/// the file's stamp and not computed again while the stamp holds (hashing is ~7 ms per MiB on
/// a 2.6 GHz core, and `hetopt run` and the shim each identify the program on every run).
bool programIdentity(const std::string& path, ProgramIdentity* out, std::string* error,
                     const std::string& hashCacheDir = {});

/// The hash cache of `hetopt run` and the shim: cacheDirectory()/identity.
std::string identityCacheDir();

/// Reads the GNU build id of an ELF file. Returns false with *error when the file cannot be read
/// or is not a well-formed ELF file; true with an empty *buildId when it has no build-id note.
bool readElfBuildId(const std::string& path, std::string* buildId, std::string* error);

/// Incremental SHA-256 (FIPS 180-4), enough for file identity; no dependency on a crypto library.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  /// Lower-case hex digest; the object must not be updated afterwards.
  std::string hexDigest();

 private:
  void block(const unsigned char* p);
  uint32_t m_h[8];
  unsigned char m_buf[64];
  size_t m_bufLen = 0;
  uint64_t m_totalBytes = 0;
};

}  // namespace hetopt
