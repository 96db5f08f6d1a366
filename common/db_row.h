// SPDX-License-Identifier: MIT
/**
 * @file Rows of a table (contracts/db_schema.h) to and from a C++ struct by column name: a list of
 * DbField<T> says which member fills which column, once for storing and loading both. Statements
 * come from the table (DbTable::insertSql / selectSql), so no parameter or column is numbered by
 * hand. Tools only (SQLite).
 */
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "common/db.h"
#include "contracts/db_schema.h"

namespace hetopt {

/// uint64 values (site keys, offsets) are stored bit-for-bit in SQLite's signed INTEGER.
inline int64_t dbInt(uint64_t v) {
  int64_t r;
  memcpy(&r, &v, sizeof r);
  return r;
}
inline uint64_t dbUnsigned(int64_t v) {
  uint64_t r;
  memcpy(&r, &v, sizeof r);
  return r;
}

inline void dbBind(DbStatement& s, int i, uint64_t v) { s.bind(i, dbInt(v)); }
inline void dbBind(DbStatement& s, int i, uint32_t v) { s.bind(i, int64_t{v}); }
inline void dbBind(DbStatement& s, int i, bool v) { s.bind(i, int64_t{v}); }
inline void dbBind(DbStatement& s, int i, double v) { s.bind(i, v); }
inline void dbBind(DbStatement& s, int i, const std::string& v) { s.bind(i, v); }
inline void dbRead(const DbStatement& q, int i, uint64_t* v) { *v = dbUnsigned(q.columnInt(i)); }
inline void dbRead(const DbStatement& q, int i, uint32_t* v) { *v = static_cast<uint32_t>(q.columnInt(i)); }
inline void dbRead(const DbStatement& q, int i, bool* v) { *v = q.columnInt(i) != 0; }
inline void dbRead(const DbStatement& q, int i, double* v) { *v = q.columnDouble(i); }
inline void dbRead(const DbStatement& q, int i, std::string* v) { *v = q.columnText(i); }

/// How one column of a row moves between the DB and a T.
template <typename T>
struct DbField {
  const char* column;
  void (*bind)(DbStatement& s, int index, const T& row);
  void (*read)(const DbStatement& q, int index, T* row);
};

/// A column stored as the member `member` of T (anything dbBind/dbRead take).
#define HETOPT_DB_FIELD(T, column, member)                                            \
  ::hetopt::DbField<T> {                                                                \
    column, [](::hetopt::DbStatement& s, int i, const T& r) { ::hetopt::dbBind(s, i, r.member); }, \
        [](const ::hetopt::DbStatement& q, int i, T* r) { ::hetopt::dbRead(q, i, &r->member); }   \
  }

/// Binds `row` by `fields` to the named parameters (":column") of `s`, made by
/// DbTable::insertSql(); the caller has bound the other `keys` parameters (row ids, ranks). False,
/// with *error naming it, when a field has no parameter or a parameter stays unbound: the column
/// table and the field list disagree.
template <typename T>
bool dbBindRow(DbStatement& s, std::span<const DbField<T>> fields, const T& row, int keys,
               std::string* error) {
  for (const DbField<T>& f : fields) {
    const int index = s.parameterIndex(std::string(":") + f.column);
    if (index == 0) {
      *error = std::string("no column ") + f.column + " in the statement";
      return false;
    }
    f.bind(s, index, row);
  }
  if (static_cast<int>(fields.size()) + keys != s.parameterCount()) {
    *error = "a column of the table has no field to store";
    return false;
  }
  return true;
}

/// Reads the current row of `q`, made by table.selectSql(), into `row` by `fields` (in their
/// order). False with *error when a field names no column of the table.
template <typename T>
bool dbReadRow(const DbStatement& q, const DbTable& table, std::span<const DbField<T>> fields, T* row,
               std::string* error) {
  for (const DbField<T>& f : fields) {
    const int index = table.columnIndex(f.column);
    if (index < 0) {
      *error = std::string("no column ") + f.column + " in " + table.name;
      return false;
    }
    f.read(q, index, row);
  }
  return true;
}

}  // namespace hetopt
