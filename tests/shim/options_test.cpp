// SPDX-License-Identifier: MIT
/** @file The HETOPT_* option table: defaults, validation, mode parsing. */
#include "common/options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "shim/core/lifecycle.h"
#include "shim/core/state.h"

using namespace hetopt;

TEST(Options, DefaultsWhenUnsetOrEmpty) {
  unsetenv("HETOPT_MIN_TRACKED_SIZE");
  bool ok = false;
  EXPECT_EQ(optionUnsigned(Option::MIN_TRACKED_SIZE, 1, 1u << 30, &ok), 4096u);
  EXPECT_TRUE(ok);
  setenv("HETOPT_MIN_TRACKED_SIZE", "", 1);
  EXPECT_EQ(optionUnsigned(Option::MIN_TRACKED_SIZE, 1, 1u << 30, &ok), 4096u);
  unsetenv("HETOPT_MIN_TRACKED_SIZE");
}

TEST(Options, RejectsGarbageAndOutOfRange) {
  for (const char* bad : {"abc", "12x", "-5", "0", "99999999999999999999999"}) {
    setenv("HETOPT_MIN_TRACKED_SIZE", bad, 1);
    bool ok = true;
    EXPECT_EQ(optionUnsigned(Option::MIN_TRACKED_SIZE, 1, 1u << 30, &ok), 4096u) << bad;
    EXPECT_FALSE(ok) << bad;
  }
  setenv("HETOPT_MIN_TRACKED_SIZE", "65536", 1);
  bool ok = false;
  EXPECT_EQ(optionUnsigned(Option::MIN_TRACKED_SIZE, 1, 1u << 30, &ok), 65536u);
  EXPECT_TRUE(ok);
  unsetenv("HETOPT_MIN_TRACKED_SIZE");
}

TEST(Options, EveryEntryIsDocumentedAndPrefixed) {
  for (int i = 0; i < static_cast<int>(Option::Count); ++i) {
    const OptionInfo& o = optionInfo(static_cast<Option>(i));
    EXPECT_EQ(strncmp(o.envName, "HETOPT_", 7), 0);
    EXPECT_GT(strlen(o.doc), 10u) << o.envName;
  }
}

TEST(Options, ModeParsing) {
  using hetopt::shim::Mode;
  setenv("HETOPT_MODE", "count", 1);
  EXPECT_EQ(shim::modeFromEnvironment(), Mode::Count);
  setenv("HETOPT_MODE", "off", 1);
  EXPECT_EQ(shim::modeFromEnvironment(), Mode::Off);
  setenv("HETOPT_MODE", "bogus", 1);
  EXPECT_EQ(shim::modeFromEnvironment(), Mode::Off);
  unsetenv("HETOPT_MODE");
  EXPECT_EQ(shim::modeFromEnvironment(), Mode::Off);
}
