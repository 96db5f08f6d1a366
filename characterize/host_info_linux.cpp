// SPDX-License-Identifier: MIT
/** @file Linux host facts from /proc/cpuinfo and uname(2), and glibc's malloc_trim.
 * What the characterization records about the host, so that a DB names its machine. */
#include <malloc.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <ctime>
#include <fstream>

#include "characterize/host_info.h"

namespace hetopt::characterize {
namespace {

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

std::string hostCpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  // x86 says "model name"; some ARM kernels say "Model" or only "CPU part".
  for (const char* key : {"model name", "Model", "Hardware"}) {
    in.clear();
    in.seekg(0);
    while (std::getline(in, line)) {
      size_t colon = line.find(':');
      if (colon != std::string::npos && trim(line.substr(0, colon)) == key) {
        std::string v = trim(line.substr(colon + 1));
        if (!v.empty()) return v;
      }
    }
  }
  struct utsname u;
  return uname(&u) == 0 ? std::string(u.machine) : std::string("unknown");
}

std::string hostKernelRelease() {
  struct utsname u;
  return uname(&u) == 0 ? std::string(u.release) : std::string("unknown");
}

std::string hostName() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("unknown");
}

std::string utcNowIso() {
  time_t now = time(nullptr);
  struct tm tm;
  gmtime_r(&now, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void returnFreeMemory() { malloc_trim(0); }

}  // namespace hetopt::characterize
