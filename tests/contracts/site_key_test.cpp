// SPDX-License-Identifier: MIT
/**
 * @file Site keys (contracts/site_key.h): profiles in the DB and plans on disk name sites by these
 * numbers, so the hash must never change: the values here are pinned.
 */
#include "contracts/site_key.h"

#include <gtest/gtest.h>

using namespace hetopt;

TEST(SiteKey, ModuleIdentityIsTheBuildIdElseThePath) {
  EXPECT_EQ(moduleIdentity("abcd", "/usr/lib/x.so"), moduleIdentity("abcd", "/opt/y.so"));
  EXPECT_NE(moduleIdentity("abcd", "/usr/lib/x.so"), moduleIdentity("abce", "/usr/lib/x.so"));
  EXPECT_EQ(moduleIdentity("", "/usr/lib/x.so"), fnv1a64("/usr/lib/x.so", 13));
  EXPECT_NE(moduleIdentity("", "/usr/lib/x.so"), moduleIdentity("", "/usr/lib/y.so"));
}

TEST(SiteKey, KeysStayTheValuesStoredProfilesAndPlansHold) {
  EXPECT_EQ(fnv1a64("", 0), kSiteKeySeed);
  EXPECT_EQ(moduleIdentity("abcd", ""), 0xbc58d5ba50b57dfbull);
  const uint64_t inner = siteKeyFold(kSiteKeySeed, moduleIdentity("abcd", ""), 0x1234);
  EXPECT_EQ(inner, 0xb615435410649425ull);
  EXPECT_EQ(siteKeyFold(inner, moduleIdentity("", "/bin/app"), 0x40), 0xfcd12318d5e602ecull);
  // Frame order matters: innermost first.
  EXPECT_NE(siteKeyFold(siteKeyFold(kSiteKeySeed, 1, 2), 3, 4),
            siteKeyFold(siteKeyFold(kSiteKeySeed, 3, 4), 1, 2));
}
