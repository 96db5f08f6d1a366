// SPDX-License-Identifier: MIT
/** @file hetopt's DB file: permissions, schema versions, foreign and corrupt files. */
#include "store/db.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "contracts/db_schema.h"
#include "hetopt/version.h"
#include "tests/common/temp_dir.h"
#include "tests/store/db_describe.h"

namespace hetopt {
namespace {

using testing::TempDir;

mode_t modeOf(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0;
}

void writeBytes(const std::string& path, const std::string& bytes, mode_t mode = 0600) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, mode);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
  chmod(path.c_str(), mode);
}

/// A DB written by hetopt of schema `version` (`sql` makes its tables as that version did): refused
/// read-only (saying how to upgrade), then opened for writing, which upgrades it in place.
std::unique_ptr<Db> upgradedFrom(TempDir& tmp, int version, const std::string& sql) {
  const std::string path = tmp.file("v" + std::to_string(version) + ".db");
  std::string error;
  {
    auto db = Db::open(path, Db::Mode::ReadWriteCreate, &error);
    EXPECT_TRUE(db) << error;
    if (!db) return nullptr;
    EXPECT_TRUE(db->exec("UPDATE hetopt_meta SET value = '" + std::to_string(version) +
                             "' WHERE key = 'schema_version'; " + sql,
                         &error))
        << error;
  }
  EXPECT_FALSE(Db::open(path, Db::Mode::ReadOnly, &error));
  EXPECT_NE(error.find("upgrades it in place"), std::string::npos) << error;
  auto db = Db::open(path, Db::Mode::ReadWriteCreate, &error);
  EXPECT_TRUE(db) << error;
  return db;
}

TEST(Db, CreatesPrivateDirsAndFileThenReopens) {
  TempDir tmp;
  std::string path = tmp.file("a/b/hetopt.db");
  std::string error;
  {
    auto db = Db::open(path, Db::Mode::ReadWriteCreate, &error);
    ASSERT_TRUE(db) << error;
    ASSERT_TRUE(db->exec("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (42)", &error)) << error;
  }
  EXPECT_EQ(modeOf(tmp.file("a")), 0700u);
  EXPECT_EQ(modeOf(tmp.file("a/b")), 0700u);
  EXPECT_EQ(modeOf(path), 0600u);
  auto db = Db::open(path, Db::Mode::ReadOnly, &error);
  ASSERT_TRUE(db) << error;
  DbStatement q(*db, "SELECT x FROM t");
  ASSERT_EQ(q.step(), DbStatement::Step::Row);
  EXPECT_EQ(q.columnInt(0), 42);
  DbStatement meta(*db, "SELECT value FROM hetopt_meta WHERE key = 'schema_version'");
  ASSERT_EQ(meta.step(), DbStatement::Step::Row);
  EXPECT_EQ(meta.columnText(0), std::to_string(kDbSchemaVersion));
  // Read-only really is read-only.
  EXPECT_FALSE(db->exec("INSERT INTO t VALUES (1)", &error));
}

TEST(Db, MissingFileInReadOnlyModeSaysWhatToDo) {
  TempDir tmp;
  std::string error;
  EXPECT_FALSE(Db::open(tmp.file("none.db"), Db::Mode::ReadOnly, &error));
  EXPECT_NE(error.find("hetopt characterize"), std::string::npos) << error;
  EXPECT_NE(error.find(tmp.file("none.db")), std::string::npos) << error;
}

TEST(Db, RefusesAFileOthersCanWrite) {
  TempDir tmp;
  std::string path = tmp.file("shared.db");
  std::string error;
  ASSERT_TRUE(Db::open(path, Db::Mode::ReadWriteCreate, &error)) << error;
  chmod(path.c_str(), 0666);
  EXPECT_FALSE(Db::open(path, Db::Mode::ReadWriteCreate, &error));
  EXPECT_NE(error.find("writable by others"), std::string::npos) << error;
}

