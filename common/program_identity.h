// SPDX-License-Identifier: MIT
/**
 * @file Which program a profile belongs to: its path plus the ELF build id, or a SHA-256 of the
 * file where it has none. `hetopt trace` stores a profile under it and `hetopt run` looks it up
 * the same way, so a rebuilt binary (new build id or new content) never silently gets the old
 * binary's profile. An interpreter's process adds what it runs (ScriptRef: the script file's
 * content, a module name, code given on the command line), so every Python script has its own
 * profile. No LLVM: the run phase and the shim compute it.
 */
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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

/// What an interpreter process runs (common/command_identity.cpp decides which processes are
/// interpreters): a script file, a module (`python -m`), or code given on the command line.
struct ScriptRef {
  enum class Kind : uint8_t { None = 0, File = 1, Module = 2, Code = 3 };
  Kind kind = Kind::None;
  std::string name;  ///< File: absolute path, symlinks resolved; Module: its name; Code: empty
  std::string hash;  ///< File: hex SHA-256 of its content; Code: of the code string; Module: empty
  bool operator==(const ScriptRef&) const = default;
};

struct ProgramIdentity {
  std::string path;         ///< the executable: absolute, symlinks resolved
  std::string buildId;      ///< hex of NT_GNU_BUILD_ID; empty when the file has none
  std::string contentHash;  ///< hex SHA-256 of the file; only computed when there is no build id
  FileStamp stamp;          ///< of the executable identified
  ScriptRef script;         ///< what the executable runs, when it is an interpreter
  /// `--profile NAME`: the profile is stored and looked up under this name, not profilePath().
  std::string profileName;
  /// "build-id:<hex>" or "sha256:<hex>" of the executable, then for an interpreter
  /// "+script-sha256:<hex>", "+module:<name>" or "+code-sha256:<hex>": what must match for a
  /// profile to apply. Never holds a blank.
  std::string key() const;
  std::string executableKey() const;  ///< key() without the script part
  /// Where the DB keeps the profile: "@<profileName>"; else the script's path, "<exe> -m
  /// <module>", "<exe> -c <first 12 hex of the code's hash>", or the executable's path. A changed
  /// script (same path, other key) is stale rather than unknown.
  std::string profilePath() const;
  /// For people: the executable's path, and " running <script>" (or " -m <module>", " -c <code>").
  std::string describe() const;
};

/// Identity of the file at `path` (resolved to an absolute path). False with *error when it cannot
/// be read. Non-ELF files (scripts) are identified by content hash. Only the ELF headers and notes
/// are read when there is a build id. With `hashCacheDir`, a content hash is remembered there by
/// the file's stamp and not computed again while the stamp holds (hashing is ~7 ms per MiB on
/// a 2.6 GHz core, and `hetopt run` and the shim each identify the program on every run).
bool programIdentity(const std::string& path, ProgramIdentity* out, std::string* error,
                     const std::string& hashCacheDir = {});

/// SHA-256 of the file at `path` (symlinks followed, *resolved gets the absolute path), through the
/// hash cache like programIdentity(): scripts are hashed once while their stamp holds.
bool fileContentHash(const std::string& path, std::string* resolved, std::string* hex,
                     std::string* error, const std::string& hashCacheDir = {});

/// The script (or module, or code) that the process running `exePath` with `argv` (its own
/// command line, as the kernel passed it: a `#!` script's interpreter comes first) executes;
/// Kind::None when it is no interpreter. A process is an interpreter when its executable is one of
/// a few known ones (python, perl, ruby, node, the shells, ...: their options that take a value
/// are skipped) and its first operand names an existing file that is not ELF, or when that file
/// starts with "#!" (the kernel ran it through this executable). A file's hash is computed here
/// (through the hash cache); relative paths are resolved against the current directory.
bool scriptOfProcess(const std::string& exePath, const std::vector<std::string>& argv,
                     ScriptRef* out, std::string* error, const std::string& hashCacheDir = {});

/// The identity of the process `argv` starts (what `hetopt trace` and `hetopt run` are given):
/// argv[0] found on PATH; a file starting with "#!" is run by its interpreter (`/usr/bin/env
/// NAME` finds NAME on PATH), and identified as that interpreter running it.
bool commandIdentity(const std::vector<std::string>& argv, ProgramIdentity* out, std::string* error,
                     const std::string& hashCacheDir = {});

/// Splits a NUL-separated command line (/proc/self/cmdline, the trace header's arguments).
std::vector<std::string> splitCommandLine(const std::string& nulSeparated);

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
