// SPDX-License-Identifier: MIT
/**
 * @file The DB's tables as data (contracts/db_schema.h): the statements made from one column list,
 * and the rules that keep in-place upgrades possible. That the SQL runs and upgrades old DBs is
 * tests/store/db_test.cpp's; that the characterization's tables are those older hetopts made,
 * tests/characterize/records_test.cpp's.
 */
#include "contracts/db_schema.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace hetopt;

TEST(DbSchema, StatementsComeFromTheColumnList) {
  const DbTable* launchers = dbTable("app_launchers");
  ASSERT_NE(launchers, nullptr);
  EXPECT_EQ(launchers->insertSql(),
            "INSERT INTO app_launchers (launcher_path, launcher_key, created_utc) VALUES "
            "(:launcher_path, :launcher_key, :created_utc)");  // the row id is SQLite's
  EXPECT_EQ(launchers->selectSql("WHERE id=?"),
            "SELECT id, launcher_path, launcher_key, created_utc FROM app_launchers WHERE id=?");
  EXPECT_EQ(launchers->columnIndex("launcher_key"), 2);
  EXPECT_EQ(launchers->columnIndex("nope"), -1);
  EXPECT_EQ(
      launchers->createSql(),
      "CREATE TABLE IF NOT EXISTS app_launchers (id INTEGER PRIMARY KEY, launcher_path TEXT NOT "
      "NULL, launcher_key TEXT NOT NULL, created_utc TEXT NOT NULL, UNIQUE (launcher_path, "
      "launcher_key));");
  EXPECT_EQ(
      dbTable("app_run_sites")->insertSql(true).rfind("INSERT OR REPLACE INTO app_run_sites (", 0),
      0u);
  EXPECT_EQ(dbTable("nope"), nullptr);
}

TEST(DbSchema, AnUpgradeAddsTheColumnsOfItsVersion) {
  EXPECT_EQ(dbTable("app_profiles")->upgradeSql(6),
            "ALTER TABLE app_profiles ADD COLUMN recording_ns REAL NOT NULL DEFAULT 0; ");
  EXPECT_EQ(dbTable("app_sites")->upgradeSql(4),
            "ALTER TABLE app_sites ADD COLUMN allocated_before_opencl INTEGER NOT NULL DEFAULT 0; "
            "ALTER TABLE app_sites ADD COLUMN lead_ns INTEGER NOT NULL DEFAULT 0; ");
  EXPECT_EQ(dbTable("app_sites")->upgradeSql(6), "");
  // Every version since the first adds something to some table: the upgrade tests cover each.
  for (int v = 2; v <= kDbSchemaVersion; ++v) {
    std::string all;
    for (const DbTable& t : dbTables()) all += t.upgradeSql(v);
    EXPECT_NE(all, "") << v;
  }
}

// What makes an upgrade possible: added columns have defaults (ALTER TABLE needs one for NOT
// NULL) and come after the original ones (ALTER TABLE appends: an upgraded table then has the
// order of a new one); no column is named twice; no version is from the future.
TEST(DbSchema, AddedColumnsHaveDefaultsAndComeLast) {
  for (const DbTable& t : dbTables()) {
    std::set<std::string> names;
    int lastSince = 0;
    for (const DbColumn& c : t.columns) {
      EXPECT_TRUE(names.insert(c.name).second) << t.name << "." << c.name;
      EXPECT_LE(c.since, kDbSchemaVersion) << t.name << "." << c.name;
      EXPECT_GE(c.since, lastSince) << t.name << "." << c.name << " comes before older additions";
      lastSince = c.since;
      if (c.since > 0) {
        EXPECT_NE(std::string(c.type).find("DEFAULT"), std::string::npos)
            << t.name << "." << c.name;
      }
    }
  }
  EXPECT_EQ(appTables().size(), 9u);
  EXPECT_NE(createTablesSql(appTables()).find("CREATE INDEX IF NOT EXISTS app_sites_by_key"),
            std::string::npos);
}

TEST(DbSchema, TheCharacterizationsTablesComeFirstAndCascadeFromTheRun) {
  ASSERT_EQ(charTables().size(), 6u);
  EXPECT_EQ(dbTables().size(), charTables().size() + appTables().size());
  for (const DbTable& t : charTables())
    EXPECT_EQ(std::string(t.name).rfind("char_", 0), 0u) << t.name;
  for (const DbTable& t : appTables())
    EXPECT_EQ(std::string(t.name).rfind("app_", 0), 0u) << t.name;
  EXPECT_EQ(
      dbTable("char_policies")->createSql(),
      "CREATE TABLE IF NOT EXISTS char_policies (run_id INTEGER NOT NULL REFERENCES char_runs(id) "
      "ON "
      "DELETE CASCADE, policy TEXT NOT NULL, state TEXT NOT NULL, reason TEXT NOT NULL, max_size "
      "INTEGER NOT NULL, PRIMARY KEY (run_id, policy));");
  EXPECT_EQ(
      dbTable("char_decisions")->insertSql(),
      "INSERT INTO char_decisions (run_id, direction, size_lo, size_hi, policy, alloc, ref_size, "
      "predicted_ns, standard_ns, reason) VALUES (:run_id, :direction, :size_lo, :size_hi, "
      ":policy, "
      ":alloc, :ref_size, :predicted_ns, :standard_ns, :reason)");
  // A table without keys or constraints still makes valid SQL.
  const DbColumn columns[] = {{"a", "INTEGER"}};
  EXPECT_EQ((DbTable{"t", columns}).createSql(), "CREATE TABLE IF NOT EXISTS t (a INTEGER);");
}