TEST(Db, GarbageFileIsOneClearError) {
  TempDir tmp;
  std::string path = tmp.file("garbage.db");
  writeBytes(path, std::string(8192, 'x'));
  std::string error;
  EXPECT_FALSE(Db::open(path, Db::Mode::ReadWriteCreate, &error));
  EXPECT_NE(error.find("not a readable hetopt DB"), std::string::npos) << error;
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(Db, DamagedPagesAreCaught) {
  TempDir tmp;
  std::string path = tmp.file("damaged.db");
  std::string error;
  {
    auto db = Db::open(path, Db::Mode::ReadWriteCreate, &error);
    ASSERT_TRUE(db) << error;
    ASSERT_TRUE(db->exec("CREATE TABLE t (x TEXT); CREATE INDEX ti ON t(x)", &error));
    DbTransaction tx(*db, &error);
    for (int i = 0; i < 200; ++i)
      ASSERT_TRUE(
          db->exec("INSERT INTO t VALUES ('" + std::string(100, 'a' + i % 26) + "')", &error));
    ASSERT_TRUE(tx.commit(&error)) << error;
  }
  // Keep the 100-byte header intact, overwrite everything after the first page.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes.size(), 8192u);
  for (size_t i = 4096; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131);
  writeBytes(path, bytes);
  EXPECT_FALSE(Db::open(path, Db::Mode::ReadWriteCreate, &error));
  EXPECT_NE(error.find("not a readable hetopt DB"), std::string::npos) << error;
}

TEST(Db, ForeignSqliteFileIsNotTouched) {
  TempDir tmp;
  std::string path = tmp.file("other.db");
  std::string error;
  {
    auto db = Db::open(path, Db::Mode::ReadWriteCreate, &error);
    ASSERT_TRUE(db) << error;
    ASSERT_TRUE(db->exec("PRAGMA application_id = 12345", &error));
  }
  EXPECT_FALSE(Db::open(path, Db::Mode::ReadWriteCreate, &error));
  EXPECT_NE(error.find("not a hetopt DB"), std::string::npos) << error;
}

TEST(Db, OtherSchemaVersionsNameBothVersions) {
  // 0: older than any version with an in-place upgrade.
  for (int other : {kDbSchemaVersion + 1, 0}) {
    TempDir tmp;
    std::string path = tmp.file("v.db");
    std::string error;
    {
      auto db = Db::open(path, Db::Mode::ReadWriteCreate, &error);
      ASSERT_TRUE(db) << error;
      ASSERT_TRUE(db->exec("UPDATE hetopt_meta SET value = '" + std::to_string(other) +
                               "' WHERE key = 'schema_version'; UPDATE hetopt_meta SET value = "
                               "'hetopt 9.9.9' WHERE key = 'created_by'",
                           &error))
          << error;
    }
    EXPECT_FALSE(Db::open(path, Db::Mode::ReadWriteCreate, &error));
    EXPECT_NE(error.find("schema version " + std::to_string(other)), std::string::npos) << error;
    EXPECT_NE(error.find("schema version " + std::to_string(kDbSchemaVersion)), std::string::npos)
        << error;
    EXPECT_NE(error.find("hetopt 9.9.9"), std::string::npos) << error;
    EXPECT_NE(error.find(HETOPT_VERSION_STRING), std::string::npos) << error;
    EXPECT_EQ(error.find("newer hetopt") != std::string::npos, other > kDbSchemaVersion) << error;
  }
}

// Schema 1 -> 2 (in-place registration) adds columns to app_untracked: a DB written by
// the previous hetopt keeps its characterization and profiles when opened for writing, and is
// refused (saying how to upgrade it) when opened read-only.
TEST(Db, Version1IsUpgradedInPlaceWhenOpenedForWriting) {
  TempDir tmp;
  auto db = upgradedFrom(tmp, 1,
                         "CREATE TABLE app_untracked (profile_id INTEGER, rank INTEGER, "
                         "kind TEXT NOT NULL); INSERT INTO app_untracked VALUES (7, 0, 'static'); "
                         "CREATE TABLE char_runs (id INTEGER); INSERT INTO char_runs VALUES (42)");
  ASSERT_TRUE(db);
  {
    DbStatement q(*db, "SELECT value FROM hetopt_meta WHERE key = 'schema_version'");
    ASSERT_EQ(q.step(), DbStatement::Step::Row);
    EXPECT_EQ(q.columnText(0), std::to_string(kDbSchemaVersion));
  }
  {
    DbStatement q(*db, "SELECT kind, module_key, gain_known, gain_note FROM app_untracked");
    ASSERT_TRUE(q.ok()) << q.error();
    ASSERT_EQ(q.step(), DbStatement::Step::Row);
    EXPECT_EQ(q.columnText(0), "static");
    EXPECT_EQ(q.columnInt(1), 0);
    EXPECT_EQ(q.columnInt(2), 0);
  }
  DbStatement runs(*db, "SELECT id FROM char_runs");
  ASSERT_EQ(runs.step(), DbStatement::Step::Row);
  EXPECT_EQ(runs.columnInt(0), 42);
  db.reset();
  std::string error;
  EXPECT_TRUE(Db::open(tmp.file("v1.db"), Db::Mode::ReadOnly, &error)) << error;
}

// Schema 2 -> 3 adds the program's contexts to app_profiles (the run's early context): stored
// profiles are kept, with none known.
TEST(Db, Version2ProfilesAreUpgradedWithNoContextsKnown) {
  TempDir tmp;
  auto db = upgradedFrom(tmp, 2,
                         "CREATE TABLE app_profiles (id INTEGER PRIMARY KEY, program_path TEXT); "
                         "INSERT INTO app_profiles VALUES (3, '/opt/app')");
  ASSERT_TRUE(db);
  DbStatement q(*db, "SELECT program_path, contexts, first_context_devices FROM app_profiles");
  ASSERT_TRUE(q.ok()) << q.error();
  ASSERT_EQ(q.step(), DbStatement::Step::Row);
  EXPECT_EQ(q.columnText(0), "/opt/app");
  EXPECT_EQ(q.columnInt(1), 0);
  EXPECT_EQ(q.columnInt(2), 0);
}

// Schema 3 -> 4 adds how early each site's first block can be pinned to app_sites: stored sites
// are kept, with nothing known (priced as before: every registration on the critical path).
TEST(Db, Version3SitesAreUpgradedWithNoLeadKnown) {
  TempDir tmp;
  auto db =
      upgradedFrom(tmp, 3,
                   "CREATE TABLE app_sites (profile_id INTEGER, rank INTEGER, site_key INTEGER); "
                   "INSERT INTO app_sites VALUES (3, 0, 77)");
  ASSERT_TRUE(db);
  DbStatement q(*db, "SELECT site_key, allocated_before_opencl, lead_ns FROM app_sites");
  ASSERT_TRUE(q.ok()) << q.error();
  ASSERT_EQ(q.step(), DbStatement::Step::Row);
  EXPECT_EQ(q.columnInt(0), 77);
  EXPECT_EQ(q.columnInt(1), 0);
  EXPECT_EQ(q.columnInt(2), 0);
}

// Schema 5 -> 6: run records (`hetopt report`) extend app_run_breakdowns and what tracing cost
// joins app_profiles; bars stored before keep their label and numbers, with no record.
TEST(Db, Version5RunBreakdownsKeepTheirBars) {
  TempDir tmp;
  auto db = upgradedFrom(tmp, 5,
                         "CREATE TABLE app_profiles (id INTEGER PRIMARY KEY, program_path TEXT); "
                         "CREATE TABLE app_run_breakdowns (profile_id INTEGER, label TEXT, "
                         "total_ns REAL, PRIMARY KEY (profile_id, label)); "
                         "INSERT INTO app_profiles VALUES (3, '/opt/app'); "
                         "INSERT INTO app_run_breakdowns VALUES (3, 'optimized', 5.0)");
  ASSERT_TRUE(db);
  DbStatement q(*db, "SELECT label, total_ns, wall_ns, plan_id, writer FROM app_run_breakdowns");
  ASSERT_TRUE(q.ok()) << q.error();
  ASSERT_EQ(q.step(), DbStatement::Step::Row);
  EXPECT_EQ(q.columnText(0), "optimized");
  EXPECT_DOUBLE_EQ(q.columnDouble(1), 5.0);
  EXPECT_EQ(q.columnInt(2), 0);
  EXPECT_EQ(q.columnInt(3), 0);
  EXPECT_EQ(q.columnText(4), "");
  DbStatement p(*db, "SELECT program_path, recording_ns FROM app_profiles");
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p.step(), DbStatement::Step::Row);
  EXPECT_DOUBLE_EQ(p.columnDouble(1), 0);
}

