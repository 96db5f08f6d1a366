// SPDX-License-Identifier: MIT
/** @file The DB's tables, their columns and the SQL made from them; see db_schema.h, docs/DB.md.
 * Every table's columns as data (kTables), then the SQL each DbTable makes from them. */
#include "contracts/db_schema.h"

namespace hetopt {
namespace {

// uint64 values (site keys, offsets) are stored bit-for-bit in SQLite's signed INTEGER.
constexpr const char* kInt = "INTEGER NOT NULL";
constexpr const char* kReal = "REAL NOT NULL";
constexpr const char* kText = "TEXT NOT NULL";
constexpr const char* kInt0 = "INTEGER NOT NULL DEFAULT 0";
constexpr const char* kReal0 = "REAL NOT NULL DEFAULT 0";
constexpr const char* kText0 = "TEXT NOT NULL DEFAULT ''";
constexpr const char* kProfileRef =
    "INTEGER NOT NULL REFERENCES app_profiles(id) ON DELETE CASCADE";
constexpr const char* kRunRef = "INTEGER NOT NULL REFERENCES char_runs(id) ON DELETE CASCADE";

// The characterization. NULL in memlock_limit and size_hi: no limit, no bound.
constexpr DbColumn kCharRuns[] = {
    {"id", "INTEGER PRIMARY KEY"},
    {"platform_name", kText},
    {"platform_version", kText},
    {"device_name", kText},
    {"driver_version", kText},
    {"cpu_model", kText},
    {"kernel", kText},
    {"device_vendor", kText},
    {"device_type", kText},
    {"hostname", kText},
    {"hetopt_version", kText},
    {"created_utc", kText},
    {"quick", kInt},
    {"duration_s", kReal},
    {"memlock_limit", "INTEGER"},
    {"lock_beyond_limit", kInt},
};

constexpr DbColumn kCharPolicies[] = {
    {"run_id", kRunRef}, {"policy", kText}, {"state", kText}, {"reason", kText}, {"max_size", kInt},
};

constexpr DbColumn kCharSamples[] = {
    {"run_id", kRunRef}, {"measure", kText}, {"policy", kText},    {"concurrency", kInt},
    {"size", kInt},      {"reps", kInt},     {"median_ns", kReal}, {"q1_ns", kReal},
    {"q3_ns", kReal},    {"min_ns", kReal},  {"max_ns", kReal},    {"times_ns", kText},
};

constexpr DbColumn kCharFits[] = {
    {"run_id", kRunRef}, {"measure", kText},      {"policy", kText},      {"concurrency", kInt},
    {"points", kInt},    {"rms_rel_err", kReal},  {"max_rel_err", kReal}, {"size_min", kReal},
    {"size_max", kReal}, {"outliers", kInt0, 10},
};

constexpr DbColumn kCharFitSegments[] = {
    {"run_id", kRunRef}, {"measure", kText}, {"policy", kText},     {"concurrency", kInt},
    {"idx", kInt},       {"size_lo", kReal}, {"latency_ns", kReal}, {"ns_per_byte", kReal},
};

constexpr DbColumn kCharDecisions[] = {
    {"run_id", kRunRef},    {"direction", kText}, {"size_lo", kInt},  {"size_hi", "INTEGER"},
    {"policy", kText},      {"alloc", kText},     {"ref_size", kInt}, {"predicted_ns", kReal},
    {"standard_ns", kReal}, {"reason", kText},
};

constexpr DbColumn kProfiles[] = {
    {"id", "INTEGER PRIMARY KEY"},
    {"program_path", kText},
    {"program_key", kText},
    {"build_id", kText},
    {"content_hash", kText},
    {"device", kText},
    {"trace_file", kText},
    {"created_utc", kText},
    {"hetopt_version", kText},
    {"eligible", kInt},
    {"ratio", "REAL"},
    {"threshold", kReal},
    {"communication_ns", kReal},
    {"computation_ns", kReal},
    {"reason", kText},
    {"has_device_times", kInt},
    {"total_ns", kReal},
    {"kernel_ns", kReal},
    {"comm_part_ns", kReal},
    {"cpu_sync_ns", kReal},
    {"h2d_ns", kReal},
    {"d2h_ns", kReal},
    {"launch_ns", kReal},
    {"dispatch_sync_ns", kReal},
    {"kernels", kInt},
    {"host_only_sites", kInt},
    {"host_only_allocations", kInt},
    {"tracked_allocations", kInt},
    {"warnings", kText},
    // The program's contexts and start-up, for `hetopt run`'s early context.
    {"contexts", kInt0, 3},
    {"first_context_devices", kInt0, 3},
    {"first_call_ns", kInt0, 3},
    {"first_context_ns", kInt0, 3},
    {"enumerate_ns", kInt0, 3},
    {"context_ns", kInt0, 3},
    // Profiles of interpreted programs (the script beside the executable) and of named ones.
    {"executable", kText0, 5},
    {"script_kind", kInt0, 5},
    {"script", kText0, 5},
    {"script_hash", kText0, 5},
    {"forked_children", kInt0, 5},
    // What tracing itself cost.
    {"recording_ns", kReal0, 6},
    // The program's builds: what building them ahead takes off its path.
    {"build_ns", kInt0, 9},
    {"first_build_ns", kInt0, 9},
};

constexpr DbColumn kSites[] = {
    {"profile_id", kProfileRef},
    {"rank", kInt},
    {"site_key", kInt},
    {"has_source", kInt},
    {"function", kText},
    {"file", kText},
    {"line", kInt},
    {"module", kText},
    {"module_offset", kInt},
    {"location_note", kText},
    {"allocator", kText},
    {"allocations", kInt},
    {"feeding_allocations", kInt},
    {"min_alloc_bytes", kInt},
    {"max_alloc_bytes", kInt},
    {"typical_alloc_bytes", kInt},
    {"peak_live_bytes", kInt},
    {"peak_live_blocks", kInt},
    {"h2d_transfers", kInt},
    {"h2d_bytes", kInt},
    {"h2d_typical", kInt},
    {"h2d_max", kInt},
    {"h2d_ns", kReal},
    {"d2h_transfers", kInt},
    {"d2h_bytes", kInt},
    {"d2h_typical", kInt},
    {"d2h_max", kInt},
    {"d2h_ns", kReal},
    {"gain_known", kInt},
    {"gain_note", kText},
    {"policy", kText},
    {"alloc_mode", kText},
    {"standard_ns", kReal},
    {"optimized_ns", kReal},
    // How early each site's first block can be pinned, for `hetopt run`'s pricing.
    {"allocated_before_opencl", kInt0, 4},
    {"lead_ns", kInt0, 4},
};

constexpr DbColumn kSiteFrames[] = {
    {"profile_id", kProfileRef}, {"rank", kInt},      {"depth", kInt},
    {"module", kText},           {"build_id", kText}, {"module_offset", kInt},
};

constexpr DbColumn kTransferSizes[] = {
    {"profile_id", kProfileRef},
    {"owner", kText},
    {"owner_rank", kInt},
    {"direction", kText},
    {"idx", kInt},
    {"bytes", kInt},
    {"count", kInt},
};

constexpr DbColumn kUntracked[] = {
    {"profile_id", kProfileRef},
    {"rank", kInt},
    {"kind", kText},
    {"what", kText},
    {"module", kText},
    {"region_bytes", kInt},
    {"h2d_transfers", kInt},
    {"h2d_bytes", kInt},
    {"h2d_typical", kInt},
    {"h2d_max", kInt},
    {"h2d_ns", kReal},
    {"d2h_transfers", kInt},
    {"d2h_bytes", kInt},
    {"d2h_typical", kInt},
    {"d2h_max", kInt},
    {"d2h_ns", kReal},
    // What `hetopt run` needs to register untracked memory in place.
    {"module_key", kInt0, 2},
    {"module_offset", kInt0, 2},
    {"map_bytes", kInt0, 2},
    {"anonymous", kInt0, 2},
    {"gain_known", kInt0, 2},
    {"gain_note", kText0, 2},
    {"standard_ns", kReal0, 2},
    {"optimized_ns", kReal0, 2},
};

constexpr DbColumn kLaunchers[] = {
    {"id", "INTEGER PRIMARY KEY"},
    {"launcher_path", kText},
    {"launcher_key", kText},
    {"created_utc", kText},
};

constexpr DbColumn kLaunched[] = {
    {"launcher_id", "INTEGER NOT NULL REFERENCES app_launchers(id) ON DELETE CASCADE"},
    {"idx", kInt},
    {"pid", kInt},
    {"program_path", kText},
    {"program_key", kText},
    {"description", kText},
};

constexpr DbColumn kRunBreakdowns[] = {
    {"profile_id", kProfileRef},
    {"label", kText},
    {"total_ns", kReal},
    {"kernel_ns", kReal},
    {"comm_part_ns", kReal},
    {"cpu_sync_ns", kReal},
    // The facts of a run's record (`hetopt report`).
    {"started_ns", kInt0, 6},
    {"pid", kInt0, 6},
    {"wall_ns", kInt0, 6},
    {"plan_id", kInt0, 6},
    {"predicted_saving_ns", kReal0, 6},
    {"pinned_transfers", kInt0, 6},
    {"pinned_bytes", kInt0, 6},
    {"pageable_transfers", kInt0, 6},
    {"pageable_bytes", kInt0, 6},
    {"other_transfers", kInt0, 6},
    {"other_bytes", kInt0, 6},
    {"writer", kText0, 6},
    // Which kind of run (RunKind's name; rows before it were optimized) and, for an untouched
    // one, how the program exited.
    {"kind", "TEXT NOT NULL DEFAULT 'optimized'", 7},
    {"exit_status", kInt0, 7},
    // How it ended (a signal, else exit_status), its line in the run ledger (0: none) and a note.
    {"signal", kInt0, 8},
    {"ledger_seq", kInt0, 8},
    {"note", kText0, 8},
};

constexpr DbColumn kRunSites[] = {
    {"profile_id", "INTEGER NOT NULL"},
    {"label", kText},
    {"site_key", kInt},
    {"transfers", kInt},
    {"bytes", kInt},
    {"pinned", kInt},
    {"pageable", kInt},
};

// The characterization's tables first (charTables() is the front of this list).
constexpr size_t kCharTableCount = 6;
const DbTable kTables[] = {
    {"char_runs", kCharRuns,
     "UNIQUE (platform_name, platform_version, device_name, driver_version, cpu_model, kernel)"},
    {"char_policies", kCharPolicies, "PRIMARY KEY (run_id, policy)"},
    {"char_samples", kCharSamples, "PRIMARY KEY (run_id, measure, policy, concurrency, size)"},
    {"char_fits", kCharFits, "PRIMARY KEY (run_id, measure, policy, concurrency)"},
    {"char_fit_segments", kCharFitSegments,
     "PRIMARY KEY (run_id, measure, policy, concurrency, idx)"},
    {"char_decisions", kCharDecisions, "PRIMARY KEY (run_id, direction, size_lo)"},
    {"app_profiles", kProfiles, "UNIQUE (program_path, program_key)"},
    {"app_sites", kSites, "PRIMARY KEY (profile_id, rank)",
     "CREATE INDEX IF NOT EXISTS app_sites_by_key ON app_sites(site_key);"},
    {"app_site_frames", kSiteFrames, "PRIMARY KEY (profile_id, rank, depth)"},
    {"app_transfer_sizes", kTransferSizes,
     "PRIMARY KEY (profile_id, owner, owner_rank, direction, idx)"},
    {"app_untracked", kUntracked, "PRIMARY KEY (profile_id, rank)"},
    {"app_launchers", kLaunchers, "UNIQUE (launcher_path, launcher_key)"},
    {"app_launched", kLaunched, "PRIMARY KEY (launcher_id, idx)"},
    {"app_run_breakdowns", kRunBreakdowns, "PRIMARY KEY (profile_id, label)"},
    {"app_run_sites", kRunSites,
     "PRIMARY KEY (profile_id, label, site_key), FOREIGN KEY (profile_id, label) REFERENCES "
     "app_run_breakdowns(profile_id, label) ON DELETE CASCADE"},
};

bool isRowId(const DbColumn& c) { return std::string_view(c.type) == "INTEGER PRIMARY KEY"; }

}  // namespace

std::string DbTable::createSql() const {
  std::string sql = std::string("CREATE TABLE IF NOT EXISTS ") + name + " (";
  for (size_t i = 0; i < columns.size(); ++i)
    sql += (i ? ", " : "") + std::string(columns[i].name) + " " + columns[i].type;
  if (*constraints) sql += std::string(", ") + constraints;
  sql += ");";
  if (*extra) sql += std::string("\n") + extra;
  return sql;
}

std::string DbTable::insertSql(bool orReplace) const {
  std::string names, values;
  for (const DbColumn& c : columns) {
    if (isRowId(c)) continue;
    names += (names.empty() ? "" : ", ") + std::string(c.name);
    values += (values.empty() ? ":" : ", :") + std::string(c.name);
  }
  return std::string(orReplace ? "INSERT OR REPLACE INTO " : "INSERT INTO ") + name + " (" + names +
         ") VALUES (" + values + ")";
}

std::string DbTable::selectSql(std::string_view tail) const {
  std::string sql = "SELECT ";
  for (size_t i = 0; i < columns.size(); ++i) sql += (i ? ", " : "") + std::string(columns[i].name);
  sql += std::string(" FROM ") + name;
  if (!tail.empty()) sql += " " + std::string(tail);
  return sql;
}

int DbTable::columnIndex(std::string_view column) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (column == columns[i].name) return static_cast<int>(i);
  return -1;
}

std::string DbTable::upgradeSql(int to) const {
  std::string sql;
  for (const DbColumn& c : columns)
    if (c.since == to)
      sql += std::string("ALTER TABLE ") + name + " ADD COLUMN " + c.name + " " + c.type + "; ";
  return sql;
}

std::span<const DbTable> dbTables() { return kTables; }
std::span<const DbTable> charTables() { return dbTables().first(kCharTableCount); }
std::span<const DbTable> appTables() { return dbTables().subspan(kCharTableCount); }

const DbTable* dbTable(std::string_view name) {
  for (const DbTable& t : kTables)
    if (name == t.name) return &t;
  return nullptr;
}

std::string createTablesSql(std::span<const DbTable> tables) {
  std::string sql;
  for (const DbTable& t : tables) sql += t.createSql() + "\n";
  return sql;
}

}  // namespace hetopt
