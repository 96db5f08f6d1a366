// SPDX-License-Identifier: MIT
/**
 * @file calloc and realloc feeding transfers. A calloc'd accumulator (its zeros are the initial
 * state the device starts from) is written once and read back after every step; a data buffer
 * grows by realloc in --iters steps up to --size bytes: each step grows it, fills only the new
 * tail, writes the whole buffer to a device buffer of the new size and adds per-bin sums of it to
 * the accumulator on the device. Integer arithmetic, so results are compared exactly. The host
 * keeps per-bin sums of what it wrote, so a grown buffer that lost its old contents (a broken
 * realloc, a pool that does not copy) is caught, and so is a calloc that is not zeroed.
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

namespace {

const char* kSource = R"CL(
__kernel void addBinSums(__global const int* data, uint n, __global long* acc, uint bins) {
  uint j = get_global_id(0);
  if (j >= bins) return;
  long s = 0;
  for (uint i = j; i < n; i += bins) s += data[i];  // neighbours read neighbours: coalesced
  acc[j] += s;
}
)CL";

/// The --pinned variant of realloc: a larger hand-pinned block, the old contents copied over.
std::unique_ptr<PinnedHostMemory> growPinned(const ClEnv& env,
                                             std::unique_ptr<PinnedHostMemory> old,
                                             size_t newBytes) {
  auto grown = std::make_unique<PinnedHostMemory>(env, newBytes);
  if (old) memcpy(grown->data(), old->data(), std::min(old->size(), newBytes));
  return grown;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parseOptions(argc, argv, 1 << 20, 5);
  const size_t maxN = std::max<size_t>(opt.sizeBytes / sizeof(int32_t), opt.iters);
  const size_t bins = std::min<size_t>(4096, maxN);
  const size_t accBytes = bins * sizeof(int64_t);
  ClEnv env;
  double start = nowMs();

  std::unique_ptr<PinnedHostMemory> pinAcc;
  int64_t* acc = nullptr;
  if (opt.pinned) {
    pinAcc = std::make_unique<PinnedHostMemory>(env, accBytes);
    memset(pinAcc->data(), 0, accBytes);
    acc = pinAcc->as<int64_t>();
  } else {
    acc = static_cast<int64_t*>(calloc(bins, sizeof(int64_t)));  // hetopt:transfer
  }
  APP_CHECK(acc != nullptr);
  std::vector<int64_t> hostBins(bins, 0);   // hetopt:host-only
  std::vector<int64_t> expectAcc(bins, 0);  // hetopt:host-only

  cl_mem dAcc = env.buffer(CL_MEM_READ_WRITE, accBytes);
  APP_CL(clEnqueueWriteBuffer(env.queue(), dAcc, CL_TRUE, 0, accBytes, acc, 0, nullptr, nullptr));
  cl_program prog = env.build(kSource);
  cl_kernel k = env.kernel(prog, "addBinSums");

  std::unique_ptr<PinnedHostMemory> pinData;
  int32_t* data = nullptr;
  size_t n = 0;
  for (int step = 1; step <= opt.iters; ++step) {
    const size_t newN = maxN * static_cast<size_t>(step) / static_cast<size_t>(opt.iters);
    const size_t newBytes = newN * sizeof(int32_t);
    if (opt.pinned) {
      pinData = growPinned(env, std::move(pinData), newBytes);
      data = pinData->as<int32_t>();
    } else {
      void* grown = realloc(data, newBytes);  // hetopt:transfer
      APP_CHECK(grown != nullptr);
      data = static_cast<int32_t*>(grown);
    }
    fillPattern(data + n, newN - n, 40 + step);
    for (size_t i = n; i < newN; ++i) hostBins[i % bins] += data[i];
    n = newN;

    // The device buffer grows with the host buffer, as an application's would.
    cl_mem dData = env.buffer(CL_MEM_READ_ONLY, newBytes);
    APP_CL(
        clEnqueueWriteBuffer(env.queue(), dData, CL_FALSE, 0, newBytes, data, 0, nullptr, nullptr));
    setKernelArgs(k, dData, static_cast<cl_uint>(n), dAcc, static_cast<cl_uint>(bins));
    enqueue1D(env.queue(), k, bins);
    APP_CL(clEnqueueReadBuffer(env.queue(), dAcc, CL_TRUE, 0, accBytes, acc, 0, nullptr, nullptr));
    APP_CL(clReleaseMemObject(dData));

    for (size_t j = 0; j < bins; ++j) expectAcc[j] += hostBins[j];
    APP_CHECK(std::equal(acc, acc + bins, expectAcc.begin()));
  }
  reportElapsed(start);

  printResult("acc", bins, acc, accBytes);
  printResult("data", n, data, n * sizeof(int32_t));

  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseMemObject(dAcc);
  if (!opt.pinned) {
    free(acc);
    free(data);
  }
  return 0;
}
