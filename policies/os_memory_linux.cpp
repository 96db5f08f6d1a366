// SPDX-License-Identifier: MIT
/** @file Linux implementation of os_memory.h (mlock, RLIMIT_MEMLOCK, CAP_IPC_LOCK, /proc).
 * Page and lock limits, /proc/self/status and smaps (fork inheritance), private mappings. */
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "policies/os_memory.h"

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

namespace {

// "lo-hi perms ..." (a mapping's first line in smaps), else false.
bool mappingHeader(const char* line, uintptr_t* lo, uintptr_t* hi, char* perms) {
  char* end = nullptr;
  *lo = strtoull(line, &end, 16);
  if (end == line || *end != '-') return false;
  const char* h = end + 1;
  *hi = strtoull(h, &end, 16);
  if (end == h || *end != ' ') return false;
  memcpy(perms, end + 1, 4);
  return true;
}

// Whether the VmFlags line holds the two-letter flag `f`.
bool hasFlag(const char* vmFlags, const char* f) {
  for (const char* p = vmFlags; (p = strstr(p, f)) != nullptr; p += 2)
    if (p[-1] == ' ' && (p[2] == ' ' || p[2] == '\0' || p[2] == '\n')) return true;
  return false;
}

}  // namespace

ForkInheritance forkInheritance(const void* addr) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  int fd = ::open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ForkInheritance::Unknown;
  // Line by line through a fixed buffer: smaps of a large process runs to megabytes.
  char buf[8192];
  size_t have = 0;
  bool inside = false, shared = false;
  ForkInheritance result = ForkInheritance::Unknown;
  for (bool done = false; !done;) {
    ssize_t n = ::read(fd, buf + have, sizeof buf - 1 - have);
    if (n <= 0) break;
    have += static_cast<size_t>(n);
    buf[have] = '\0';
    char* line = buf;
    for (char* nl; (nl = strchr(line, '\n')) != nullptr; line = nl + 1) {
      *nl = '\0';
      uintptr_t lo, hi;
      char perms[4];
      if (mappingHeader(line, &lo, &hi, perms)) {
        inside = a >= lo && a < hi;
        shared = perms[3] == 's';
      } else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
        result = hasFlag(line, "dc") ? ForkInheritance::NotInherited  // MADV_DONTFORK
                 : shared            ? ForkInheritance::Shared
                                     : ForkInheritance::Copied;
        done = true;
        break;
      }
    }
    have = strlen(line);                   // the unfinished line moves to the front
    if (have == sizeof buf - 1) have = 0;  // a line longer than the buffer: skipped
    memmove(buf, line, have);
  }
  ::close(fd);
  return result;
}

const char* forkInheritanceName(ForkInheritance f) {
  switch (f) {
    case ForkInheritance::Copied:
      return "copied";
    case ForkInheritance::Shared:
      return "shared";
    case ForkInheritance::NotInherited:
      return "not inherited";
    case ForkInheritance::Unknown:
      break;
  }
  return "unknown";
}

void* mapPrivate(size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

bool moveMapping(void* from, size_t bytes, void* to) {
  return ::mremap(from, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED, to) != MAP_FAILED;
}

void unmap(void* ptr, size_t bytes) { ::munmap(ptr, bytes); }

}  // namespace hetopt::os
