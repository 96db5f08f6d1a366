// SPDX-License-Identifier: MIT
/** @file The timeline opens as Chrome trace-event JSON; the breakdown plot renders. */
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "analyzer/plots.h"
#include "analyzer/timeline.h"
#include "tests/analyzer/test_util.h"

namespace hetopt::analyzer {
namespace {

class Outputs : public ::testing::Test {
 protected:
  void SetUp() override { m_dir = testing::makeTempDir(); }
  void TearDown() override { system(("rm -rf '" + m_dir + "'").c_str()); }
  std::string m_dir;
};

TEST_F(Outputs, TimelineHasTracksAndEventsInMicroseconds) {
  std::vector<TimelineEvent> events = {
      {TimelineEvent::Track::DeviceQueue, 0, "axpb", "kernel", 2000, 500, {{"gws", "1024"}}},
      {TimelineEvent::Track::DeviceQueue, 1, "H2D 256 KiB", "h2d", 1000, 250, {}},
      {TimelineEvent::Track::HostThread, 4242, "clEnqueueWriteBuffer", "api", 900, 50, {}},
  };
  TimelineInfo info;
  info.program = "loop_wkr";
  info.device = "pocl / cpu";
  info.pid = 77;
  info.queueNames = {{1, "queue 1 (copy)"}};
  std::string path = m_dir + "/t.json";
  std::string error;
  ASSERT_TRUE(writeTimeline(path, info, events, &error)) << error;
  // Structure as the viewers read it: metadata names tracks, X events carry µs times.
  std::string check = std::string(HETOPT_PYTHON3) + " - '" + path + "' <<'EOF'\n" + R"PY(
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
x = [e for e in ev if e["ph"] == "X"]
assert len(x) == 3, x
k = [e for e in x if e["name"] == "axpb"][0]
assert k["ts"] == 2.0 and k["dur"] == 0.5 and k["pid"] == 1 and k["args"]["gws"] == "1024", k
api = [e for e in x if e["cat"] == "api"][0]
assert api["pid"] == 2 and api["tid"] == 4242, api
names = {(e["pid"], e.get("tid"), e["args"]["name"]) for e in ev if e["ph"] == "M"}
assert (1, 1, "queue 1 (copy)") in names and (1, 0, "queue 0") in names, names
assert (2, 4242, "thread 4242") in names and (2, None, "host (pid 77)") in names, names
)PY" + "\nEOF";
  EXPECT_EQ(system(check.c_str()), 0) << testing::readFile(path);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(Outputs, TimelineUnwritablePathIsAnError) {
  std::string error;
  EXPECT_FALSE(writeTimeline(m_dir + "/no/such/dir/t.json", {}, {}, &error));
  EXPECT_NE(error.find("no/such/dir"), std::string::npos) << error;
}

TEST_F(Outputs, BreakdownPlotDataScriptAndImage) {
  Breakdown standard = testing::sampleProfile().breakdown;
  Breakdown optimized = standard;
  optimized.communicationNs = 2e6;
  optimized.totalNs = 92e6;
  PlotOutput out;
  std::string error;
  std::string dir = m_dir + "/plots";
  ASSERT_TRUE(writeBreakdownPlot(dir, programSlug("/x/loop wkr"), "loop_wkr on pocl",
                                 {{"standard", standard}, {"optimized", optimized}}, &out, &error))
      << error;
  EXPECT_EQ(out.data, dir + "/loop_wkr-breakdown.dat");
  std::string dat = testing::readFile(out.data);
  EXPECT_NE(dat.find("\"standard\" 0.03 0.01 0.06 0.1"), std::string::npos) << dat;
  EXPECT_NE(dat.find("\"optimized\" 0.03 0.002 0.06 0.092"), std::string::npos) << dat;
  EXPECT_NE(testing::readFile(out.script).find("rowstacked"), std::string::npos);
  struct stat st;
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  if (out.image.empty()) {
    EXPECT_NE(out.note.find("gnuplot"), std::string::npos) << out.note;
  } else {
    std::string svg = testing::readFile(out.image);
    EXPECT_NE(svg.find("<svg"), std::string::npos);
    EXPECT_NE(svg.find("communication"), std::string::npos);
  }
}

}  // namespace
}  // namespace hetopt::analyzer
