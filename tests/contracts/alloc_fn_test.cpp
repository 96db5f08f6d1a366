// SPDX-License-Identifier: MIT
/** @file The allocation functions' codes and names (contracts/alloc_fn.h): traces store the codes.
 */
#include "contracts/alloc_fn.h"

#include <gtest/gtest.h>

#include <string>

using namespace hetopt;

// The codes are a file format (trace/FORMAT.md): traces written by any hetopt read with these.
TEST(AllocFn, CodesAreTheTraceFormatsAndEachHasItsCName) {
  EXPECT_EQ(static_cast<unsigned>(AllocFn::Malloc), 0u);
  EXPECT_EQ(static_cast<unsigned>(AllocFn::Realloc), 2u);
  EXPECT_EQ(static_cast<unsigned>(AllocFn::Pvalloc), kAllocFnCount - 1);
  const char* expected[] = {"malloc",        "calloc",   "realloc", "posix_memalign",
                            "aligned_alloc", "memalign", "valloc",  "pvalloc"};
  for (unsigned code = 0; code < kAllocFnCount; ++code)
    EXPECT_EQ(std::string(allocFnName(code)), expected[code]) << code;
  EXPECT_EQ(std::string(allocFnName(AllocFn::PosixMemalign)), "posix_memalign");
}

TEST(AllocFn, ACodeBeyondTheTableHasNoName) {
  EXPECT_EQ(std::string(allocFnName(kAllocFnCount)), "?");
  EXPECT_EQ(std::string(allocFnName(255u)), "?");
}
