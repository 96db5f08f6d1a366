// SPDX-License-Identifier: MIT
/** @file The device-timing sampler's key: which enqueues share one census and sampling stream. */
#include "shim/core/device_timing.h"

#include <gtest/gtest.h>

#include <initializer_list>

namespace hetopt::shim {
namespace {

uint64_t keyOf(api::ApiId id, std::initializer_list<uint64_t> values) {
  uint64_t args[16] = {};
  unsigned n = 0;
  for (uint64_t v : values) args[n++] = v;
  CallRecord c{id, n, args};
  return DeviceTiming::sampleKey(c);
}

// clEnqueueWriteBuffer(queue, buffer, blocking, offset, size, ptr, nwait, waitlist, event)
uint64_t write(uint64_t buffer, uint64_t size, uint64_t host = 0x7000) {
  return keyOf(api::ApiId::clEnqueueWriteBuffer, {0x1000, buffer, 1, 0, size, host, 0, 0, 0});
}

// A bus benchmark's copies from one call site span 1 KiB to 512 MiB: each size class gets its own
// census, or one sampled large copy stands for a hundred small ones.
TEST(DeviceTimingSampleKey, TransfersOfDifferentSizeClassesAreSampledApart) {
  EXPECT_NE(write(0x2000, 1 << 10), write(0x2000, 512u << 20));
  EXPECT_NE(write(0x2000, 1 << 20), write(0x2000, 4 << 20));
  // Within a factor of 4: one stream (a loop whose size drifts a little stays sampled).
  EXPECT_EQ(write(0x2000, 4096), write(0x2000, 5000));
}

TEST(DeviceTimingSampleKey, KeyedByObjectsNotByHostMemory) {
  EXPECT_EQ(write(0x2000, 4096, 0x7000), write(0x2000, 4096, 0x9000));
  EXPECT_NE(write(0x2000, 4096), write(0x3000, 4096));
  // Reads and writes of one buffer are separate calls, separate keys.
  EXPECT_NE(write(0x2000, 4096),
            keyOf(api::ApiId::clEnqueueReadBuffer, {0x1000, 0x2000, 1, 0, 4096, 0x7000, 0, 0, 0}));
}

}  // namespace
}  // namespace hetopt::shim
