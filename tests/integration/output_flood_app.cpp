// SPDX-License-Identifier: MIT
/**
 * @file A program that floods stdout before it touches OpenCL (output_flood.sh): it writes
 * `--mib` MiB of text lines while making many heap allocations of varied sizes (some above the
 * shim's tracked size, most below, a share kept alive), then makes its first OpenCL call, which
 * loads the ICD, and moves one malloc'd block to the device and back. The shape of a program that
 * crashed inside the dynamic loader during that first call under `hetopt trace`.
 * stdout: the flood, then "device:" and a checksum; deterministic.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

int main(int argc, char** argv) {
  size_t mib = 200;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!strcmp(argv[i], "--mib")) mib = strtoull(argv[i + 1], nullptr, 10);

  // The flood: lines of ~100 bytes; every 64th line allocates, a quarter of those stay alive.
  std::vector<void*> kept;
  unsigned long long seed = 88172645463325252ull, lines = 0;
  const size_t total = mib << 20;
  size_t written = 0;
  while (written < total) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    int n = printf("line %llu %016llx the quick brown fox jumps over the lazy dog %zu\n", lines++,
                   seed, written);
    APP_CHECK(n > 0);
    written += static_cast<size_t>(n);
    if (lines % 64 != 0) continue;
    // Sizes from 16 B to 1 MiB: many small blocks, some large enough to be tracked sites.
    size_t bytes = size_t(16) << (seed % 17);
    auto* p = static_cast<unsigned char*>(malloc(bytes));
    APP_CHECK(p);
    memset(p, static_cast<int>(lines), bytes < 4096 ? bytes : 4096);
    if (seed % 4 == 0 && kept.size() < 4096)
      kept.push_back(p);
    else
      free(p);
  }
  fflush(stdout);

  const size_t n = (1 << 20) / sizeof(unsigned);
  ClEnv env;  // the first OpenCL call: the loader opens the ICD now
  auto* buf = static_cast<unsigned*>(malloc(n * sizeof(unsigned)));  // hetopt:transfer
  APP_CHECK(buf);
  for (size_t i = 0; i < n; ++i) buf[i] = static_cast<unsigned>(i * 2654435761u);
  cl_mem dev = env.buffer(CL_MEM_READ_WRITE, n * sizeof(unsigned));
  APP_CL(clEnqueueWriteBuffer(env.queue(), dev, CL_TRUE, 0, n * sizeof(unsigned), buf, 0, nullptr,
                              nullptr));
  memset(buf, 0, n * sizeof(unsigned));
  APP_CL(clEnqueueReadBuffer(env.queue(), dev, CL_TRUE, 0, n * sizeof(unsigned), buf, 0, nullptr,
                             nullptr));
  unsigned long long sum = 0;
  for (size_t i = 0; i < n; ++i) sum += buf[i] ^ i;
  printf("result: %llu lines, %zu blocks kept, checksum %llu\n", lines, kept.size(), sum);
  clReleaseMemObject(dev);
  free(buf);
  for (void* p : kept) free(p);
  return 0;
}