// Schema 6 -> 7: runs get a kind (untouched runs beside optimized ones) and an exit status; the
// runs stored before were all optimized, and read so.
TEST(Db, Version6RunsAreUpgradedAsOptimizedRuns) {
  TempDir tmp;
  auto db = upgradedFrom(
      tmp, 6,
      "CREATE TABLE app_run_breakdowns (profile_id INTEGER, label TEXT, "
      "wall_ns INTEGER, PRIMARY KEY (profile_id, label)); "
      "INSERT INTO app_run_breakdowns VALUES (3, 'optimized 2026-11-25 18:36:12 pid 7', 5)");
  ASSERT_TRUE(db);
  DbStatement q(*db, "SELECT label, wall_ns, kind, exit_status FROM app_run_breakdowns");
  ASSERT_TRUE(q.ok()) << q.error();
  ASSERT_EQ(q.step(), DbStatement::Step::Row);
  EXPECT_EQ(q.columnText(0), "optimized 2026-11-25 18:36:12 pid 7");
  EXPECT_EQ(q.columnInt(1), 5);
  EXPECT_EQ(q.columnText(2), "optimized");
  EXPECT_EQ(q.columnInt(3), 0);
}

// A v1 DB with only a characterization (no profile tables yet) is upgraded too.
TEST(Db, Version1WithoutProfilesIsUpgraded) {
  TempDir tmp;
  std::string path = tmp.file("v1c.db");
  std::string error;
  {
    auto db = Db::open(path, Db::Mode::ReadWriteCreate, &error);
    ASSERT_TRUE(db) << error;
    ASSERT_TRUE(
        db->exec("UPDATE hetopt_meta SET value = '1' WHERE key = 'schema_version'", &error));
  }
  EXPECT_TRUE(Db::open(path, Db::Mode::ReadWriteCreate, &error)) << error;
  EXPECT_TRUE(Db::open(path, Db::Mode::ReadOnly, &error)) << error;
}

