// SPDX-License-Identifier: MIT
/** @file Where hetopt keeps its files, and the permission rules for them (0600 files, 0700 dirs).
 */
#pragma once
#include <cstddef>
#include <string>

namespace hetopt {

/// $HETOPT_DB, else $XDG_DATA_HOME/hetopt/hetopt.db, else ~/.local/share/hetopt/hetopt.db.
std::string defaultDbPath();

/// $XDG_CACHE_HOME/hetopt, else ~/.cache/hetopt (else /tmp/.cache/hetopt without a home): plans
/// and the program identity cache.
std::string cacheDirectory();

/// mkdir -p with mode 0700 for every created component; the last one, when it existed, must pass
/// isPrivateDir(). False with *error on failure.
bool makePrivateDirs(const std::string& dir, std::string* error);

/// Refuses files that others can write (group/world-writable file or parent dir without sticky
/// bit), that another user owns, or that are symbolic links: such a file could steer what hetopt
/// does (or what the shim does inside a process).
bool isSafeToRead(const std::string& path, std::string* error);

/// A directory whose files only this user (or root) can replace: owned by this user or root, and
/// not writable by group or others unless sticky (as /tmp).
bool isPrivateDir(const std::string& dir, std::string* error);

/// Creates or truncates `path` with mode 0600 and writes `content` (EINTR-safe), refusing a
/// symbolic link or another user's file at `path` (openPrivateFile). False with a one-line *error
/// naming the path.
bool writePrivateFile(const std::string& path, const std::string& content, std::string* error);

/// Reads a file of hetopt's own that steers what it does (a plan, a run record) into *text:
/// refuses symbolic links, files others can write or own, files in a directory others can write
/// (isPrivateDir) and files over `maxBytes` ("too large for <what>"). False with *error.
bool readOwnFile(const std::string& path, size_t maxBytes, const char* what, std::string* text,
                 std::string* error);

/// The first executable `name` in $PATH (an empty entry is the current directory, as for
/// execvp); empty when there is none.
std::string findOnPath(const std::string& name);

/// hetopt's own library `fileName` (libhetopt_shim.so, libhetopt_symbolize.so), found from the
/// running executable: ../lib/hetopt/ (an installed tree) or ../lib/ (the build tree). Empty with
/// *error, which says where it looked, when it is missing.
std::string installedLibrary(const std::string& fileName, std::string* error);

/// Directory part of a path ("." when none).
std::string dirName(const std::string& path);
/// Last path component.
std::string baseName(const std::string& path);

}  // namespace hetopt
