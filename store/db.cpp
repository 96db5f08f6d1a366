// SPDX-License-Identifier: MIT
/** @file SQLite access with hetopt's file rules and schema versioning; see db.h.
 * Opening with the file rules, checking or upgrading the schema version, statements. */
#include "store/db.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/paths.h"
#include "hetopt/version.h"

namespace hetopt {
namespace {

constexpr const char* kMetaTable =
    "CREATE TABLE IF NOT EXISTS hetopt_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)";

// In-place upgrades come from the schema (contracts/db_schema.h): each version adds columns, with
// defaults, to the tables the file has (a DB holding only a characterization has no profile
// tables: they are created at the new version when first used). Only additions: the
// characterization took minutes to measure and must survive an upgrade of hetopt.
bool canMigrate(int64_t version) { return version >= 1 && version < kDbSchemaVersion; }

std::string movedAwayHint() {
  return "move it away (or use --db / HETOPT_DB for another file) and re-run `hetopt characterize`";
}

}  // namespace

std::string Db::missingMessage(const std::string& path) {
  return "no hetopt DB at " + path + " (run `hetopt characterize` first)";
}

std::unique_ptr<Db> Db::open(const std::string& path, Mode mode, std::string* error) {
  if (path.empty()) {
    *error = "no DB path given";
    return nullptr;
  }
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    // Someone who can plant a link could point it at any file of this user's.
    *error = path + " is a symbolic link; refusing to use it as the DB (name the file itself)";
    return nullptr;
  }
  if (stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT || mode == Mode::ReadOnly) {
      *error = errno == ENOENT ? missingMessage(path) : path + ": " + strerror(errno);
      return nullptr;
    }
    if (!makePrivateDirs(dirName(path), error)) return nullptr;
    // Created here with 0600 because SQLite would create it 0644 (minus umask); its journal files
    // copy the database file's mode.
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) {
      *error = "cannot create " + path + ": " + strerror(errno);
      return nullptr;
    }
    if (fd >= 0) ::close(fd);
  } else if (!S_ISREG(st.st_mode)) {
    *error = path + " is not a regular file";
    return nullptr;
  }
  if (!isSafeToRead(path, error)) return nullptr;

  sqlite3* handle = nullptr;
  // NOFOLLOW: a link planted between the checks above and this open is refused too.
  int flags = (mode == Mode::ReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) |
              SQLITE_OPEN_NOFOLLOW;
  int rc = sqlite3_open_v2(path.c_str(), &handle, flags, nullptr);
  if (rc != SQLITE_OK) {
    *error = "cannot open " + path + ": " + sqlite3_errstr(rc);
    sqlite3_close(handle);
    return nullptr;
  }
  sqlite3_extended_result_codes(handle, 1);
  // Two hetopt commands may write at once (characterize on two devices, a trace analysis).
  sqlite3_busy_timeout(handle, 10000);
  std::unique_ptr<Db> db(new Db(handle, path));
  if (!db->checkOrInitialize(mode, error)) return nullptr;
  std::string err;
  if (!db->exec("PRAGMA foreign_keys = ON", &err)) {
    *error = path + ": " + err;
    return nullptr;
  }
  return db;
}

