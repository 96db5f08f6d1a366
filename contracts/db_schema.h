// SPDX-License-Identifier: MIT
/**
 * @file The tables of hetopt's DB as data (docs/DB.md describes each column): the
 * characterization's (`char_*`) and the application profiles' (`app_*`), one list of columns per
 * table, from which the CREATE TABLE, the INSERT (named parameters `:column`), the SELECT, each
 * column's index and the in-place upgrades are generated. Adding a column is one line here plus
 * the field that fills it (store/db_row.h, in characterize/records.cpp or
 * analyzer/profile_store.cpp: every store fails, naming the column, while it has none) and, when
 * DBs of the previous version exist, a bump of kDbSchemaVersion with `since` set. No SQLite here.
 */
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace hetopt {

/// The one schema version of the whole DB file: any change to any component's tables bumps it.
inline constexpr int kDbSchemaVersion = 10;
/// "HTOP" as a big-endian 32-bit integer, stored in the SQLite header (PRAGMA application_id).
inline constexpr int32_t kDbApplicationId = 0x48544f50;

struct DbColumn {
  const char* name;
  const char*
      type;  ///< SQL type and constraints; "INTEGER PRIMARY KEY": the row id, never inserted
  /// The schema version that added it to an existing table (its type then has a DEFAULT); 0: the
  /// table was created with it. Upgrading a DB from version v adds the columns whose `since` is
  /// v + 1.
  int since = 0;
};

struct DbTable {
  const char* name;
  std::span<const DbColumn> columns;
  const char* constraints = "";  ///< after the columns: keys, UNIQUE, FOREIGN KEY
  const char* extra = "";        ///< statements after the CREATE TABLE (indices)

  /// CREATE TABLE IF NOT EXISTS with every column, then `extra`.
  std::string createSql() const;
  /// INSERT [OR REPLACE] INTO with every column but the row id, as named parameters `:column`.
  std::string insertSql(bool orReplace = false) const;
  /// SELECT of every column, in table order (so columnIndex() is the result's index), then `tail`.
  std::string selectSql(std::string_view tail) const;
  /// The column's index in the table (and in selectSql()'s result); -1 when it has none.
  int columnIndex(std::string_view column) const;
  /// ALTER TABLE ... ADD COLUMN for the columns version `to` added (empty when none).
  std::string upgradeSql(int to) const;
};

/// Every table of the DB, in creation order: charTables(), then appTables().
std::span<const DbTable> dbTables();
/// The characterization's tables (runs, policies, samples, fits, decisions).
std::span<const DbTable> charTables();
/// The application tables (profiles, sites, launchers, runs).
std::span<const DbTable> appTables();
/// The table called `name`; null when none.
const DbTable* dbTable(std::string_view name);
/// CREATE statements for `tables`.
std::string createTablesSql(std::span<const DbTable> tables);

}  // namespace hetopt