TEST(Db, TransactionRollsBackUnlessCommitted) {
  TempDir tmp;
  std::string error;
  auto db = Db::open(tmp.file("tx.db"), Db::Mode::ReadWriteCreate, &error);
  ASSERT_TRUE(db) << error;
  ASSERT_TRUE(db->exec("CREATE TABLE t (x INTEGER)", &error));
  {
    DbTransaction tx(*db, &error);
    ASSERT_TRUE(tx.ok()) << error;
    ASSERT_TRUE(db->exec("INSERT INTO t VALUES (1)", &error));
  }
  {
    DbTransaction tx(*db, &error);
    ASSERT_TRUE(db->exec("INSERT INTO t VALUES (2)", &error));
    ASSERT_TRUE(tx.commit(&error)) << error;
  }
  DbStatement q(*db, "SELECT group_concat(x) FROM t");
  ASSERT_EQ(q.step(), DbStatement::Step::Row);
  EXPECT_EQ(q.columnText(0), "2");
  DbStatement bad(*db, "SELECT nope FROM t");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.step(), DbStatement::Step::Error);
  EXPECT_FALSE(bad.error().empty());
}

// Schema 4 -> 5 adds what an interpreter ran (and the executable, for scripts and named profiles)
// and the forks to app_profiles: stored profiles are kept as programs without a script.
TEST(Db, Version4ProfilesAreUpgradedAsProgramsWithoutScripts) {
  TempDir tmp;
  auto db = upgradedFrom(tmp, 4,
                         "CREATE TABLE app_profiles (id INTEGER PRIMARY KEY, program_path TEXT); "
                         "INSERT INTO app_profiles VALUES (3, '/opt/app')");
  ASSERT_TRUE(db);
  DbStatement q(*db,
                "SELECT program_path, executable, script_kind, script, script_hash, "
                "forked_children FROM app_profiles");
  ASSERT_TRUE(q.ok()) << q.error();
  ASSERT_EQ(q.step(), DbStatement::Step::Row);
  EXPECT_EQ(q.columnText(0), "/opt/app");
  EXPECT_EQ(q.columnText(1), "");
  EXPECT_EQ(q.columnInt(2), 0);
  EXPECT_EQ(q.columnText(3), "");
  EXPECT_EQ(q.columnInt(5), 0);
}