bool Db::checkOrInitialize(Mode mode, std::string* error) {
  auto corrupt = [&](const std::string& what) {
    *error = m_path + " is not a readable hetopt DB (" + what + "); " + movedAwayHint();
    return false;
  };
  // The first real read: a file that is not SQLite at all fails here (SQLITE_NOTADB).
  int64_t tables = 0;
  {
    DbStatement q(*this, "SELECT count(*) FROM sqlite_master");
    if (!q.ok() || q.step() != DbStatement::Step::Row) return corrupt(q.error());
    tables = q.columnInt(0);
  }
  int64_t appId = 0;
  {
    DbStatement q(*this, "PRAGMA application_id");
    if (!q.ok() || q.step() != DbStatement::Step::Row) return corrupt(q.error());
    appId = q.columnInt(0);
  }
  if (tables == 0 && appId == 0) {
    if (mode == Mode::ReadOnly) {
      *error = m_path + " is an empty DB (run `hetopt characterize` first)";
      return false;
    }
    std::string sql = std::string("BEGIN IMMEDIATE; PRAGMA application_id = ") +
                      std::to_string(kDbApplicationId) + "; " + kMetaTable + "; " +
                      "INSERT OR IGNORE INTO hetopt_meta VALUES ('schema_version', '" +
                      std::to_string(kDbSchemaVersion) + "'); " +
                      "INSERT OR IGNORE INTO hetopt_meta VALUES ('created_by', 'hetopt " +
                      HETOPT_VERSION_STRING + "'); COMMIT;";
    std::string err;
    if (!exec(sql, &err)) {
      exec("ROLLBACK", nullptr);
      *error = "cannot initialize " + m_path + ": " + err;
      return false;
    }
    return true;
  }
  if (appId != kDbApplicationId) {
    char buf[160];
    snprintf(buf, sizeof buf, "an SQLite file with application_id 0x%08llx, expected 0x%08x",
             static_cast<unsigned long long>(appId), static_cast<unsigned>(kDbApplicationId));
    *error = m_path + " is not a hetopt DB (" + buf + "); refusing to touch it";
    return false;
  }
  int64_t version = -1;
  std::string createdBy = "an unknown hetopt";
  {
    DbStatement q(*this, "SELECT key, value FROM hetopt_meta");
    if (!q.ok()) return corrupt(q.error());
    DbStatement::Step s;
    while ((s = q.step()) == DbStatement::Step::Row) {
      std::string key = q.columnText(0);
      if (key == "schema_version") version = strtoll(q.columnText(1).c_str(), nullptr, 10);
      if (key == "created_by") createdBy = q.columnText(1);
    }
    if (s == DbStatement::Step::Error) return corrupt(q.error());
  }
  if (version < 0) return corrupt("no schema_version in hetopt_meta");
  if (version != kDbSchemaVersion && mode != Mode::ReadOnly && canMigrate(version)) {
    if (!migrate(version, error)) return false;
    version = kDbSchemaVersion;
  }
  if (version != kDbSchemaVersion) {
    *error = m_path + " has DB schema version " + std::to_string(version) + " (created by " +
             createdBy + "), but this hetopt " + HETOPT_VERSION_STRING + " uses schema version " +
             std::to_string(kDbSchemaVersion) + "; " +
             (version > kDbSchemaVersion ? "use the newer hetopt, or " : "") +
             (canMigrate(version) ? "a command that writes it (`hetopt trace`, `hetopt analyze`, "
                                    "`hetopt characterize`) upgrades it in place, or "
                                  : "") +
             movedAwayHint();
    return false;
  }
  // It turns a damaged page into one clear line now rather than a wrong answer later, but reads
  // every page: not on the read-only opens of `hetopt run`, which happen before every run of a
  // program (reading a damaged page still fails there, with SQLite's message).
  if (mode == Mode::ReadOnly) return true;
  DbStatement check(*this, "PRAGMA quick_check");
  if (!check.ok() || check.step() != DbStatement::Step::Row) return corrupt(check.error());
  std::string verdict = check.columnText(0);
  if (verdict != "ok") return corrupt("integrity check: " + verdict);
  return true;
}

bool Db::migrate(int64_t version, std::string* error) {
  std::string err;
  if (!exec("BEGIN IMMEDIATE", &err)) {
    *error = "cannot upgrade " + m_path + ": " + err;
    return false;
  }
  // Re-read under the write lock: another hetopt may have upgraded it meanwhile.
  {
    DbStatement q(*this, "SELECT value FROM hetopt_meta WHERE key = 'schema_version'");
    if (q.ok() && q.step() == DbStatement::Step::Row)
      version = strtoll(q.columnText(0).c_str(), nullptr, 10);
  }
  for (; version < kDbSchemaVersion; ++version) {
    for (const DbTable& table : dbTables()) {
      const std::string sql = table.upgradeSql(static_cast<int>(version) + 1);
      if (sql.empty()) continue;
      bool has = false;
      if (!hasTable(table.name, &has, &err) || (has && !exec(sql, &err))) {
        exec("ROLLBACK", nullptr);
        *error = "cannot upgrade " + m_path + " from schema version " + std::to_string(version) +
                 ": " + err;
        return false;
      }
    }
  }
  if (!exec("UPDATE hetopt_meta SET value = '" + std::to_string(kDbSchemaVersion) +
                "' WHERE key = 'schema_version'; COMMIT",
            &err)) {
    exec("ROLLBACK", nullptr);
    *error = "cannot upgrade " + m_path + ": " + err;
    return false;
  }
  return true;
}

Db::~Db() { sqlite3_close_v2(m_db); }

bool Db::exec(const std::string& sql, std::string* error) {
  char* msg = nullptr;
  int rc = sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, &msg);
  if (rc != SQLITE_OK) {
    if (error) *error = msg ? msg : sqlite3_errstr(rc);
    sqlite3_free(msg);
    return false;
  }
  return true;
}

