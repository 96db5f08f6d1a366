// SPDX-License-Identifier: MIT
/** @file Linux implementation of os_memory.h (mlock, RLIMIT_MEMLOCK, CAP_IPC_LOCK, /proc). */
#include "policies/os_memory.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace hetopt::os {
namespace {

// Reads "<key>   <n> kB" from a /proc file without allocating (the shim may call this from a
// malloc hook). Returns the value in bytes, 0 when missing.
uint64_t procKiloBytes(const char* file, const char* key) {
  int fd = ::open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[4096];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  size_t keyLen = strlen(key);
  for (char* line = buf; line && *line;) {
    if (strncmp(line, key, keyLen) == 0 && line[keyLen] == ':')
      return strtoull(line + keyLen + 1, nullptr, 10) * 1024;
    line = strchr(line, '\n');
    if (line) ++line;
  }
  return 0;
}

}  // namespace

size_t pageSize() {
  static const size_t page = [] {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<size_t>(p) : size_t{4096};
  }();
  return page;
}

size_t roundUpToPages(size_t bytes) {
  size_t page = pageSize();
  return (bytes + page - 1) / page * page;
}

uint64_t memlockLimit() {
  struct rlimit rl;
  if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) return 0;
  return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(rl.rlim_cur);
}

bool canLockBeyondLimit() {
  // capget without libcap: version 3 uses two 32-bit words; CAP_IPC_LOCK is bit 14 of the first.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective & CAP_TO_MASK(CAP_IPC_LOCK)) != 0;
}

uint64_t lockedBytes() { return procKiloBytes("/proc/self/status", "VmLck"); }

int lockMemory(void* ptr, size_t bytes) { return ::mlock(ptr, bytes) == 0 ? 0 : errno; }

int unlockMemory(void* ptr, size_t bytes) { return ::munlock(ptr, bytes) == 0 ? 0 : errno; }

uint64_t availableHostMemory() { return procKiloBytes("/proc/meminfo", "MemAvailable"); }

}  // namespace hetopt::os
