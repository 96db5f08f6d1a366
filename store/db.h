// SPDX-License-Identifier: MIT
/**
 * @file hetopt's SQLite database (the platform DB of `hetopt characterize` and the analyzer's
 * application profiles): opening with the file-safety rules, one schema version for the whole
 * file, and a thin statement wrapper. Tools only; the shim never links SQLite. The tables are
 * described in docs/DB.md and, as data, in contracts/db_schema.h.
 */
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "contracts/db_schema.h"

struct sqlite3;
struct sqlite3_stmt;

namespace hetopt {

class Db {
 public:
  enum class Mode { ReadOnly, ReadWriteCreate };

  /// Opens (or, in ReadWriteCreate mode, creates) the DB at `path`. Creates missing parent
  /// directories 0700 and the file 0600; refuses a file others can write or another user owns.
  /// Returns null with a one-line *error (mentioning `path`) on any failure.
  ///
  /// A hetopt DB is marked by PRAGMA application_id = kDbApplicationId and a `hetopt_meta` table
  /// whose `schema_version` row is kDbSchemaVersion. Opening a DB of another schema version (older
  /// or newer), a foreign SQLite file or a corrupt one fails with one line naming the path and
  /// both versions, except an older DB opened for writing, which is upgraded in place (the columns
  /// each version added, as contracts/db_schema.h lists them; nothing lost). Each component
  /// creates its own tables with CREATE TABLE IF NOT EXISTS after open(); any change to any
  /// component's tables bumps kDbSchemaVersion.
  static std::unique_ptr<Db> open(const std::string& path, Mode mode, std::string* error);
  /// What open() says of a DB file that does not exist (read-only), and what a command that never
  /// creates one says (`hetopt report`): "no hetopt DB at PATH (run `hetopt characterize` first)".
  static std::string missingMessage(const std::string& path);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  /// Runs one or more statements that return no rows. False with *error on failure.
  bool exec(const std::string& sql, std::string* error);
  /// Whether the DB has a table called `name`; false with *error when it cannot be read.
  bool hasTable(const std::string& name, bool* has, std::string* error);
  int64_t lastInsertRowId() const;
  const std::string& path() const { return m_path; }
  /// The current SQLite error text, for messages.
  std::string errorText() const;
  sqlite3* handle() const { return m_db; }

 private:
  Db(sqlite3* db, std::string path) : m_db(db), m_path(std::move(path)) {}
  bool checkOrInitialize(Mode mode, std::string* error);
  /// Upgrades a DB of an older schema `version` to kDbSchemaVersion, in one transaction.
  bool migrate(int64_t version, std::string* error);
  sqlite3* m_db;
  std::string m_path;
};

/// One prepared statement. Bind indices start at 1, column indices at 0 (SQLite's convention).
class DbStatement {
 public:
  DbStatement(Db& db, const char* sql);
  ~DbStatement();
  DbStatement(const DbStatement&) = delete;
  DbStatement& operator=(const DbStatement&) = delete;

  /// False when preparing failed; error() says why.
  bool ok() const { return m_stmt != nullptr && m_error.empty(); }
  const std::string& error() const { return m_error; }

  DbStatement& bind(int index, int64_t value);
  DbStatement& bind(int index, double value);
  DbStatement& bind(int index, const std::string& value);
  DbStatement& bindNull(int index);
  /// The index of the named parameter (":column"), 0 when the statement has none by that name.
  int parameterIndex(const std::string& name) const;
  int parameterCount() const;
  /// The name of the first parameter never bound (":column", or "?N" for an unnamed one); empty
  /// when every one has been.
  std::string unboundParameter() const;

  enum class Step { Row, Done, Error };
  /// Next row; Error sets error().
  Step step();
  /// Runs a statement that returns no rows; false with error() set otherwise.
  bool run();
  /// Ready to bind and step again (bindings are kept until re-bound).
  void reset();

  int64_t columnInt(int col) const;
  double columnDouble(int col) const;
  std::string columnText(int col) const;
  bool columnIsNull(int col) const;

 private:
  Db& m_db;
  DbStatement& bound(int index, int rc);
  sqlite3_stmt* m_stmt = nullptr;
  std::string m_error;
  std::vector<bool> m_bound;  ///< per parameter (index - 1): bound since prepared
};

/// BEGIN IMMEDIATE ... COMMIT; rolls back unless commit() succeeded.
class DbTransaction {
 public:
  DbTransaction(Db& db, std::string* error);
  ~DbTransaction();
  bool ok() const { return m_open; }
  bool commit(std::string* error);

 private:
  Db& m_db;
  bool m_open = false;
};

}  // namespace hetopt
