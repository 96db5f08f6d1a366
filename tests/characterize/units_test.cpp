// SPDX-License-Identifier: MIT
/** @file Sizes and durations as printed and as typed on the command line. */
#include "characterize/units.h"

#include <gtest/gtest.h>

namespace hetopt::characterize {
namespace {

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
  for (const char* bad : {"", "M", "0", "-5M", "12X", "1.5G", "99999999999999999999", "17179869184G"})
    EXPECT_FALSE(parseByteSize(bad, &v)) << bad;
}

TEST(Units, Format) {
  EXPECT_EQ(formatBytes(1024), "1 KiB");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes(768.0 * (1 << 20)), "768 MiB");
  EXPECT_EQ(formatBytes(17), "17 B");
  EXPECT_EQ(formatNs(85), "85 ns");
  EXPECT_EQ(formatNs(12000), "12.0 us");
  EXPECT_EQ(formatNs(3.4e6), "3.40 ms");
  EXPECT_EQ(formatNs(1.2e9), "1.20 s");
}

}  // namespace
}  // namespace hetopt::characterize
