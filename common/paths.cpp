// SPDX-License-Identifier: MIT
/** @file Paths and permission checks.
 * Default DB and cache places, private directories and files, safe reads, installed libraries. */
#include "common/paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "common/options.h"
#include "common/private_file.h"

namespace hetopt {

std::string defaultDbPath() {
  const char* db = getenv(optionInfo(Option::DB).envName);
  if (db && *db) return db;
  const char* xdg = getenv("XDG_DATA_HOME");
  if (xdg && *xdg == '/') return std::string(xdg) + "/hetopt/hetopt.db";
  const char* home = getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.local/share/hetopt/hetopt.db";
}

std::string cacheDirectory() {
  const char* cache = getenv("XDG_CACHE_HOME");
  const char* home = getenv("HOME");
  std::string base =
      cache && *cache == '/' ? cache : std::string(home && *home ? home : "/tmp") + "/.cache";
  return base + "/hetopt";
}

bool makePrivateDirs(const std::string& dir, std::string* error) {
  if (dir.empty()) return true;
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      if (error) *error = "cannot create directory " + partial + ": " + strerror(errno);
      return false;
    }
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    if (error) *error = dir + " is not a directory";
    return false;
  }
  return isPrivateDir(dir, error);
}

bool isSafeToRead(const std::string& path, std::string* error) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (error) *error = path + ": " + strerror(errno);
    return false;
  }
  if (S_ISLNK(st.st_mode)) {
    if (error) *error = path + " is a symbolic link; refusing to use it (name the file itself)";
    return false;
  }
  if (st.st_uid != getuid() && st.st_uid != 0) {
    if (error) *error = path + " is owned by another user; refusing to use it";
    return false;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    if (error) *error = path + " is writable by others; refusing to use it (chmod 600 it)";
    return false;
  }
  return isPrivateDir(dirName(path), error);
}

bool isPrivateDir(const std::string& dir, std::string* error) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    if (error) *error = dir + ": " + strerror(errno);
    return false;
  }
  // Whoever may write the directory may replace the files in it (unless it is sticky, as /tmp).
  if (st.st_uid != getuid() && st.st_uid != 0) {
    if (error)
      *error = "directory " + dir + " belongs to another user; refusing to use files in it";
    return false;
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
    if (error)
      *error =
          "directory " + dir + " is writable by others; refusing to use files in it (chmod 700 it)";
    return false;
  }
  return true;
}

bool writePrivateFile(const std::string& path, const std::string& content, std::string* error) {
  const char* why = nullptr;
  int fd = openPrivateFile(path.c_str(), true, false, &why);
  if (fd < 0) {
    *error = "cannot write " + path + ": " + why;
    return false;
  }
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = "cannot write " + path + ": " + strerror(errno);
      ::close(fd);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    *error = "cannot write " + path + ": " + strerror(errno);
    return false;
  }
  return true;
}

std::string findOnPath(const std::string& name) {
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return {};
}

std::string installedLibrary(const std::string& fileName, std::string* error) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    *error = "cannot find the running executable (/proc/self/exe)";
    return {};
  }
  exe[n] = '\0';
  // Only beside the executable, never at a path fixed when it was built: a moved or copied tree
  // works, and a shim of another version is never picked up.
  const std::string prefix = dirName(dirName(exe));
  for (const char* dir : {"/lib/hetopt/", "/lib/"}) {
    const std::string candidate = prefix + dir + fileName;
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0) return candidate;
  }
  *error =
      fileName + " is in neither " + prefix + "/lib/hetopt nor " + prefix + "/lib: " + exe +
      " finds its libraries in the lib/ beside its bin/; copy or move the whole installed tree "
      "(cmake --install), not bin/hetopt alone";
  return {};
}

std::string dirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool readOwnFile(const std::string& path, size_t maxBytes, const char* what, std::string* text,
                 std::string* error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    *error = path + (errno == ELOOP ? " is a symbolic link; refusing it"
                                    : ": " + std::string(strerror(errno)));
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & (S_IWGRP | S_IWOTH)) ||
      (st.st_uid != getuid() && st.st_uid != 0)) {
    close(fd);
    *error =
        path +
        " is not a regular file, is writable by others or is owned by another user; refusing it";
    return false;
  }
  if (!isPrivateDir(dirName(path), error)) {
    close(fd);
    return false;
  }
  text->clear();
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) {
    text->append(buf, n);
    if (text->size() > maxBytes) break;
  }
  close(fd);
  if (text->size() > maxBytes) {
    *error = path + ": too large for " + what;
    return false;
  }
  return true;
}

}  // namespace hetopt
