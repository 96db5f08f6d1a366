// SPDX-License-Identifier: MIT
/**
 * @file A transfer-feeding OpenCL program that ends with exit status 3 on success (faults.sh):
 * whatever hetopt meets (bad plan, bad options, no pool), the program's own status must come back,
 * not 0 and not hetopt's 2. One malloc'd 1 MiB block is written to the device and read back into a
 * second one, 5 times; stdout holds the device and a checksum.
 */
#include <cstdio>
#include <cstdlib>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

int main() {
  const size_t n = (1 << 20) / sizeof(unsigned);
  ClEnv env;
  auto* src = static_cast<unsigned*>(malloc(n * sizeof(unsigned)));  // hetopt:transfer
  auto* dst = static_cast<unsigned*>(malloc(n * sizeof(unsigned)));  // hetopt:transfer
  APP_CHECK(src && dst);
  cl_mem dev = env.buffer(CL_MEM_READ_WRITE, n * sizeof(unsigned));
  unsigned long long sum = 0;
  for (unsigned it = 0; it < 5; ++it) {
    for (size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned>(i * 2654435761u + it);
    APP_CL(clEnqueueWriteBuffer(env.queue(), dev, CL_TRUE, 0, n * sizeof(unsigned), src, 0, nullptr,
                                nullptr));
    APP_CL(clEnqueueReadBuffer(env.queue(), dev, CL_TRUE, 0, n * sizeof(unsigned), dst, 0, nullptr,
                               nullptr));
    for (size_t i = 0; i < n; ++i) sum += dst[i] ^ i;
  }
  printf("result: checksum %llu\n", sum);
  clReleaseMemObject(dev);
  free(src);
  free(dst);
  return 3;
}
