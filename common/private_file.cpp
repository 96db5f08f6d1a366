// SPDX-License-Identifier: MIT
/** @file Safe creation of hetopt's output files; see private_file.h.
 * No symbolic link followed, another user's file refused, new files 0600: libc only. */
#include "common/private_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hetopt {

namespace {

int openChecked(const char* path, int access, bool truncate, const char** why) {
  // No O_TRUNC yet: a file that turns out not to be ours must be left as it was.
  int fd = ::open(path, access | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  if (fd < 0) {
    *why = errno == ELOOP ? "is a symbolic link; refusing to write through it" : strerror(errno);
    return -1;
  }
  struct stat st;
  int err = 0;
  if (fstat(fd, &st) != 0) {
    err = errno;
    *why = strerror(err);
  } else if (S_ISCHR(st.st_mode)) {
    // A device such as /dev/null: nothing to redirect.
  } else if (!S_ISREG(st.st_mode)) {
    err = EINVAL;
    *why = "is not a regular file; refusing to write to it";
  } else if (st.st_uid != geteuid()) {
    err = EPERM;
    *why = "belongs to another user; refusing to write to it";
  } else if (st.st_nlink > 1) {
    err = EPERM;
    *why = "has other hard links; refusing to write to it";
  } else if ((truncate && ftruncate(fd, 0) != 0) ||
             ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) != 0)) {
    err = errno;
    *why = strerror(err);
  }
  if (err == 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    err = errno;
    *why = strerror(err);
  }
  if (err != 0) {
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

}  // namespace

int openPrivateFile(const char* path, bool truncate, bool append, const char** why) {
  return openChecked(path, O_WRONLY | (append ? O_APPEND : 0), truncate, why);
}

int openPrivateFileReadWrite(const char* path, const char** why) {
  return openChecked(path, O_RDWR, false, why);
}

}  // namespace hetopt