// A DB of every older schema version, its application tables as that version made them (the
// columns added since left out), upgraded in place: the tables then are what a new DB gets, column
// for column, and the rows stored before are kept.
TEST(Db, EveryOlderVersionUpgradesToTheTablesOfANewDb) {
  TempDir tmp;
  std::string error;
  auto fresh = Db::open(tmp.file("new.db"), Db::Mode::ReadWriteCreate, &error);
  ASSERT_TRUE(fresh) << error;
  ASSERT_TRUE(fresh->exec(createTablesSql(dbTables()), &error)) << error;
  const std::string expected = testing::describeTables(*fresh, dbTables());
  ASSERT_NE(expected.find("app_profiles table_info: 40 recording_ns REAL 1 0"), std::string::npos)
      << expected;
  for (int version = 1; version < kDbSchemaVersion; ++version) {
    const std::string path = tmp.file("v" + std::to_string(version) + ".db");
    {
      auto db = Db::open(path, Db::Mode::ReadWriteCreate, &error);
      ASSERT_TRUE(db) << error;
      std::string sql = "UPDATE hetopt_meta SET value = '" + std::to_string(version) +
                        "' WHERE key = 'schema_version'; ";
      for (const DbTable& t : dbTables()) {
        sql += std::string("CREATE TABLE ") + t.name + " (";
        for (const DbColumn& c : t.columns)
          if (c.since <= version) sql += std::string(c.name) + " " + c.type + ", ";
        sql += std::string(t.constraints) + "); " + t.extra;
      }
      sql +=
          "INSERT INTO app_profiles (id, program_path, program_key, build_id, content_hash, "
          "device, "
          "trace_file, created_utc, hetopt_version, eligible, threshold, communication_ns, "
          "computation_ns, reason, has_device_times, total_ns, kernel_ns, comm_part_ns, "
          "cpu_sync_ns, "
          "h2d_ns, d2h_ns, launch_ns, dispatch_sync_ns, kernels, host_only_sites, "
          "host_only_allocations, tracked_allocations, warnings) VALUES (9, '/opt/app', 'k', '', "
          "'', "
          "'gpu', 't', 'u', 'v', 1, 1, 2, 3, 'r', 1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, '')";
      ASSERT_TRUE(db->exec(sql, &error)) << version << ": " << error;
    }
    auto db = Db::open(path, Db::Mode::ReadWriteCreate, &error);
    ASSERT_TRUE(db) << version << ": " << error;
    EXPECT_EQ(testing::describeTables(*db, dbTables()), expected)
        << "upgraded from version " << version;
    DbStatement q(
        *db,
        "SELECT program_path, kernels, recording_ns, executable FROM app_profiles WHERE id = 9");
    ASSERT_EQ(q.step(), DbStatement::Step::Row) << q.error();
    EXPECT_EQ(q.columnText(0), "/opt/app");
    EXPECT_EQ(q.columnInt(1), 12);
    EXPECT_EQ(q.columnDouble(2), 0);
    EXPECT_EQ(q.columnText(3), "");
  }
}

}  // namespace
}  // namespace hetopt
