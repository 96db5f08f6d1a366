// SPDX-License-Identifier: MIT
/** @file The text report says why; the JSON form is valid JSON with every field. */
#include "analyzer/report.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/paths.h"
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

// Pinning that is slower than the transfers it serves is a cost, in words, not a negative saving.
TEST(Report, ANegativeSavingReadsAsACost) {
  AppProfile p = sampleProfile();
  p.candidates[0].gain.optimizedNs = p.candidates[0].gain.standardNs + 12.19e6;
  p.untracked[0].gain = {true, "characterized", "register", "direct", 2e6, 3.5e6};
  const std::string r = formatReport(p);
  EXPECT_TRUE(contains(r, "hybrid (pool) costs 12.19 ms of 7.00 ms")) << r;
  EXPECT_TRUE(contains(r, "registering it in place costs 1.50 ms of 2.00 ms")) << r;
  EXPECT_FALSE(contains(r, "saves -")) << r;
}

// A site's transfers are priced at the larger of their traced time and the pageable curves': where
// the curves' is larger, the "of X" is not the traced time printed just above it, and says so.
TEST(Report, ASavingOfMoreThanTheTracedTimeSaysWhereItsTimeComesFrom) {
  AppProfile p = sampleProfile();
  const std::string asTraced = formatReport(p);
  EXPECT_FALSE(contains(asTraced, "by this machine's curves")) << asTraced;
  p.candidates[0].gain.standardNs = 9e6;  // the site's transfers took 7.1 ms when traced
  const std::string r = formatReport(p);
  EXPECT_TRUE(contains(r,
                       "hybrid (pool) saves 7.00 ms of 9.00 ms (the pageable transfers by this "
                       "machine's curves, above the 7.10 ms traced)\n"))
      << r;
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
  site(4,
       {{lib, "", 0x10, true},
        {lib, "", 0x20, true},
        {hc, "aa", 0x4000, true},
        {hc, "aa", 0x9000, true}},
       4);
  const std::string r = formatReport(p);
  EXPECT_TRUE(
      contains(r, "#1 hc+0x153a6\n      (hc: no debug info)\n      called from hc+0x2000\n"))
      << r;
  EXPECT_TRUE(contains(
      r,
      "#2 hc+0x153a6\n      (2 sites whose recorded frames all print alike: shown as one)\n"
      "      (hc: no debug info)\n      called from hc+0x3000\n      malloc: 5 allocations"))
      << r;
  EXPECT_TRUE(contains(r, "h2d 5 x 1 MiB (5 MiB, 2.0 us)")) << r;
  EXPECT_TRUE(contains(r,
                       "#3 libwrap.so+0x10\n      (hc: no debug info)\n      called from "
                       "libwrap.so+0x20, from hc+0x4000\n"))
      << r;
  EXPECT_FALSE(contains(r, "#4")) << r;
  EXPECT_FALSE(contains(r, "0x9000")) << r;  // the sites differ before it
  EXPECT_TRUE(contains(r, "4 of ")) << r;    // the header still counts every recorded site
}

// A Python script's sites inside numpy (two extension modules of one package) are one group with
// their totals and shared note, each site's frames in its own module as offsets; the interpreter's
// own sites are a group of their own; a library with one site and the program's own lines are not
// grouped. The JSON form names each site's library.
TEST(Report, SitesInsideLibrariesAreGrouped) {
  AppProfile p = sampleProfile();
  p.program.path = "/usr/bin/python3.11";
  p.program.script = {ScriptRef::Kind::File, "/home/u/two.py", "ab"};
  p.candidates.clear();
  const std::string np = "/usr/lib/python3/dist-packages/numpy";
  const std::string umath = np + "/core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so";
  const std::string linalg = np + "/linalg/_umath_linalg.cpython-311-x86_64-linux-gnu.so";
  auto site = [&](uint64_t key, const std::string& module, uint64_t caller, uint64_t bytes) {
    CandidateSite c;
    c.siteKey = key;
    c.frames = {{module, "", 0xde138, true}, {module, "", caller, true}};
    c.location.modulePath = module;
    c.location.offset = 0xde138;
    c.location.note = baseName(module) + ": no symbols";
    c.allocator = "malloc";
    c.allocations = 3;
    c.minAllocBytes = c.maxAllocBytes = bytes;
    c.peakLiveBytes = 2 * bytes;
    c.h2d.add(bytes, 3, 1000);
    c.h2d.finish();
    p.candidates.push_back(c);
  };
  site(1, umath, 0x11b09d, 1 << 20);
  site(2, "/usr/lib/x86_64-linux-gnu/libother.so.1", 0x20, 1 << 20);
  site(3, umath, 0x119a89, 1 << 20);
  site(4, linalg, 0x30, 1 << 21);
  site(5, p.program.path, 0x40, 1 << 20);
  site(6, p.program.path, 0x50, 1 << 20);
  p.candidates[1].location.note.clear();
  const std::string r = formatReport(p);
  EXPECT_TRUE(
      contains(r, "  numpy (" + np +
                      "): 3 sites inside it, not the program's own code\n"
                      "      together: 9 allocations, peak live at most 8 MiB; "
                      "h2d 9 x 2 MiB mostly, 2 sizes (12 MiB, 3.0 us)   d2h none\n"
                      "    #1 _multiarray_umath.cpython-311-x86_64-linux-gnu.so+0xde138\n"
                      "        (_multiarray_umath.cpython-311-x86_64-linux-gnu.so: no symbols)\n"
                      "        called from +0x11b09d\n"))
      << r;
  EXPECT_TRUE(contains(r,
                       "    #2 _multiarray_umath.cpython-311-x86_64-linux-gnu.so+0xde138\n"
                       "        (_multiarray_umath.cpython-311-x86_64-linux-gnu.so: no symbols)\n"
                       "        called from +0x119a89\n        malloc: 3 allocations of 1 MiB"))
      << r;
  EXPECT_TRUE(contains(r, "    #3 _umath_linalg.cpython-311-x86_64-linux-gnu.so+0xde138\n")) << r;
  // One library, one site: printed as before, after the group that came first.
  EXPECT_TRUE(contains(r, "\n  #4 libother.so.1+0xde138\n      called from libother.so.1+0x20\n"))
      << r;
  EXPECT_TRUE(contains(r,
                       "  the interpreter (/usr/bin/python3.11): 2 sites inside it, "
                       "not the program's own code\n"
                       "      together: 6 allocations, peak live at most 4 MiB; "
                       "h2d 6 x 1 MiB (6 MiB, 2.0 us)   d2h none\n"
                       "      (python3.11: no symbols)\n"
                       "    #5 python3.11+0xde138\n        called from +0x40\n"))
      << r;
  const std::string j = profileToJson(p);
  EXPECT_TRUE(contains(j, "\"library\":\"numpy\",\"library_path\":\"" + np + "\"")) << j;
  EXPECT_TRUE(contains(j, "\"library\":\"libother.so.1\"")) << j;

  // A compiled program's own executable is its own code, never a group.
  p.program.script = {};
  const std::string own = formatReport(p);
  EXPECT_FALSE(contains(own, "the interpreter")) << own;
  EXPECT_TRUE(contains(own, "\n  #5 python3.11+0xde138\n      (python3.11: no symbols)\n")) << own;
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
  p.program.path = std::string(
      "/tmp/\xff\xfe bad\x01utf8/\xe2\x82\xac");  // invalid bytes, a control char, a valid euro
  p.eligibility.ratio = HUGE_VAL;                 // no kernel at all
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
