// SPDX-License-Identifier: MIT
/**
 * @file Rows of a table (contracts/db_schema.h) to and from a C++ struct by column name: a list of
 * DbField<T> says which member fills which column, once for storing and loading both. Statements
 * come from the table (DbTable::insertSql / selectSql), so no parameter or column is numbered by
 * hand, and a column that no field fills fails the store naming it. Tools only (SQLite).
 */
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "contracts/db_schema.h"
#include "store/db.h"

namespace hetopt {

/// uint64 values (site keys, offsets, sizes) are stored bit-for-bit in SQLite's signed INTEGER.
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
inline void dbBind(DbStatement& s, int i, int v) { s.bind(i, int64_t{v}); }
inline void dbBind(DbStatement& s, int i, bool v) { s.bind(i, int64_t{v}); }
inline void dbBind(DbStatement& s, int i, double v) { s.bind(i, v); }
inline void dbBind(DbStatement& s, int i, const std::string& v) { s.bind(i, v); }
// Reads return false for a value the member cannot hold (an unknown name, see HETOPT_DB_NAMED).
inline bool dbRead(const DbStatement& q, int i, uint64_t* v) {
  *v = dbUnsigned(q.columnInt(i));
  return true;
}
inline bool dbRead(const DbStatement& q, int i, uint32_t* v) {
  *v = static_cast<uint32_t>(q.columnInt(i));
  return true;
}
inline bool dbRead(const DbStatement& q, int i, int* v) {
  *v = static_cast<int>(q.columnInt(i));
  return true;
}
inline bool dbRead(const DbStatement& q, int i, bool* v) {
  *v = q.columnInt(i) != 0;
  return true;
}
inline bool dbRead(const DbStatement& q, int i, double* v) {
  *v = q.columnDouble(i);
  return true;
}
inline bool dbRead(const DbStatement& q, int i, std::string* v) {
  *v = q.columnText(i);
  return true;
}

/// *error = "what: detail"; false, for `return dbFail(...)`.
inline bool dbFail(std::string* error, const std::string& what, const std::string& detail) {
  *error = what + ": " + detail;
  return false;
}

/// How one column of a row moves between the DB and a T.
template <typename T>
struct DbField {
  const char* column;
  void (*bind)(DbStatement& s, int index, const T& row);
  /// False when the stored value means nothing to T (dbReadRow names the column and the value).
  bool (*read)(const DbStatement& q, int index, T* row);
};

/// A column stored as the member `member` of T (anything dbBind/dbRead take).
#define HETOPT_DB_FIELD(T, column, member)                                                         \
  ::hetopt::DbField<T> {                                                                           \
    column, [](::hetopt::DbStatement& s, int i, const T& r) { ::hetopt::dbBind(s, i, r.member); }, \
        [](const ::hetopt::DbStatement& q, int i, T* r) {                                          \
          return ::hetopt::dbRead(q, i, &r->member);                                               \
        }                                                                                          \
  }

/// An enum member stored as its name: `toName(value)` gives it, `fromName(std::string, E*)` reads
/// it back (false for a name it does not know).
#define HETOPT_DB_NAMED(T, column, member, toName, fromName) \
  ::hetopt::DbField<T> {                                     \
    column,                                                  \
        [](::hetopt::DbStatement& s, int i, const T& r) {    \
          s.bind(i, std::string(toName(r.member)));          \
        },                                                   \
        [](const ::hetopt::DbStatement& q, int i, T* r) {    \
          return fromName(q.columnText(i), &r->member);      \
        }                                                    \
  }

/// A uint64 member whose UINT64_MAX (no limit, no bound) is stored as NULL.
#define HETOPT_DB_UNBOUNDED(T, column, member)                               \
  ::hetopt::DbField<T> {                                                     \
    column,                                                                  \
        [](::hetopt::DbStatement& s, int i, const T& r) {                    \
          if (r.member == UINT64_MAX)                                        \
            s.bindNull(i);                                                   \
          else                                                               \
            ::hetopt::dbBind(s, i, r.member);                                \
        },                                                                   \
        [](const ::hetopt::DbStatement& q, int i, T* r) {                    \
          if (!q.columnIsNull(i)) return ::hetopt::dbRead(q, i, &r->member); \
          r->member = UINT64_MAX;                                            \
          return true;                                                       \
        }                                                                    \
  }

/// Binds `row` by `fields` to the named parameters (":column") of `s`. False, with *error naming
/// it, when a field has no parameter.
template <typename T>
bool dbBindFields(DbStatement& s, std::span<const DbField<T>> fields, const T& row,
                  std::string* error) {
  for (const DbField<T>& f : fields) {
    const int index = s.parameterIndex(std::string(":") + f.column);
    if (index == 0) {
      *error = std::string("no column ") + f.column + " in the statement";
      return false;
    }
    f.bind(s, index, row);
  }
  return true;
}

/// dbBindFields() for the last part of a row: the caller has bound the other parameters (row ids,
/// ranks: the keys). False, with *error naming it, when a field has no parameter or a parameter is
/// left unbound: the column table and the field list disagree.
template <typename T>
bool dbBindRow(DbStatement& s, std::span<const DbField<T>> fields, const T& row,
               std::string* error) {
  if (!dbBindFields(s, fields, row, error)) return false;
  const std::string unbound = s.unboundParameter();
  if (!unbound.empty()) {
    *error = "no field stores column " + unbound.substr(unbound[0] == ':' ? 1 : 0);
    return false;
  }
  return true;
}

/// Reads the current row of `q`, made by table.selectSql(), into `row` by `fields` (in their
/// order). False with *error when a field names no column of the table or cannot hold its value.
template <typename T>
bool dbReadRow(const DbStatement& q, const DbTable& table, std::span<const DbField<T>> fields,
               T* row, std::string* error) {
  for (const DbField<T>& f : fields) {
    const int index = table.columnIndex(f.column);
    if (index < 0) {
      *error = std::string("no column ") + f.column + " in " + table.name;
      return false;
    }
    if (!f.read(q, index, row)) {
      *error = std::string("unknown value '") + q.columnText(index) + "' in " + table.name + "." +
               f.column + " (DB damaged or from another hetopt)";
      return false;
    }
  }
  return true;
}

/// Stores one row: its keys already bound on `s` (made by insertSql()), then `row` by `fields`.
/// False with *error naming `what` and why.
template <typename T>
bool dbStoreRow(DbStatement& s, std::span<const DbField<T>> fields, const T& row,
                const std::string& what, std::string* error) {
  std::string why;
  if (!dbBindRow(s, fields, row, &why)) return dbFail(error, what, why);
  return s.run() || dbFail(error, what, s.error());
}

/// Every row `q` (made by t.selectSql()) returns, appended to *out. False with *error naming
/// `what` and why.
template <typename T>
bool dbLoadRows(DbStatement& q, const DbTable& t, std::span<const DbField<T>> fields,
                std::vector<T>* out, const std::string& what, std::string* error) {
  DbStatement::Step st;
  std::string why;
  while ((st = q.step()) == DbStatement::Step::Row) {
    T row{};
    if (!dbReadRow(q, t, fields, &row, &why)) return dbFail(error, what, why);
    out->push_back(std::move(row));
  }
  return st == DbStatement::Step::Done || dbFail(error, what, q.error());
}

}  // namespace hetopt
