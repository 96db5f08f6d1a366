// SPDX-License-Identifier: MIT
/**
 * @file Rows by column name (store/db_row.h): a column that no field fills, a field without a
 * column and a stored value a member cannot hold each fail naming the column; UINT64_MAX as NULL.
 */
#include "store/db_row.h"

#include <gtest/gtest.h>

#include "tests/common/temp_dir.h"

namespace hetopt {
namespace {

using testing::TempDir;

enum class Colour { Red, Green };
const char* colourName(Colour c) { return c == Colour::Red ? "red" : "green"; }
bool colourFrom(const std::string& name, Colour* out) {
  if (name != "red" && name != "green") return false;
  *out = name == "red" ? Colour::Red : Colour::Green;
  return true;
}

struct Row {
  std::string name;
  Colour colour = Colour::Red;
  uint64_t limit = 0;
};

constexpr DbColumn kColumns[] = {{"owner", "INTEGER NOT NULL"},
                                 {"name", "TEXT NOT NULL"},
                                 {"colour", "TEXT NOT NULL"},
                                 {"limit_bytes", "INTEGER"}};
const DbTable kTable{"rows", kColumns, "PRIMARY KEY (owner, name)"};

const DbField<Row> kFields[] = {
    HETOPT_DB_FIELD(Row, "name", name),
    HETOPT_DB_NAMED(Row, "colour", colour, colourName, colourFrom),
    HETOPT_DB_UNBOUNDED(Row, "limit_bytes", limit),
};

std::unique_ptr<Db> openWithTable(TempDir& tmp) {
  std::string error;
  auto db = Db::open(tmp.file("rows.db"), Db::Mode::ReadWriteCreate, &error);
  EXPECT_TRUE(db) << error;
  if (db) {
    EXPECT_TRUE(db->exec(kTable.createSql(), &error)) << error;
  }
  return db;
}

bool store(Db& db, std::span<const DbField<Row>> fields, const Row& row, std::string* error) {
  DbStatement s(db, kTable.insertSql().c_str());
  s.bind(s.parameterIndex(":owner"), int64_t{7});
  return dbStoreRow(s, fields, row, "storing", error);
}

TEST(DbRow, RowsGoInAndComeBackByColumnName) {
  TempDir tmp;
  auto db = openWithTable(tmp);
  ASSERT_TRUE(db);
  std::string error;
  ASSERT_TRUE(store(*db, kFields, {"a", Colour::Green, UINT64_MAX}, &error)) << error;
  ASSERT_TRUE(store(*db, kFields, {"b", Colour::Red, 1ull << 63}, &error)) << error;
  DbStatement raw(*db, "SELECT colour, limit_bytes IS NULL FROM rows ORDER BY name");
  ASSERT_EQ(raw.step(), DbStatement::Step::Row);
  EXPECT_EQ(raw.columnText(0), "green");
  EXPECT_EQ(raw.columnInt(1), 1);  // no limit is NULL
  DbStatement q(*db, kTable.selectSql("ORDER BY name").c_str());
  std::vector<Row> rows;
  ASSERT_TRUE(dbLoadRows<Row>(q, kTable, kFields, &rows, "loading", &error)) << error;
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].colour, Colour::Green);
  EXPECT_EQ(rows[0].limit, UINT64_MAX);
  EXPECT_EQ(rows[1].name, "b");
  EXPECT_EQ(rows[1].limit, 1ull << 63);
}

// The column list and a field list that disagree fail the first store, naming the column.
TEST(DbRow, AColumnWithoutAFieldFailsTheStoreNamingIt) {
  TempDir tmp;
  auto db = openWithTable(tmp);
  ASSERT_TRUE(db);
  std::string error;
  EXPECT_FALSE(store(*db, std::span(kFields).first(2), {"a", Colour::Green, 1}, &error));
  EXPECT_EQ(error, "storing: no field stores column limit_bytes");
  const DbField<Row> extra[] = {HETOPT_DB_FIELD(Row, "title", name)};
  EXPECT_FALSE(store(*db, extra, {"a", Colour::Green, 1}, &error));
  EXPECT_EQ(error, "storing: no column title in the statement");
  DbStatement count(*db, "SELECT count(*) FROM rows");
  ASSERT_EQ(count.step(), DbStatement::Step::Row);
  EXPECT_EQ(count.columnInt(0), 0);
}

TEST(DbRow, AValueTheMemberCannotHoldIsNamed) {
  TempDir tmp;
  auto db = openWithTable(tmp);
  ASSERT_TRUE(db);
  std::string error;
  ASSERT_TRUE(db->exec("INSERT INTO rows VALUES (1, 'x', 'purple', NULL)", &error)) << error;
  DbStatement q(*db, kTable.selectSql("").c_str());
  std::vector<Row> rows;
  EXPECT_FALSE(dbLoadRows<Row>(q, kTable, kFields, &rows, "loading", &error));
  EXPECT_EQ(error,
            "loading: unknown value 'purple' in rows.colour (DB damaged or from another hetopt)");
  const DbField<Row> missing[] = {HETOPT_DB_FIELD(Row, "title", name)};
  DbStatement again(*db, kTable.selectSql("").c_str());
  EXPECT_FALSE(dbLoadRows<Row>(again, kTable, missing, &rows, "loading", &error));
  EXPECT_EQ(error, "loading: no column title in rows");
}

}  // namespace
}  // namespace hetopt
