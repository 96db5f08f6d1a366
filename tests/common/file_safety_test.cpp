// SPDX-License-Identifier: MIT
/**
 * @file hetopt's own files against another user: a symbolic link planted at the path of a trace,
 * plan, DB or plot is never followed; files and directories that others can write or that belong
 * to someone else are refused; what hetopt creates is 0600 / 0700.
 */
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "common/paths.h"
#include "common/private_file.h"
#include "contracts/plan.h"
#include "store/db.h"

namespace hetopt {
namespace {

class FileSafety : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hetopt-safety-XXXXXX";
    ASSERT_TRUE(mkdtemp(dir));
    m_dir = dir;
    // What a link would redirect a write to: a file of this user's that must stay untouched.
    m_victim = m_dir + "/victim";
    std::ofstream(m_victim) << "precious\n";
  }
  void TearDown() override { system(("rm -rf '" + m_dir + "'").c_str()); }
  std::string victim() const {
    std::ifstream in(m_victim);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static mode_t modeOf(const std::string& path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
  }
  Plan samplePlan() const {
    Plan p;
    p.programPath = "/bin/true";
    p.programKey = "sha256:00";
    p.poolBytes = 1 << 20;
    PlanSite site;
    site.key = 1;
    site.maxBytes = 10;
    p.sites = {site};
    return p;
  }
  std::string m_dir, m_victim;
};

TEST_F(FileSafety, PrivateFileRefusesALinkAndLeavesItsTargetAlone) {
  const std::string link = m_dir + "/out";
  ASSERT_EQ(symlink(m_victim.c_str(), link.c_str()), 0);
  const char* why = nullptr;
  EXPECT_EQ(openPrivateFile(link.c_str(), true, false, &why), -1);
  EXPECT_STREQ(why, "is a symbolic link; refusing to write through it");
  std::string error;
  EXPECT_FALSE(writePrivateFile(link, "x", &error));
  EXPECT_EQ(error, "cannot write " + link + ": is a symbolic link; refusing to write through it");
  // A dangling link (the usual plant: pointing where the victim will write next) too.
  const std::string dangling = m_dir + "/dangling";
  ASSERT_EQ(symlink((m_dir + "/not-yet").c_str(), dangling.c_str()), 0);
  EXPECT_FALSE(writePrivateFile(dangling, "x", &error));
  EXPECT_NE(access((m_dir + "/not-yet").c_str(), F_OK), 0);
  EXPECT_EQ(victim(), "precious\n");
}

TEST_F(FileSafety, PrivateFileRefusesHardLinksFifosAndOthersFiles) {
  std::string error;
  const std::string hard = m_dir + "/hard";
  ASSERT_EQ(link(m_victim.c_str(), hard.c_str()), 0);
  EXPECT_FALSE(writePrivateFile(hard, "x", &error));
  EXPECT_NE(error.find("other hard links"), std::string::npos) << error;
  EXPECT_EQ(victim(), "precious\n");
  // A FIFO must not block the program (no reader) nor be written.
  const std::string fifo = m_dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(writePrivateFile(fifo, "x", &error));
  // A file of ours with loose permissions is tightened; /dev/null stays usable.
  const std::string loose = m_dir + "/loose";
  std::ofstream(loose) << "old";
  chmod(loose.c_str(), 0666);
  ASSERT_TRUE(writePrivateFile(loose, "new", &error)) << error;
  EXPECT_EQ(modeOf(loose), 0600u);
  const char* why = nullptr;
  int fd = openPrivateFile("/dev/null", false, true, &why);
  EXPECT_GE(fd, 0) << why;
  close(fd);
  if (geteuid() != 0) GTEST_SKIP() << "giving a file to another user needs root";
  struct passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  const std::string theirs = m_dir + "/theirs";
  std::ofstream(theirs) << "theirs";
  ASSERT_EQ(chown(theirs.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  EXPECT_FALSE(writePrivateFile(theirs, "x", &error));
  EXPECT_NE(error.find("belongs to another user"), std::string::npos) << error;
}

TEST_F(FileSafety, DirectoriesAreCreatedPrivateAndSharedOnesRefused) {
  std::string error;
  const std::string dir = m_dir + "/a/b/c";
  ASSERT_TRUE(makePrivateDirs(dir, &error)) << error;
  EXPECT_EQ(modeOf(m_dir + "/a"), 0700u);
  EXPECT_EQ(modeOf(dir), 0700u);
  chmod(dir.c_str(), 0777);  // another user could swap the files in it
  EXPECT_FALSE(makePrivateDirs(dir, &error));
  EXPECT_NE(error.find("writable by others"), std::string::npos) << error;
  chmod(dir.c_str(), 01777);  // sticky, as /tmp: others cannot replace our files
  EXPECT_TRUE(makePrivateDirs(dir, &error)) << error;
}

TEST_F(FileSafety, DbRefusesALinkAndFilesOthersCanWrite) {
  std::string error;
  const std::string db = m_dir + "/hetopt.db";
  ASSERT_TRUE(Db::open(db, Db::Mode::ReadWriteCreate, &error)) << error;
  EXPECT_EQ(modeOf(db), 0600u);
  const std::string link = m_dir + "/link.db";
  ASSERT_EQ(symlink(db.c_str(), link.c_str()), 0);
  for (Db::Mode mode : {Db::Mode::ReadOnly, Db::Mode::ReadWriteCreate}) {
    EXPECT_FALSE(Db::open(link, mode, &error));
    EXPECT_EQ(error,
              link + " is a symbolic link; refusing to use it as the DB (name the file itself)");
  }
  // A link to a file that does not exist yet must not be created through.
  const std::string dangling = m_dir + "/dangling.db";
  ASSERT_EQ(symlink((m_dir + "/elsewhere.db").c_str(), dangling.c_str()), 0);
  EXPECT_FALSE(Db::open(dangling, Db::Mode::ReadWriteCreate, &error));
  EXPECT_NE(access((m_dir + "/elsewhere.db").c_str(), F_OK), 0);
  for (mode_t loose : {0620, 0602}) {
    chmod(db.c_str(), loose);
    EXPECT_FALSE(Db::open(db, Db::Mode::ReadOnly, &error));
    EXPECT_NE(error.find("writable by others"), std::string::npos) << error;
  }
  chmod(db.c_str(), 0600);
  chmod(m_dir.c_str(), 0777);
  EXPECT_FALSE(Db::open(db, Db::Mode::ReadOnly, &error));
  EXPECT_NE(error.find("directory " + m_dir + " is writable by others"), std::string::npos)
      << error;
  chmod(m_dir.c_str(), 0700);
  EXPECT_TRUE(Db::open(db, Db::Mode::ReadOnly, &error)) << error;
}

TEST_F(FileSafety, PlanFilesAreNeitherWrittenNorReadThroughLinks) {
  std::string error;
  const std::string plan = m_dir + "/p.plan", link = m_dir + "/link.plan";
  ASSERT_TRUE(writePlanFile(plan, samplePlan(), &error)) << error;
  EXPECT_EQ(modeOf(plan), 0600u);
  ASSERT_EQ(symlink(plan.c_str(), link.c_str()), 0);
  Plan read;
  EXPECT_FALSE(readPlanFile(link, &read, &error));
  EXPECT_EQ(error, link + " is a symbolic link; refusing it");
  ASSERT_EQ(unlink(link.c_str()), 0);
  ASSERT_EQ(symlink(m_victim.c_str(), link.c_str()), 0);
  EXPECT_FALSE(writePlanFile(link, samplePlan(), &error));
  EXPECT_EQ(victim(), "precious\n");
  chmod(plan.c_str(), 0660);
  EXPECT_FALSE(readPlanFile(plan, &read, &error));
  chmod(plan.c_str(), 0600);
  EXPECT_TRUE(readPlanFile(plan, &read, &error)) << error;
}

}  // namespace
}  // namespace hetopt