bool Db::hasTable(const std::string& name, bool* has, std::string* error) {
  DbStatement q(*this, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?");
  q.bind(1, name);
  if (q.step() != DbStatement::Step::Row) {
    if (error) *error = m_path + ": " + q.error();
    return false;
  }
  *has = q.columnInt(0) > 0;
  return true;
}

int64_t Db::lastInsertRowId() const { return sqlite3_last_insert_rowid(m_db); }

std::string Db::errorText() const { return sqlite3_errmsg(m_db); }

DbStatement::DbStatement(Db& db, const char* sql) : m_db(db) {
  int rc = sqlite3_prepare_v2(db.handle(), sql, -1, &m_stmt, nullptr);
  if (rc != SQLITE_OK) {
    m_error = db.errorText();
    sqlite3_finalize(m_stmt);
    m_stmt = nullptr;
    return;
  }
  m_bound.assign(static_cast<size_t>(sqlite3_bind_parameter_count(m_stmt)), false);
}

DbStatement::~DbStatement() { sqlite3_finalize(m_stmt); }

DbStatement& DbStatement::bound(int index, int rc) {
  if (rc != SQLITE_OK)
    m_error = m_db.errorText();
  else if (index >= 1 && static_cast<size_t>(index) <= m_bound.size())
    m_bound[index - 1] = true;
  return *this;
}

DbStatement& DbStatement::bind(int index, int64_t value) {
  return m_stmt ? bound(index, sqlite3_bind_int64(m_stmt, index, value)) : *this;
}

DbStatement& DbStatement::bind(int index, double value) {
  return m_stmt ? bound(index, sqlite3_bind_double(m_stmt, index, value)) : *this;
}

DbStatement& DbStatement::bind(int index, const std::string& value) {
  return m_stmt ? bound(index, sqlite3_bind_text(m_stmt, index, value.data(),
                                                 static_cast<int>(value.size()), SQLITE_TRANSIENT))
                : *this;
}

DbStatement& DbStatement::bindNull(int index) {
  return m_stmt ? bound(index, sqlite3_bind_null(m_stmt, index)) : *this;
}

std::string DbStatement::unboundParameter() const {
  for (size_t i = 0; i < m_bound.size(); ++i) {
    if (m_bound[i]) continue;
    const char* name = sqlite3_bind_parameter_name(m_stmt, static_cast<int>(i) + 1);
    return name ? name : "?" + std::to_string(i + 1);
  }
  return "";
}

int DbStatement::parameterIndex(const std::string& name) const {
  return m_stmt ? sqlite3_bind_parameter_index(m_stmt, name.c_str()) : 0;
}

int DbStatement::parameterCount() const {
  return m_stmt ? sqlite3_bind_parameter_count(m_stmt) : 0;
}

DbStatement::Step DbStatement::step() {
  if (!ok()) {
    if (m_error.empty()) m_error = "statement not prepared";
    return Step::Error;
  }
  int rc = sqlite3_step(m_stmt);
  if (rc == SQLITE_ROW) return Step::Row;
  if (rc == SQLITE_DONE) return Step::Done;
  m_error = m_db.errorText();
  return Step::Error;
}

bool DbStatement::run() {
  Step s = step();
  if (s == Step::Row) m_error = "statement returned rows";
  return s == Step::Done;
}

void DbStatement::reset() {
  if (m_stmt) sqlite3_reset(m_stmt);
}

int64_t DbStatement::columnInt(int col) const { return sqlite3_column_int64(m_stmt, col); }
double DbStatement::columnDouble(int col) const { return sqlite3_column_double(m_stmt, col); }
std::string DbStatement::columnText(int col) const {
  const unsigned char* t = sqlite3_column_text(m_stmt, col);
  return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
}
bool DbStatement::columnIsNull(int col) const {
  return sqlite3_column_type(m_stmt, col) == SQLITE_NULL;
}

DbTransaction::DbTransaction(Db& db, std::string* error) : m_db(db) {
  m_open = db.exec("BEGIN IMMEDIATE", error);
}

DbTransaction::~DbTransaction() {
  if (m_open) m_db.exec("ROLLBACK", nullptr);
}

bool DbTransaction::commit(std::string* error) {
  if (!m_open) return false;
  bool ok = m_db.exec("COMMIT", error);
  if (ok) m_open = false;
  return ok;
}

}  // namespace hetopt
