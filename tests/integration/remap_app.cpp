// SPDX-License-Identifier: MIT
/**
 * @file Anonymous mappings that come and go while they cross to the device (register_inplace.sh):
 * what in-place registration must survive. Each step fills the host memory with a new pattern,
 * writes it to a device buffer, clears the host memory, reads the buffer back into it and checks
 * every word, so a transfer that used stale (still pinned, already given back) pages shows:
 *   1. a 4 MiB mapping, then munmap;
 *   2. a new mapping at the same address (asked for with a hint), then munmap;
 *   3. a mapping grown by mremap (it may move), then its new range crosses again;
 *   4. madvise(MADV_DONTNEED) on it (fresh zero pages), then it crosses again;
 *   5. a MAP_FIXED mapping replacing it in place, then it crosses again;
 *   6. a 1 MiB part of a mapping larger than the device's largest buffer (MAP_NORESERVE: nothing
 *      is touched but that part), which hetopt must not register: the spec forbids such a
 *      buffer, and NVIDIA's driver accepts it and pins (faults in) all of it.
 * stdout: the device line, one checksum per step and whether step 2 got the same address.
 */
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

namespace {

// Fills, writes, clears, reads back and checks `bytes` at `host`; prints the checksum.
void roundTrip(const ClEnv& env, cl_mem dev, void* host, size_t bytes, uint32_t seed,
               const char* label) {
  auto* words = static_cast<uint32_t*>(host);
  const size_t n = bytes / sizeof(uint32_t);
  for (size_t i = 0; i < n; ++i) words[i] = static_cast<uint32_t>(i * 2654435761u) ^ seed;
  APP_CL(clEnqueueWriteBuffer(env.queue(), dev, CL_TRUE, 0, bytes, host, 0, nullptr, nullptr));
  memset(host, 0, bytes);
  APP_CL(clEnqueueReadBuffer(env.queue(), dev, CL_TRUE, 0, bytes, host, 0, nullptr, nullptr));
  for (size_t i = 0; i < n; ++i) {
    if (words[i] != (static_cast<uint32_t>(i * 2654435761u) ^ seed)) {
      fprintf(stderr, "%s: word %zu is %08x\n", label, i, words[i]);
      exit(1);
    }
  }
  printResult(label, n, host, bytes);
}

void* mapAnonymous(void* hint, size_t bytes, int extraFlags = 0) {
  void* p =
      mmap(hint, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | extraFlags, -1, 0);
  APP_CHECK(p != MAP_FAILED);
  return p;
}

}  // namespace

int main() {
  constexpr size_t kBytes = size_t{4} << 20;
  ClEnv env;
  cl_mem dev = env.buffer(CL_MEM_READ_WRITE, 2 * kBytes);

  void* a = mapAnonymous(nullptr, kBytes);
  roundTrip(env, dev, a, kBytes, 1, "first_mapping");
  APP_CHECK(munmap(a, kBytes) == 0);

  void* b = mapAnonymous(a, kBytes);
  printf("result: same_address %d\n", b == a);
  roundTrip(env, dev, b, kBytes, 2, "same_address_again");

  void* c = mremap(b, kBytes, 2 * kBytes, MREMAP_MAYMOVE);
  APP_CHECK(c != MAP_FAILED);
  roundTrip(env, dev, c, 2 * kBytes, 3, "grown_by_mremap");

  APP_CHECK(madvise(c, 2 * kBytes, MADV_DONTNEED) == 0);
  roundTrip(env, dev, c, 2 * kBytes, 4, "after_madvise_dontneed");

  void* d = mapAnonymous(c, 2 * kBytes, MAP_FIXED);
  APP_CHECK(d == c);
  roundTrip(env, dev, d, 2 * kBytes, 5, "replaced_by_map_fixed");
  APP_CHECK(munmap(d, 2 * kBytes) == 0);

  cl_ulong maxAlloc = 0;
  APP_CL(clGetDeviceInfo(env.device(), CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof maxAlloc, &maxAlloc,
                         nullptr));
  const size_t hugeBytes = static_cast<size_t>(maxAlloc) * 2 + kBytes;
  void* huge = mapAnonymous(nullptr, hugeBytes, MAP_NORESERVE);
  roundTrip(env, dev, static_cast<char*>(huge) + kBytes, kBytes / 4, 6, "part_of_a_huge_mapping");
  APP_CHECK(munmap(huge, hugeBytes) == 0);

  clReleaseMemObject(dev);
  return 0;
}
