// SPDX-License-Identifier: MIT
/**
 * @file Allocation selectivity: hundreds of host-only allocations and exactly three that feed
 * transfers. 200 scratch blocks (4 KiB .. ~size/8 each, about 3x --size in all) feed the host-side
 * part of every iteration, a temporary as large as the transfer buffers is allocated and freed in
 * every iteration, and small records (< 4 KiB) churn on the side. Only `in`, `out` and `params`
 * cross to the device. A scheme that pins by size would pin the scratch and the temporaries; the
 * analysis must select the three transfer sites only. --size is the size of `in` and `out`.
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/apps/app_common.h"

using namespace hetopt::apps;

namespace {

const char* kSource = R"CL(
#pragma OPENCL FP_CONTRACT OFF
__kernel void affine(__global const float* in, __global float* out,
                     __global const float* params, uint n) {
  size_t i = get_global_id(0);
  if (i < n) out[i] = in[i] * params[i % 64] + params[(i + 7) % 64];
}
)CL";

constexpr int kScratchBlocks = 200;
constexpr size_t kParams = 64;

struct ScratchBlock {
  float* data = nullptr;
  size_t len = 0;
  float meanAbs = 0;  ///< host-side summary feeding the kernel parameters
};

/// Sizes vary over 4 KiB .. about n/32 floats so that many blocks are as large as real buffers.
size_t scratchLen(int block, size_t n) {
  return 1024 + static_cast<size_t>(block * 37 % 50) * std::max<size_t>(1, n / 1600);
}

/// Kernel parameters of iteration `it`, derived from the scratch summaries: host work whose result
/// crosses to the device.
void computeParams(const std::vector<ScratchBlock>& scratch, int it, float* params) {
  for (size_t j = 0; j < kParams; ++j) {
    const ScratchBlock& s = scratch[(static_cast<size_t>(it) * kParams + j) % kScratchBlocks];
    params[j] = 0.2f + 0.08f * s.meanAbs;  // meanAbs ~ 5: multipliers ~0.6 keep values bounded
  }
}

/// The scratch block that iteration `it` mixes into its next input.
const ScratchBlock& blockOfIteration(const std::vector<ScratchBlock>& scratch, int it) {
  return scratch[static_cast<size_t>(it) * 37 % kScratchBlocks];
}

/// Next iteration's input from this one's output: 3-point smoothing plus a scratch-block term.
void smoothInto(const float* out, float* next, size_t n, const ScratchBlock& s) {
  for (size_t i = 0; i < n; ++i) {
    float left = out[i == 0 ? 0 : i - 1];
    float right = out[i + 1 == n ? i : i + 1];
    next[i] = (left + 2.0f * out[i] + right) * 0.125f + s.data[i % s.len] * 0.01f;
  }
}

/// A small per-iteration record (< 4 KiB): samples of the output, kept until the end. The
/// `count` samples follow the header in the same allocation.
struct IterRecord {
  IterRecord* next;
  size_t count;
  float* samples() { return reinterpret_cast<float*>(this + 1); }
};

size_t sampleIndex(size_t i, size_t n) { return i * 7919 % n; }

}  // namespace

int main(int argc, char** argv) {
  Options opt = parseOptions(argc, argv, 1 << 20, 10);
  const size_t n = std::max<size_t>(opt.sizeBytes / sizeof(float), 2);
  const size_t bytes = n * sizeof(float);
  ClEnv env;
  double start = nowMs();

  // Host-only scratch, allocated up front like an application's lookup tables and work areas.
  std::vector<ScratchBlock> scratch(kScratchBlocks);  // hetopt:host-only
  for (int b = 0; b < kScratchBlocks; ++b) {
    ScratchBlock& s = scratch[b];
    s.len = scratchLen(b, n);
    s.data = static_cast<float*>(malloc(s.len * sizeof(float)));  // hetopt:host-only
    APP_CHECK(s.data != nullptr);
    fillPattern(s.data, s.len, 100 + b);
    double sum = 0;
    for (size_t i = 0; i < s.len; ++i) sum += s.data[i] < 0 ? -s.data[i] : s.data[i];
    s.meanAbs = static_cast<float>(sum / static_cast<double>(s.len));
  }

  // The three transfer allocations (pinned by hand in the --pinned variant).
  auto pinIn = pinnedIf(opt.pinned, env, bytes);
  auto pinOut = pinnedIf(opt.pinned, env, bytes);
  auto pinParams = pinnedIf(opt.pinned, env, kParams * sizeof(float));
  float* in = pinIn ? pinIn->as<float>() : static_cast<float*>(malloc(bytes));  // hetopt:transfer
  float* out =
      pinOut ? pinOut->as<float>() : static_cast<float*>(malloc(bytes));  // hetopt:transfer
  float* params = pinParams ? pinParams->as<float>() : nullptr;
  if (!params) params = static_cast<float*>(calloc(kParams, sizeof(float)));  // hetopt:transfer
  APP_CHECK(in && out && params);
  fillPattern(in, n, 1);

  // Host reference of the whole computation.
  std::vector<float> refIn(in, in + n);  // hetopt:host-only
  std::vector<float> refOut(n);          // hetopt:host-only
  std::vector<float> refParams(kParams);

  cl_mem dIn = env.buffer(CL_MEM_READ_ONLY, bytes);
  cl_mem dOut = env.buffer(CL_MEM_WRITE_ONLY, bytes);
  cl_mem dParams = env.buffer(CL_MEM_READ_ONLY, kParams * sizeof(float));
  cl_program prog = env.build(kSource);
  cl_kernel k = env.kernel(prog, "affine");
  setKernelArgs(k, dIn, dOut, dParams, static_cast<cl_uint>(n));

  IterRecord* records = nullptr;
  for (int it = 0; it < opt.iters; ++it) {
    computeParams(scratch, it, params);
    APP_CL(clEnqueueWriteBuffer(env.queue(), dParams, CL_FALSE, 0, kParams * sizeof(float), params,
                                0, nullptr, nullptr));
    APP_CL(clEnqueueWriteBuffer(env.queue(), dIn, CL_FALSE, 0, bytes, in, 0, nullptr, nullptr));
    enqueue1D(env.queue(), k, n);
    APP_CL(clEnqueueReadBuffer(env.queue(), dOut, CL_TRUE, 0, bytes, out, 0, nullptr, nullptr));

    // Host side of the iteration, through a temporary as large as the transfer buffers.
    float* next = static_cast<float*>(malloc(bytes));  // hetopt:host-only
    APP_CHECK(next != nullptr);
    smoothInto(out, next, n, blockOfIteration(scratch, it));
    memcpy(in, next, bytes);
    free(next);

    size_t count = 4 + static_cast<size_t>(it) * 29 % 900;  // records of 24 B .. 3.6 KiB
    auto* rec = static_cast<IterRecord*>(malloc(sizeof(IterRecord) + count * sizeof(float)));
    APP_CHECK(rec != nullptr);
    rec->next = records;
    rec->count = count;
    for (size_t i = 0; i < count; ++i) rec->samples()[i] = out[sampleIndex(i, n)];
    records = rec;
  }
  reportElapsed(start);

  std::vector<IterRecord*> byIteration;  // the list is newest first
  for (IterRecord* r = records; r; r = r->next) byIteration.insert(byIteration.begin(), r);
  APP_CHECK(byIteration.size() == static_cast<size_t>(opt.iters));

  // The reference replays the loop on the host, outside the timed part.
  std::vector<float> want;
  for (int it = 0; it < opt.iters; ++it) {
    computeParams(scratch, it, refParams.data());
    for (size_t i = 0; i < n; ++i)
      refOut[i] = refIn[i] * refParams[i % kParams] + refParams[(i + 7) % kParams];
    smoothInto(refOut.data(), refIn.data(), n, blockOfIteration(scratch, it));
    IterRecord* rec = byIteration[it];
    want.resize(rec->count);
    for (size_t i = 0; i < rec->count; ++i) want[i] = refOut[sampleIndex(i, n)];
    APP_CHECK(nearlyEqual(rec->samples(), want.data(), rec->count));
  }
  APP_CHECK(nearlyEqual(out, refOut.data(), n));
  APP_CHECK(nearlyEqual(in, refIn.data(), n));

  uint64_t recordSum = 0;
  for (IterRecord* rec : byIteration) {
    recordSum = recordSum * 31 + checksum(rec->samples(), rec->count * sizeof(float));
    free(rec);
  }
  const int numRecords = opt.iters;
  printResult("out", n, out, bytes);
  printResult("next_in", n, in, bytes);
  printf("result: records=%d checksum=%016llx\n", numRecords,
         static_cast<unsigned long long>(recordSum));

  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseMemObject(dIn);
  clReleaseMemObject(dOut);
  clReleaseMemObject(dParams);
  for (ScratchBlock& s : scratch) free(s.data);
  if (!opt.pinned) {
    free(in);
    free(out);
    free(params);
  }
  return 0;
}
