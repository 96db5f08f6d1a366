// SPDX-License-Identifier: MIT
/**
 * @file Sizes and durations as printed (every variant hetopt's texts use) and as typed on the
 * command line; the buffer forms allocate nothing, so the shim may call them in its malloc path.
 */
#include "common/units.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

// Counts this thread's malloc calls, glibc's own included (they go through the public symbol).
// Not under a sanitizer: its runtime owns malloc there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HETOPT_COUNT_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HETOPT_COUNT_MALLOC 0
#endif
#endif
#ifndef HETOPT_COUNT_MALLOC
#define HETOPT_COUNT_MALLOC 1
namespace {
thread_local int t_mallocs = 0;
}
extern "C" void* __libc_malloc(size_t n);
extern "C" void* malloc(size_t n) {
  ++t_mallocs;
  return __libc_malloc(n);
}
#endif

namespace hetopt {
namespace {

TEST(Units, BytesShort) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(17), "17 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(1024), "1 KiB");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes(256 << 10), "256 KiB");
  EXPECT_EQ(formatBytes(3 << 19), "1.5 MiB");
  EXPECT_EQ(formatBytes(768ull << 20), "768 MiB");
  EXPECT_EQ(formatBytes(64ull << 30), "64 GiB");
  EXPECT_EQ(formatBytes(3ull << 40), "3 TiB");
  EXPECT_EQ(formatBytes(UINT64_MAX), "16777216.0 TiB");
  // No ".0" only when whole: "1.0 MiB" says it was rounded. Rounding up to the next unit takes
  // that unit.
  EXPECT_EQ(formatBytes((1 << 20) + 4096), "1.0 MiB");
  EXPECT_EQ(formatBytes(2 * 1048576 - 40000), "2.0 MiB");
  EXPECT_EQ(formatBytes(1048575), "1.0 MiB");
  EXPECT_EQ(formatBytes(1363149), "1.3 MiB");
}

TEST(Units, BytesDetailed) {
  EXPECT_EQ(formatBytes(988, ByteUnit::Auto, Detail::Detailed), "988 B");
  EXPECT_EQ(formatBytes(4096, ByteUnit::Auto, Detail::Detailed), "4.0 KiB");
  EXPECT_EQ(formatBytes(123000, ByteUnit::Auto, Detail::Detailed), "120.1 KiB");
  EXPECT_EQ(formatBytes(1 << 20, ByteUnit::Auto, Detail::Detailed), "1.00 MiB");
  EXPECT_EQ(formatBytes(3ull << 29, ByteUnit::Auto, Detail::Detailed), "1.50 GiB");
}

TEST(Units, BytesFixedUnit) {
  EXPECT_EQ(formatBytes(0, ByteUnit::MiB), "0.0 MiB");
  EXPECT_EQ(formatBytes(100 << 10, ByteUnit::MiB), "0.1 MiB");
  EXPECT_EQ(formatBytes(4 << 20, ByteUnit::MiB), "4.0 MiB");
  EXPECT_EQ(formatBytes(3ull << 30, ByteUnit::MiB), "3072.0 MiB");
  EXPECT_EQ(formatBytes(64 << 10, ByteUnit::KiB), "64.0 KiB");
  EXPECT_EQ(formatBytes(16700000000ull, ByteUnit::GiB), "15.6 GiB");
}

TEST(Units, DurationsShort) {
  EXPECT_EQ(formatDuration(0), "0 ns");
  EXPECT_EQ(formatDuration(850), "850 ns");
  EXPECT_EQ(formatDuration(12.34e3), "12.3 us");
  EXPECT_EQ(formatDuration(12000), "12.0 us");
  EXPECT_EQ(formatDuration(3.4e6), "3.40 ms");
  EXPECT_EQ(formatDuration(1.5e9), "1.50 s");
  EXPECT_EQ(formatDuration(-3.4e6), "-3.40 ms");
  EXPECT_EQ(formatDuration(HUGE_VAL), "inf");
  EXPECT_EQ(formatDuration(NAN), "inf");
  // Rounding up to the next unit takes that unit.
  EXPECT_EQ(formatDuration(999.7), "1.0 us");
  EXPECT_EQ(formatDuration(999996), "1.00 ms");
}

TEST(Units, DurationsDetailedAndFixed) {
  EXPECT_EQ(formatDuration(2.204e9, TimeUnit::Auto, Detail::Detailed), "2.204 s");
  EXPECT_EQ(formatDuration(67.27e6, TimeUnit::Auto, Detail::Detailed), "67.27 ms");
  EXPECT_EQ(formatDuration(31.2e3, TimeUnit::Auto, Detail::Detailed), "31.2 us");
  EXPECT_EQ(formatDuration(3.2e6, TimeUnit::Ms), "3.2 ms");
  EXPECT_EQ(formatDuration(12345, TimeUnit::Us), "12.3 us");
  EXPECT_EQ(formatDuration(2e6, TimeUnit::Us), "2000.0 us");
  EXPECT_EQ(formatDuration(0, TimeUnit::Ms), "0.0 ms");
  EXPECT_EQ(formatDuration(2.5e9, TimeUnit::Ms), "2500.0 ms");
}

TEST(Units, IntoTheCallersBuffer) {
  char buf[kUnitTextSize];
  EXPECT_EQ(formatBytes(buf, sizeof buf, 3 << 19), buf);
  EXPECT_STREQ(buf, "1.5 MiB");
  EXPECT_EQ(formatDuration(buf, sizeof buf, 3.4e6), buf);
  EXPECT_STREQ(buf, "3.40 ms");
  // The longest texts fit; a short buffer is cut and still terminated; none is not written.
  EXPECT_STREQ(formatBytes(buf, sizeof buf, UINT64_MAX, ByteUnit::KiB), "18014398509481984.0 KiB");
  char small[5];
  EXPECT_STREQ(formatBytes(small, sizeof small, 3 << 19), "1.5 ");
  char untouched = 'x';
  formatDuration(&untouched, 0, 1.0);
  EXPECT_EQ(untouched, 'x');
}

TEST(Units, BufferFormsAllocateNothing) {
#if HETOPT_COUNT_MALLOC
  char buf[kUnitTextSize];
  const int before = t_mallocs;
  free(strdup("the counter sees allocations"));
  ASSERT_GT(t_mallocs, before);
  const int start = t_mallocs;
  for (uint64_t b : {0ull, 1000ull, 1ull << 20, 3ull << 40, ~0ull})
    for (ByteUnit u : {ByteUnit::Auto, ByteUnit::KiB, ByteUnit::MiB, ByteUnit::GiB})
      for (Detail d : {Detail::Short, Detail::Detailed}) formatBytes(buf, sizeof buf, b, u, d);
  for (double ns : {0.0, 999.7, 3.4e6, -1e12, HUGE_VAL})
    for (TimeUnit u : {TimeUnit::Auto, TimeUnit::Us, TimeUnit::Ms})
      for (Detail d : {Detail::Short, Detail::Detailed}) formatDuration(buf, sizeof buf, ns, u, d);
  EXPECT_EQ(t_mallocs, start);
#else
  GTEST_SKIP() << "the sanitizer's runtime owns malloc";
#endif
}

TEST(Units, ParseByteSize) {
  uint64_t v = 0;
  EXPECT_TRUE(parseByteSize("768M", &v));
  EXPECT_EQ(v, 768ull << 20);
  EXPECT_TRUE(parseByteSize("64MiB", &v));
  EXPECT_EQ(v, 64ull << 20);
  EXPECT_TRUE(parseByteSize("4k", &v));
  EXPECT_EQ(v, 4096u);
  EXPECT_TRUE(parseByteSize("1G", &v));
  EXPECT_EQ(v, 1ull << 30);
  EXPECT_TRUE(parseByteSize("123", &v));
  EXPECT_EQ(v, 123u);
  for (const char* bad :
       {"", "M", "0", "-5M", "12X", "1.5G", "99999999999999999999", "17179869184G"})
    EXPECT_FALSE(parseByteSize(bad, &v)) << bad;
}

TEST(Units, SaturatingU64) {
  EXPECT_EQ(saturatingU64(1234.9), 1234u);
  EXPECT_EQ(saturatingU64(-3.0), 0u);
  EXPECT_EQ(saturatingU64(std::nan("")), 0u);
  EXPECT_EQ(saturatingU64(5.17576e+22), UINT64_MAX);  // a fuzzed DB's "wait per MiB"
  EXPECT_EQ(saturatingU64(HUGE_VAL), UINT64_MAX);
  EXPECT_EQ(saturatingU64(0x1p63), 1ull << 63);
}

TEST(Units, SaturatingI64Arithmetic) {
  EXPECT_EQ(saturatingI64(42), 42);
  EXPECT_EQ(saturatingI64(UINT64_MAX), INT64_MAX);
  EXPECT_EQ(saturatingI64(uint64_t{1} << 63), INT64_MAX);
  EXPECT_EQ(saturatingAdd(INT64_MAX - 1, 5), INT64_MAX);
  EXPECT_EQ(saturatingAdd(INT64_MIN + 1, -5), INT64_MIN);
  EXPECT_EQ(saturatingAdd(-7, 5), -2);
  EXPECT_EQ(saturatingMul(4096, 144115188075855871), INT64_MAX);  // a fuzzed trace's size x count
  EXPECT_EQ(saturatingMul(-4096, 144115188075855871), INT64_MIN);
  EXPECT_EQ(saturatingMul(INT64_MIN, -1), INT64_MAX);
  EXPECT_EQ(saturatingMul(-3, 7), -21);
}

}  // namespace
}  // namespace hetopt
