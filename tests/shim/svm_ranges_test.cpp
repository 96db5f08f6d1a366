// SPDX-License-Identifier: MIT
/** @file The program's SVM/USM allocations, which optimize mode counts no transfer from. */
#include "shim/core/svm_ranges.h"

#include <gtest/gtest.h>

#include <memory>

using hetopt::shim::SvmRanges;

TEST(SvmRanges, AnAllocationHoldsItsBytesUntilItIsFreed) {
  auto svm = std::make_unique<SvmRanges>();
  EXPECT_FALSE(svm->contains(0x10000));
  ASSERT_TRUE(svm->add(0x10000, 0x1000));
  EXPECT_TRUE(svm->contains(0x10000));
  EXPECT_TRUE(svm->contains(0x10fff));
  EXPECT_FALSE(svm->contains(0x11000));
  EXPECT_FALSE(svm->contains(0xffff));
  svm->remove(0x10800);  // not an allocation's start: nothing
  EXPECT_TRUE(svm->contains(0x10800));
  svm->remove(0x10000);
  EXPECT_FALSE(svm->contains(0x10800));
}

TEST(SvmRanges, AFullTableLeavesTheRestHostMemoryAndFreedSlotsAreReused) {
  auto svm = std::make_unique<SvmRanges>();
  for (uint64_t i = 0; i < SvmRanges::kMaxRanges; ++i)
    ASSERT_TRUE(svm->add(0x100000 + i * 0x100, 0x100));
  EXPECT_FALSE(svm->add(0x900000, 0x100));
  EXPECT_FALSE(svm->contains(0x900000));
  svm->remove(0x100000 + 7 * 0x100);
  EXPECT_FALSE(svm->contains(0x100000 + 7 * 0x100));
  EXPECT_TRUE(svm->add(0x900000, 0x100));
  EXPECT_TRUE(svm->contains(0x9000ff));
  EXPECT_TRUE(svm->contains(0x100000 + 8 * 0x100));
}

TEST(SvmRanges, NullAndEmptyAllocationsAreNotKept) {
  SvmRanges svm;
  EXPECT_FALSE(svm.add(0, 0x100));
  EXPECT_FALSE(svm.add(0x1000, 0));
  EXPECT_FALSE(svm.contains(0x1000));
}
