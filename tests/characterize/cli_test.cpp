// SPDX-License-Identifier: MIT
/**
 * @file `hetopt characterize` end to end on the machine's OpenCL device (PoCL in CI): a quick run
 * fills the DB, prints the decision table and writes plots; a second run reuses the DB; --show
 * prints it; a locked-memory limit makes locked/hybrid unavailable without failing the run; a
 * corrupt DB is one clear error.
 */
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "characterize/plot.h"
#include "characterize/records.h"
#include "common/gnuplot.h"
#include "tests/characterize/test_util.h"

namespace hetopt::characterize {
namespace {

using testing::TempDir;

struct Result {
  int status = -1;
  std::string out, err;
  long maxRssKiB = 0;  ///< the command's peak resident memory (getrusage's ru_maxrss)
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `prefix hetopt characterize args` through the shell, capturing both streams.
Result characterize(const TempDir& tmp, const std::string& args, const std::string& prefix = "") {
  std::string cmd = "exec " + prefix + " " HETOPT_BIN " characterize " + args + " >" +
                    tmp.file("out") + " 2>" + tmp.file("err");
  Result r;
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int rc = 0;
  struct rusage usage = {};
  if (pid < 0 || wait4(pid, &rc, 0, &usage) != pid) return r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.maxRssKiB = usage.ru_maxrss;
  r.out = slurp(tmp.file("out"));
  r.err = slurp(tmp.file("err"));
  return r;
}

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

std::vector<CharacterizationRun> loadRuns(const std::string& path) {
  std::string error;
  auto db = Db::open(path, Db::Mode::ReadOnly, &error);
  EXPECT_TRUE(db) << error;
  std::vector<CharacterizationRun> runs;
  if (db) {
    EXPECT_TRUE(loadAllRuns(*db, &runs, &error)) << error;
  }
  return runs;
}

TEST(CharacterizeCli, QuickRunFillsDbPrintsDecisionsWritesPlots) {
  TempDir tmp;
  const std::string db = tmp.file("db/hetopt.db"), plots = tmp.file("plots");
  Result r = characterize(tmp, "--quick --db " + db + " --plots " + plots);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  // The platform and device each measurement ran on.
  EXPECT_TRUE(contains(r.out, "device 0.0: ")) << r.out;
  EXPECT_TRUE(contains(r.out, " / ")) << r.out;
  EXPECT_TRUE(contains(r.out, "decisions")) << r.out;
  for (const char* d : {"h2d ", "d2h ", "roundtrip "}) EXPECT_TRUE(contains(r.out, d)) << r.out;
  EXPECT_TRUE(contains(r.out, "total ")) << r.out;
  EXPECT_FALSE(contains(r.err, "\r")) << "no progress bar when stderr is not a terminal";
  EXPECT_TRUE(contains(r.err, "transfers")) << r.err;

  std::vector<CharacterizationRun> runs = loadRuns(db);
  ASSERT_EQ(runs.size(), 1u);
  const CharacterizationRun& run = runs[0];
  EXPECT_TRUE(run.info.quick);
  EXPECT_TRUE(contains(r.out, run.info.key.deviceName));
  EXPECT_EQ(run.policies.size(), static_cast<size_t>(kPolicyCount));
  const PolicyAvailability* standard = run.findPolicy(PolicyKind::Standard);
  ASSERT_NE(standard, nullptr);
  EXPECT_EQ(standard->state, PolicyAvailability::State::Available);
  // Every available policy has every measure, and transfers at every concurrency.
  for (const PolicyAvailability& p : run.policies) {
    if (p.state == PolicyAvailability::State::Unavailable) continue;
    for (Measure m : {Measure::Alloc, Measure::Free, Measure::H2D, Measure::D2H}) {
      int maxC = m == Measure::H2D || m == Measure::D2H ? 4 : 1;
      for (int c = 1; c <= maxC; ++c) {
        const Fit* f = run.findFit(m, p.policy, c);
        ASSERT_NE(f, nullptr) << policyName(p.policy) << " " << measureName(m) << " x" << c;
        // A partial policy (mlock under a default 8 MiB RLIMIT_MEMLOCK) stops early.
        EXPECT_GE(f->fn.points, p.state == PolicyAvailability::State::Available ? 10 : 2);
      }
    }
  }
  for (const Sample& s : run.samples) {
    EXPECT_GE(s.timesNs.size(), 3u);
    EXPECT_GT(s.medianNs, 0);
    EXPECT_LE(s.q1Ns, s.medianNs);
    EXPECT_LE(s.medianNs, s.q3Ns);
  }
  // Decisions cover all sizes in each direction, without gaps.
  for (Direction d : {Direction::H2D, Direction::D2H, Direction::RoundTrip}) {
    uint64_t next = 0;
    for (const Decision& x : run.decisions) {
      if (x.direction != d) continue;
      EXPECT_EQ(x.sizeLo, next) << directionName(d);
      next = x.sizeHi;
    }
    EXPECT_EQ(next, UINT64_MAX) << directionName(d);
  }

  const std::string slug = plotSlug(run);
  EXPECT_FALSE(slurp(plots + "/" + slug + ".dat").empty());
  std::string gp = slurp(plots + "/" + slug + ".gp");
  EXPECT_TRUE(contains(gp, "logscale")) << gp;
  // The concurrency figure's key sits under its plots, where no line runs.
  const size_t concurrency = gp.find("-concurrency\"");
  ASSERT_NE(concurrency, std::string::npos) << gp;
  EXPECT_NE(gp.find("set key below", concurrency), std::string::npos) << gp.substr(concurrency);
  if (!findGnuplot().empty()) {
    for (const char* kind : {"-alloc.png", "-transfer.png", "-concurrency.png"}) {
      std::string png = slurp(plots + "/" + slug + kind);
      ASSERT_GT(png.size(), 1000u) << kind;
      EXPECT_EQ(png.substr(1, 3), "PNG") << kind;
      // The same mode as every file hetopt writes (report's plots too).
      struct stat st;
      ASSERT_EQ(stat((plots + "/" + slug + kind).c_str(), &st), 0) << kind;
      EXPECT_EQ(st.st_mode & 0777, 0600u) << kind;
    }
  }

  // Unchanged key: reused, not measured again.
  Result again = characterize(tmp, "--quick --no-plots --db " + db);
  ASSERT_EQ(again.status, 0) << again.out << again.err;
  EXPECT_TRUE(contains(again.out, "using the stored characterization")) << again.out;
  EXPECT_EQ(loadRuns(db)[0].id, run.id);

  Result shown = characterize(tmp, "--show --db " + db);
  ASSERT_EQ(shown.status, 0) << shown.out << shown.err;
  EXPECT_TRUE(contains(shown.out, run.info.key.deviceName));
  EXPECT_TRUE(contains(shown.out, "roundtrip"));
  Result none = characterize(tmp, "--show --device no-such-device --db " + db);
  EXPECT_EQ(none.status, 1) << none.out << none.err;

  // A fit that misses its points is flagged where the results are shown.
  {
    std::string error;
    auto rw = Db::open(db, Db::Mode::ReadWriteCreate, &error);
    ASSERT_TRUE(rw) << error;
    ASSERT_TRUE(rw->exec(
        "UPDATE char_fits SET rms_rel_err = 0.45, max_rel_err = 0.8, outliers = 2 WHERE measure "
        "= 'h2d' AND policy = 'standard' AND concurrency = 1",
        &error))
        << error;
  }
  Result rough = characterize(tmp, "--show --db " + db);
  ASSERT_EQ(rough.status, 0) << rough.out << rough.err;
  EXPECT_TRUE(contains(
      rough.out, "  warning: the h2d standard x1 fit misses its medians by 45% RMS (80% at worst)"))
      << rough.out;
  // So are the medians a fit set aside.
  EXPECT_TRUE(contains(rough.out, " medians set aside as outliers (in ")) << rough.out;
  EXPECT_TRUE(contains(rough.out, " curves), each over 1.5x off the sizes on both sides of it"))
      << rough.out;
}

// On a terminal (a pty made by script(1)), every phase has its bar, redrawn during the transfer
// phase too (per direction and concurrency), with the time the phase has left.
TEST(CharacterizeCli, TerminalShowsEachPhasesBarWithTimeLeft) {
  if (std::system("command -v script >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "needs script (util-linux)";
  TempDir tmp;
  const std::string cmd = "script -qefc '" HETOPT_BIN " characterize --quick --no-plots --db " +
                          tmp.file("pty.db") + "' /dev/null >" + tmp.file("pty") +
                          " 2>&1 </dev/null";
  int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << slurp(tmp.file("pty"));
  const std::string out = slurp(tmp.file("pty"));
  size_t allocation = 0, transfers = 0, withEstimate = 0, steps = 0;
  for (size_t at = out.find("\r\033[K  "); at != std::string::npos;
       at = out.find("\r\033[K  ", at + 1)) {
    const std::string draw = out.substr(at, out.find_first_of("\r\n", at + 1) - at);
    if (draw.find("allocation  [") != std::string::npos) ++allocation;
    if (draw.find("transfers   [") == std::string::npos) continue;
    ++transfers;
    if (draw.find(" s left") != std::string::npos) ++withEstimate;
    if (draw.find(" d2h x4") != std::string::npos) ++steps;
  }
  EXPECT_GE(allocation, 1u) << out;
  EXPECT_GE(transfers, 5u) << out;
  EXPECT_GE(withEstimate, 3u) << out;
  EXPECT_GE(steps, 1u) << out;  // drawn between the steps of one size, not only after it
}

TEST(CharacterizeCli, LockedMemoryLimitMakesMlockPoliciesUnavailable) {
  // Root keeps CAP_IPC_LOCK, which ignores RLIMIT_MEMLOCK: drop it for the child as well.
  std::string prefix = "prlimit --memlock=0";
  if (geteuid() == 0) prefix = "setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock " + prefix;
  if (std::system(("command -v prlimit >/dev/null && command -v setpriv >/dev/null")) != 0)
    GTEST_SKIP() << "needs prlimit and setpriv (util-linux)";
  TempDir tmp;
  const std::string db = tmp.file("hetopt.db");
  Result r = characterize(tmp, "--quick --max-size 64K --no-plots --db " + db, prefix);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "locked: unavailable")) << r.out;
  EXPECT_TRUE(contains(r.out, "hybrid: unavailable")) << r.out;
  std::vector<CharacterizationRun> runs = loadRuns(db);
  ASSERT_EQ(runs.size(), 1u);
  for (PolicyKind p : {PolicyKind::Locked, PolicyKind::Hybrid}) {
    const PolicyAvailability* a = runs[0].findPolicy(p);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->state, PolicyAvailability::State::Unavailable) << policyName(p);
    EXPECT_TRUE(contains(a->reason, "RLIMIT_MEMLOCK")) << a->reason;
    EXPECT_EQ(runs[0].findFit(Measure::H2D, p, 1), nullptr);
  }
  EXPECT_EQ(runs[0].findPolicy(PolicyKind::Standard)->state, PolicyAvailability::State::Available);
  EXPECT_EQ(runs[0].info.memlockLimit, 0u);
  for (const Decision& d : runs[0].decisions) {
    EXPECT_NE(d.policy, PolicyKind::Locked);
    EXPECT_NE(d.policy, PolicyKind::Hybrid);
  }
}

// What the measurements hold stays under --max-memory, and the run says how much it holds: its
// peak resident memory is the budget above that of a run measuring next to nothing.
TEST(CharacterizeCli, PeakMemoryStaysWithinTheBudgetItStates) {
  TempDir tmp;
  Result base = characterize(tmp, "--quick --max-size 4K --no-plots --db " + tmp.file("a.db"));
  ASSERT_EQ(base.status, 0) << base.out << base.err;
  Result r = characterize(tmp, "--quick --max-memory 48M --no-plots --db " + tmp.file("b.db"));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(
      contains(r.err, "  memory: at most 48 MiB held at once (budget 48 MiB: --max-memory)"))
      << r.err;
  EXPECT_TRUE(contains(r.err, ", the policies are measured ")) << r.err;
  ASSERT_GT(base.maxRssKiB, 0);
  EXPECT_LE(r.maxRssKiB - base.maxRssKiB, (48 + 8) * 1024)
      << "peak " << r.maxRssKiB << " KiB, " << base.maxRssKiB << " KiB measuring 4 KiB";
  std::vector<CharacterizationRun> runs = loadRuns(tmp.file("b.db"));
  ASSERT_EQ(runs.size(), 1u);
  const Fit* top = runs[0].findFit(Measure::H2D, PolicyKind::Standard, 1);
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->fn.sizeMax, 16 << 20);  // quick's sizes, with fewer policies at once
}

TEST(CharacterizeCli, CorruptDbIsOneClearErrorBeforeMeasuring) {
  TempDir tmp;
  const std::string db = tmp.file("hetopt.db");
  {
    std::ofstream out(db, std::ios::binary);
    out << std::string(4096, '\x5a');
  }
  chmod(db.c_str(), 0600);
  Result r = characterize(tmp, "--quick --no-plots --db " + db);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, db)) << r.err;
  EXPECT_TRUE(contains(r.err, "not a readable hetopt DB")) << r.err;
  EXPECT_FALSE(contains(r.out, "decisions")) << r.out;
  Result shown = characterize(tmp, "--show --db " + db);
  EXPECT_EQ(shown.status, 2);
}

TEST(CharacterizeCli, BadArgumentsExit2AndHelpExits0) {
  TempDir tmp;
  EXPECT_EQ(characterize(tmp, "--max-size lots").status, 2);
  EXPECT_EQ(characterize(tmp, "--plot-format gif").status, 2);
  EXPECT_EQ(characterize(tmp, "--frobnicate").status, 2);
  Result nodev = characterize(tmp, "--device no-such-device --db " + tmp.file("x.db"));
  EXPECT_EQ(nodev.status, 2);
  EXPECT_TRUE(contains(nodev.err, "no OpenCL device matches")) << nodev.err;
  Result help = characterize(tmp, "--help");
  EXPECT_EQ(help.status, 0);
  EXPECT_TRUE(contains(help.out, "--quick"));
}

}  // namespace
}  // namespace hetopt::characterize
