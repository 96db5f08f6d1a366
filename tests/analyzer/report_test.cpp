// SPDX-License-Identifier: MIT
/** @file The text report says why; the JSON form is valid JSON with every field. */
#include "analyzer/report.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/analyzer/test_util.h"

namespace hetopt::analyzer {
namespace {

using testing::pythonParsesJson;
using testing::sampleProfile;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(Report, SaysWhyWithNumbersAndSourceLines) {
  std::string r = formatReport(sampleProfile());
  EXPECT_TRUE(contains(r, "Eligibility: ELIGIBLE")) << r;
  EXPECT_TRUE(contains(r, "dispatch ratio 0.40 >= 0.10")) << r;
  EXPECT_TRUE(contains(r, "#1 main at main.cpp:29")) << r;
  EXPECT_TRUE(contains(r, "#2 libio.so+0x99")) << r;
  EXPECT_TRUE(contains(r, "no symbols")) << r;
  // The size carrying most bytes is labelled as such, with how many sizes there were.
  EXPECT_TRUE(contains(r, "h2d 13 x 1 MiB mostly, ")) << r;
  EXPECT_FALSE(contains(r, "x ~")) << r;
  EXPECT_TRUE(contains(r, "peak live 1.0 MiB in 2 blocks")) << r;  // 1 MiB + 4 KiB, rounded
  EXPECT_TRUE(contains(r, "hybrid (pool) saves 5.00 ms of 7.00 ms")) << r;
  EXPECT_TRUE(contains(r, "run hetopt characterize")) << r;
  EXPECT_TRUE(contains(r, " 30.0%")) << r;  // kernel share of the total
  EXPECT_TRUE(contains(r, " 60.0%")) << r;  // cpu+sync
  EXPECT_TRUE(contains(r, "2 of 14 tracked sites")) << r;
  EXPECT_TRUE(contains(r, "static  g_weights (main.cpp:12) in solver, 64 MiB")) << r;
  EXPECT_TRUE(contains(r, "trace ended early")) << r;
}

TEST(Report, PredictedBreakdownScalesTheCandidatesTransferTime) {
  AppProfile p = sampleProfile();
  Breakdown b;
  ASSERT_TRUE(predictOptimizedBreakdown(p, &b));
  // Site #1 keeps 2/7 of its 7.1 ms of transfers; the communication part (10 ms of the traced
  // 12 ms, scaled to fit the wall time) shrinks by the same share.
  const double cut = 7.1e6 * 5.0 / 7.0 * (10.0 / 12.0);
  EXPECT_NEAR(b.communicationNs, 10e6 - cut, 1);
  EXPECT_NEAR(b.totalNs, 100e6 - cut, 1);
  EXPECT_DOUBLE_EQ(b.kernelNs, p.breakdown.kernelNs);
  EXPECT_DOUBLE_EQ(b.cpuSyncNs, p.breakdown.cpuSyncNs);
  EXPECT_NE(formatReport(p).find("predicted with the best policies"), std::string::npos);
  for (CandidateSite& c : p.candidates) c.gain.known = false;
  EXPECT_FALSE(predictOptimizedBreakdown(p, &b));
  EXPECT_EQ(formatReport(p).find("predicted with the best policies"), std::string::npos);
}

TEST(Report, IneligibleIsSaid) {
  AppProfile p = sampleProfile();
  p.eligibility.eligible = false;
  p.eligibility.reason = "dispatch ratio 0.01 < 0.10";
  std::string r = formatReport(p);
  EXPECT_TRUE(contains(r, "Eligibility: NOT ELIGIBLE")) << r;
  EXPECT_TRUE(contains(r, "0.01 < 0.10")) << r;
}

// Sites without source lines whose innermost frame is one allocation wrapper (a program built
// without debug info): each is shown with the frames that tell it apart, a wrapper inside a library
// with its frames out to the program's own code, and sites that print alike with every recorded
// frame are one entry.
TEST(Report, SitesThatPrintAlikeAreToldApartOrMerged) {
  AppProfile p = sampleProfile();
  p.program.path = "/usr/bin/hc";
  p.candidates.clear();
  auto site = [&](uint64_t key, std::vector<ModulePc> frames, uint64_t allocations) {
    CandidateSite c;
    c.siteKey = key;
    c.frames = std::move(frames);
    c.location.modulePath = c.frames[0].modulePath;
    c.location.offset = c.frames[0].offset;
    c.location.note = "hc: no debug info";
    c.allocator = "malloc";
    c.allocations = allocations;
    c.minAllocBytes = c.maxAllocBytes = 1 << 20;
    c.h2d.add(1 << 20, allocations, 1000);
    c.h2d.finish();
    p.candidates.push_back(c);
  };
  const std::string hc = "/usr/bin/hc", lib = "/usr/lib/libwrap.so";
  site(1, {{hc, "aa", 0x153a6, true}, {hc, "aa", 0x2000, true}, {hc, "aa", 0x9000, true}}, 1);
  site(2, {{hc, "aa", 0x153a6, true}, {hc, "aa", 0x3000, true}, {hc, "aa", 0x9000, true}}, 2);
  site(3, {{hc, "aa", 0x153a6, true}, {hc, "aa", 0x3000, true}, {hc, "aa", 0x9000, true}}, 3);
  site(4, {{lib, "", 0x10, true}, {lib, "", 0x20, true}, {hc, "aa", 0x4000, true}, {hc, "aa", 0x9000, true}}, 4);
  const std::string r = formatReport(p);
  EXPECT_TRUE(contains(r, "#1 hc+0x153a6\n      (hc: no debug info)\n      called from hc+0x2000\n")) << r;
  EXPECT_TRUE(contains(r, "#2 hc+0x153a6\n      (2 sites whose recorded frames all print alike: shown as one)\n"
                          "      (hc: no debug info)\n      called from hc+0x3000\n      malloc: 5 allocations")) << r;
  EXPECT_TRUE(contains(r, "h2d 5 x 1 MiB (5 MiB, 2.0 us)")) << r;
  EXPECT_TRUE(contains(r, "#3 libwrap.so+0x10\n      (hc: no debug info)\n      called from libwrap.so+0x20, from hc+0x4000\n")) << r;
  EXPECT_FALSE(contains(r, "#4")) << r;
  EXPECT_FALSE(contains(r, "0x9000")) << r;  // the sites differ before it
  EXPECT_TRUE(contains(r, "4 of ")) << r;  // the header still counts every recorded site
}

class JsonFile : public ::testing::Test {
 protected:
  void SetUp() override { m_dir = testing::makeTempDir(); }
  void TearDown() override { system(("rm -rf '" + m_dir + "'").c_str()); }
  std::string write(const std::string& content) {
    std::string path = m_dir + "/out.json";
    FILE* f = fopen(path.c_str(), "w");
    fwrite(content.data(), 1, content.size(), f);
    fclose(f);
    return path;
  }
  std::string m_dir;
};

TEST_F(JsonFile, ProfileIsValidJson) {
  std::string j = profileToJson(sampleProfile());
  EXPECT_TRUE(pythonParsesJson(write(j))) << j;
  EXPECT_TRUE(contains(j, "\"site_key\":\"fedcba9876543210\"")) << j;
  EXPECT_TRUE(contains(j, "\"line\":29")) << j;
  EXPECT_TRUE(contains(j, "\"path\":\"/opt/app/bin/solver \\\"v2\\\"\"")) << j;
  EXPECT_TRUE(contains(j, "\"format\":1")) << j;
}

TEST_F(JsonFile, HostileStringsAndInfinityStayValid) {
  AppProfile p = sampleProfile();
  p.program.path = std::string("/tmp/\xff\xfe bad\x01utf8/\xe2\x82\xac");  // invalid bytes, a control char, a valid euro
  p.eligibility.ratio = HUGE_VAL;  // no kernel at all
  p.breakdown.totalNs = NAN;
  std::string j = profileToJson(p);
  EXPECT_TRUE(pythonParsesJson(write(j))) << j;
  EXPECT_TRUE(contains(j, "\"ratio\":null")) << j;
  EXPECT_TRUE(contains(j, "\\ufffd")) << j;
  EXPECT_TRUE(contains(j, "\\u0001")) << j;
  EXPECT_TRUE(contains(j, "\xe2\x82\xac")) << j;
}

}  // namespace
}  // namespace hetopt::analyzer
