// SPDX-License-Identifier: MIT
/** @file For DB tests: what SQLite reports of a DB's tables, as text to compare. */
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <string>

#include "contracts/db_schema.h"
#include "store/db.h"

namespace hetopt::testing {

/// Every column (type, NOT NULL, default, key), foreign key (with ON DELETE) and index (with its
/// columns) of `tables`, one line each; with `rows`, every row of them too.
inline std::string describeTables(Db& db, std::span<const DbTable> tables, bool rows = false) {
  std::string out;
  for (const DbTable& t : tables) {
    const std::string name = t.name;
    const std::pair<const char*, std::string> queries[] = {
        {"table_info", "SELECT * FROM pragma_table_info('" + name + "')"},
        {"foreign_key_list", "SELECT * FROM pragma_foreign_key_list('" + name + "')"},
        {"index_list",
         "SELECT l.seq, l.\"unique\", l.origin, l.partial, i.seqno, i.cid, i.name FROM "
         "pragma_index_list('" +
             name + "') l, pragma_index_info(l.name) i ORDER BY l.seq, i.seqno"},
        {"rows", rows ? "SELECT * FROM " + name + " ORDER BY 1, 2, 3, 4, 5" : ""}};
    for (const auto& [what, sql] : queries) {
      if (sql.empty()) continue;
      DbStatement q(db, sql.c_str());
      EXPECT_TRUE(q.ok()) << sql << ": " << q.error();
      while (q.step() == DbStatement::Step::Row) {
        out += name + " " + what + ":";
        // As many as the widest result has (SQLite reads a column past the last as empty).
        const size_t columns = std::max<size_t>(8, t.columns.size());
        for (size_t c = 0; c < columns; ++c) out += " " + q.columnText(static_cast<int>(c));
        out += "\n";
      }
    }
  }
  return out;
}

}  // namespace hetopt::testing
