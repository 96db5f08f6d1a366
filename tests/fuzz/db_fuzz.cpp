// SPDX-License-Identifier: MIT
/**
 * @file libFuzzer target for loading hetopt's DB: the file is opened (store/db), every
 * characterization is loaded (characterize/records) and printed, the gain model is built from it
 * and asked about the profile's sites (analyzer/gain), the profile is loaded
 * (analyzer/profile_store), reported, and turned into a plan (analyzer/planner) that, when the
 * writer accepts it, must read back as itself. Any DB must give a result or one message, never a
 * crash.
 *
 * Two kinds of input:
 *  - the bytes of a DB file (the seed corpus holds DBs written by hetopt's own writers);
 *  - 'U' + edits of the rows of such a DB (built at start-up by the same writers): each edit picks
 * a table, column and row and sets an integer, a real, a text, NULL, or deletes the row. SQLite
 *    rejects nearly every mutated file at its header or page checks, so this is how fuzzed
 *    values reach hetopt's own code (the one that reads them).
 */
#include <sqlite3.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "analyzer/gain.h"
#include "analyzer/planner.h"
#include "analyzer/report.h"
#include "tests/fuzz/samples.h"

namespace {

using namespace hetopt;

std::string g_dir, g_path, g_seed;
struct Table {
  std::string name;
  std::vector<std::string> columns;
};
std::vector<Table> g_tables;

bool writeFile(const std::string& path, const void* data, size_t size) {
  FILE* f = fopen(path.c_str(), "wb");
  if (!f) return false;
  bool ok = fwrite(data, 1, size, f) == size;
  return fclose(f) == 0 && ok;
}

void mustSay(bool ok, const std::string& error) {
  if (!ok && error.empty()) __builtin_trap();  // a failure must say why
}

// What hetopt does with a DB file: `hetopt characterize --show`, `analyze`, `run`.
void useDb() {
  std::string error;
  std::unique_ptr<Db> db = Db::open(g_path, Db::Mode::ReadOnly, &error);
  mustSay(db != nullptr, error);
  if (!db) return;
  std::vector<characterize::CharacterizationRun> runs;
  bool ok = characterize::loadAllRuns(*db, &runs, &error);
  mustSay(ok, error);
  for (const characterize::CharacterizationRun& run : runs) {
    (void)characterize::formatDecisionTable(run);
    (void)characterize::formatMeasuredSummary(run);
    (void)characterize::formatPolicySummary(run);
    for (const characterize::Fit& f : run.fits)
      for (double size : {0.0, 1.0, 4096.0, 1e9}) (void)f.fn.eval(size);
  }
  const analyzer::AppProfile sample = fuzz::sampleProfile();
  analyzer::AppProfile profile;
  analyzer::ProfileLookup lookup;
  ok = analyzer::loadProfile(*db, sample.program, &profile, &lookup, &error);
  mustSay(ok, error);
  if (!ok || lookup.status != analyzer::ProfileLookup::Status::Found) return;
  std::string why;
  if (std::unique_ptr<analyzer::GainModel> gain =
          analyzer::loadGainModel(*db, profile.device, &why)) {
    (void)gain->describe();
    for (analyzer::CandidateSite& site : profile.candidates) gain->predict(site, &site.gain);
  } else if (why.empty()) {
    __builtin_trap();
  }
  analyzer::Breakdown predicted;
  (void)analyzer::predictOptimizedBreakdown(profile, &predicted);
  (void)analyzer::formatReport(profile);
  (void)analyzer::profileToJson(profile);
  std::vector<analyzer::BreakdownBar> bars;
  mustSay(analyzer::loadRunBreakdowns(*db, lookup.id, &bars, &error), error);
  for (const char* policy : {"", "hybrid"}) {
    analyzer::PlanOptions options;
    options.forcedPolicy = policy;
    Plan plan, back;
    if (!analyzer::buildPlan(profile, options, nullptr, &plan, &why)) {
      if (why.empty()) __builtin_trap();
      continue;
    }
    if (!plan.unwritableReason().empty()) continue;  // the writer refuses it with that message
    if (!parsePlan(plan.serialize(), &back, &error)) __builtin_trap();
  }
}

uint8_t take(const uint8_t*& p, const uint8_t* end) { return p < end ? *p++ : 0; }

// Applies 'U' edits to the seed DB at g_path.
void editRows(const uint8_t* p, const uint8_t* end) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(g_path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return;
  }
  // One transaction, no syncs: thousands of autocommitted edits took a minute per input.
  sqlite3_exec(db, "PRAGMA synchronous = OFF; BEGIN", nullptr, nullptr, nullptr);
  for (int edits = 0; p < end && edits < 256; ++edits) {
    const Table& t = g_tables[take(p, end) % g_tables.size()];
    const std::string& column = t.columns[take(p, end) % t.columns.size()];
    const int row = take(p, end) % 64;
    const uint8_t kind = take(p, end) % 5;
    const std::string where = " WHERE rowid = (SELECT rowid FROM \"" + t.name +
                              "\" LIMIT 1 OFFSET " + std::to_string(row) + ")";
    std::string sql = kind == 4 ? "DELETE FROM \"" + t.name + "\"" + where
                                : "UPDATE \"" + t.name + "\" SET \"" + column + "\" = ?" + where;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK) {
      int64_t i = 0;
      double d = 0;
      size_t n = std::min<size_t>(8, end - p);
      if (kind == 0 || kind == 1) {
        memcpy(kind == 0 ? static_cast<void*>(&i) : static_cast<void*>(&d), p, n);
        p += n;
      }
      if (kind == 0) sqlite3_bind_int64(stmt, 1, i);
      if (kind == 1) sqlite3_bind_double(stmt, 1, d);
      if (kind == 2) {
        size_t len = std::min<size_t>(take(p, end), end - p);
        sqlite3_bind_text(stmt, 1, reinterpret_cast<const char*>(p), static_cast<int>(len),
                          SQLITE_TRANSIENT);
        p += len;
      }
      if (kind == 3) sqlite3_bind_null(stmt, 1);
      sqlite3_step(stmt);  // constraint violations just leave the row as it was
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(db);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Memory-backed where possible: every input is written out as a file.
  char shm[] = "/dev/shm/hetopt-dbfuzz-XXXXXX", tmp[] = "/tmp/hetopt-dbfuzz-XXXXXX";
  const char* dir = mkdtemp(shm);
  if (!dir && !(dir = mkdtemp(tmp))) abort();
  g_dir = dir;
  g_path = g_dir + "/hetopt.db";
  std::string error;
  if (!fuzz::writeSampleDb(g_path, &error)) {
    fprintf(stderr, "db_fuzz: cannot write the seed DB: %s\n", error.c_str());
    abort();
  }
  std::ifstream in(g_path, std::ios::binary);
  g_seed.assign(std::istreambuf_iterator<char>(in), {});
  std::unique_ptr<Db> db = Db::open(g_path, Db::Mode::ReadOnly, &error);
  DbStatement q(*db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  while (q.step() == DbStatement::Step::Row) g_tables.push_back({q.columnText(0), {}});
  for (Table& t : g_tables) {
    DbStatement c(*db, ("SELECT name FROM pragma_table_info('" + t.name + "')").c_str());
    while (c.step() == DbStatement::Step::Row) t.columns.push_back(c.columnText(0));
  }
  atexit([] {
    unlink(g_path.c_str());
    rmdir(g_dir.c_str());
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  bool edits = size > 0 && data[0] == 'U';
  if (edits ? !writeFile(g_path, g_seed.data(), g_seed.size()) : !writeFile(g_path, data, size))
    abort();
  if (edits) editRows(data + 1, data + size);
  useDb();
  return 0;
}
