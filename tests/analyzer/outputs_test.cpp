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
  ProgramIdentity program;
  program.path = "/x/loop wkr";
  ASSERT_TRUE(writeBreakdownPlot(dir, programSlug(program), "loop_wkr on pocl",
                                 {{"standard", standard}, {"optimized", optimized}}, &out, &error))
      << error;
  EXPECT_EQ(out.data, dir + "/loop_wkr-breakdown.dat");
  std::string dat = testing::readFile(out.data);
  EXPECT_NE(dat.find("\"standard\" 0.03 0.01 0.06 0.1"), std::string::npos) << dat;
  EXPECT_NE(dat.find("\"optimized\" 0.03 0.002 0.06 0.092"), std::string::npos) << dat;
  EXPECT_NE(testing::readFile(out.script).find("rowstacked"), std::string::npos);
  EXPECT_EQ(testing::readFile(out.script).find("set label"), std::string::npos);
  // `hetopt report` says under the key what is predicted, a label per line.
  ASSERT_TRUE(writeBreakdownPlot(dir, "noted", "t", {{"optimized", optimized}}, &out, &error,
                                 "communication of optimized runs:\npredicted, not measured"))
      << error;
  const std::string noted = testing::readFile(out.script);
  EXPECT_NE(noted.find("set label \"communication of optimized runs:\" at screen 0.98, 0.740 "
                       "right"),
            std::string::npos)
      << noted;
  EXPECT_NE(noted.find("set label \"predicted, not measured\" at screen 0.98, 0.700 right"),
            std::string::npos)
      << noted;
  out = {};
  ASSERT_TRUE(writeBreakdownPlot(dir, programSlug(program), "loop_wkr on pocl",
                                 {{"standard", standard}, {"optimized", optimized}}, &out, &error))
      << error;
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

// The title of the longest kind `hetopt report` writes: an interpreter, its script and a long
// device name. Clipped, it runs into the canvas's edges; every file is 0600 like all of hetopt's.
TEST_F(Outputs, ALongTitleFitsTheImageAndEveryFileIsPrivate) {
  Breakdown b = testing::sampleProfile().breakdown;
  PlotOutput out;
  std::string error;
  const std::string dir = m_dir + "/plots";
  const std::string title =
      "python3.11 train_the_network_on_every_file.py on Portable Computing Language / "
      "cpu-haswell-AMD EPYC 7B13 64-Core Processor, 2026-11-25: traced, untouched and optimized "
      "runs";
  ASSERT_TRUE(writeBreakdownPlot(
      dir, "long", title,
      {{"traced", b}, {"untouched 18:36:53 UTC", b}, {"optimized 18:36:54 UTC", b}}, &out, &error))
      << error;
  ASSERT_FALSE(out.png.empty()) << "gnuplot (scripts/setup.sh installs it) did not render: "
                                << out.note;
  for (const std::string& file : {out.data, out.script, out.image, out.png}) {
    struct stat st;
    ASSERT_EQ(stat(file.c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << file;
  }
  const std::string check = std::string(HETOPT_PYTHON3) + " '" + HETOPT_SOURCE_DIR +
                            "/tests/analyzer/png_title_margins.py' '" + out.png + "' 60";
  EXPECT_EQ(system(check.c_str()), 0) << check;
}

TEST_F(Outputs, EachScriptOfAnInterpreterPlotsToFilesOfItsOwn) {
  ProgramIdentity a, b, module, code;
  a.path = b.path = module.path = code.path = "/usr/bin/python3.11";
  a.script = {ScriptRef::Kind::File, "/home/u/train.py", "aa"};
  b.script = {ScriptRef::Kind::File, "/home/u/eval.py", "bb"};
  module.script = {ScriptRef::Kind::Module, "pkg.main", ""};
  code.script = {ScriptRef::Kind::Code, "", "1a2b3c4d5e6f"};
  EXPECT_EQ(programSlug(a), "python3_11-train_py");
  EXPECT_EQ(programSlug(b), "python3_11-eval_py");
  EXPECT_EQ(programSlug(module), "python3_11-m-pkg_main");
  EXPECT_EQ(programSlug(code), "python3_11-c-1a2b3c4d");
  EXPECT_EQ(programLabel(a), "python3.11 train.py");
  EXPECT_EQ(programLabel(module), "python3.11 -m pkg.main");
}

}  // namespace
}  // namespace hetopt::analyzer
