// SPDX-License-Identifier: MIT
/** @file The text report says why; the JSON form is valid JSON with every field. */
#include "analyzer/report.h"

#include <gtest/gtest.h>

#include <cmath>

#include "analyzer/json_writer.h"
#include "tests/analyzer/test_util.h"

namespace hetopt::analyzer {
namespace {

using testing::pythonParsesJson;
using testing::sampleProfile;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(Format, DurationsAndBytes) {
  EXPECT_EQ(formatDuration(850), "850 ns");
  EXPECT_EQ(formatDuration(12.34e3), "12.3 us");
  EXPECT_EQ(formatDuration(3.4e6), "3.40 ms");
  EXPECT_EQ(formatDuration(1.5e9), "1.50 s");
  EXPECT_EQ(formatDuration(HUGE_VAL), "inf");
  EXPECT_EQ(formatBytes(812), "812 B");
  EXPECT_EQ(formatBytes(256 << 10), "256 KiB");
  EXPECT_EQ(formatBytes(3 << 19), "1.5 MiB");
  EXPECT_EQ(formatBytes(64ull << 30), "64 GiB");
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

TEST(JsonWriter, CommasAndNesting) {
  std::string out;
  JsonWriter j(&out);
  j.beginObject().member("a", 1).key("b").beginArray().value(true).null().beginObject().endObject();
  j.endArray().member("c", "x").endObject();
  EXPECT_EQ(out, "{\"a\":1,\"b\":[true,null,{}],\"c\":\"x\"}");
}

}  // namespace
}  // namespace hetopt::analyzer
