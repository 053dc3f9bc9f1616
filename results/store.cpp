// The SQLite results store. See store.h for the contract and migrations.h for the schema.
#include "results/store.h"

#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <chrono>
#include <climits>
#include <set>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/host.h"
#include "core/utf8.h"
#include "results/migrations.h"
#include "results/read_only_guard.h"
#include "results/sqlite_util.h"
#include "results/views.h"

namespace dtnn {

using namespace store_detail;

namespace {

// Appends `targets` to schema.targets in order (ids in that order); a momentum < 0 is stored NULL (not stated).
void insert_targets(sqlite3* db, const std::string& path, const std::string& schema,
                    const std::vector<ResultStore::Target>& targets) {
  for (const ResultStore::Target& t : targets) {
    std::string ranks;
    for (int r : t.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    Statement st(db, path,
                 "INSERT INTO " + schema + ".targets (model, dataset, metric, target, tolerance, num_epochs, optimizer, "
                 "recipe, source, learning_rate, batch_size, global_batch_size, ranks, steps_per_epoch, momentum)"
                 " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    st.bind(1, t.model).bind(2, t.dataset).bind(3, t.metric).bind(4, t.target).bind(5, t.tolerance);
    st.bind(6, t.num_epochs).bind(7, t.optimizer).bind(8, t.recipe).bind(9, t.source).bind(10, t.learning_rate);
    st.bind(11, t.batch_size).bind(12, t.global_batch_size).bind(13, ranks).bind(14, t.steps_per_epoch);
    if (t.momentum >= 0.0) st.bind(15, t.momentum);
    st.run();
  }
}


namespace fs = std::filesystem;

// "<boot id> <start time in clock ticks since boot>" of process `pid` (migrations_16.h), or "" when /proc
// cannot say (no such process, or not readable).
std::string process_start(int64_t pid) {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  std::getline(boot, boot_id);
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(f, stat);
  const size_t close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (boot_id.empty() || close == std::string::npos) return "";
  std::istringstream rest(stat.substr(close + 2));  // from field 3, the state
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i)
    if (i == 22) return boot_id + " " + field;
  return "";
}

// True when a run's runner was on this host and is no longer there: no process has its pid, or the one that
// has it started at another time (a reused pid; `start` '' = not recorded: the pid alone decides). A pid of
// another host cannot be checked: it counts as alive.
bool runner_gone(const std::string& host, int64_t pid, const std::string& start) {
  if (host != host_name() || pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
  if (start.empty()) return false;
  const std::string now = process_start(pid);
  return !now.empty() && now != start;
}

// SQL function dtnn_runner_alive(runner_host, runner_pid, runner_start), so read-only tools can tell orphaned
// 'running' rows without writing.
void runner_alive_sql(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const unsigned char* host = sqlite3_value_text(argv[0]);
  const int64_t pid = sqlite3_value_int64(argv[1]);
  const unsigned char* start = sqlite3_value_text(argv[2]);
  sqlite3_result_int(ctx, runner_gone(host ? reinterpret_cast<const char*>(host) : "", pid,
                                      start ? reinterpret_cast<const char*>(start) : "") ? 0 : 1);
}

sqlite3* open_db(const std::string& path, int flags) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    fail(path, ": cannot open the results database: ", msg);
  }
  sqlite3_busy_timeout(db, 60000);  // two runners, or a reader during a write: wait, do not fail
  sqlite3_extended_result_codes(db, 1);
  sqlite3_create_function(db, "dtnn_runner_alive", 3, SQLITE_UTF8, nullptr, runner_alive_sql, nullptr, nullptr);
  return db;
}

// "file:" URI of an existing database for read-only access that takes no locks and makes no -shm/-wal files
// (see open_read_only). The path is made absolute and '%', '?' and '#' are escaped as the URI syntax needs.
std::string immutable_uri(const std::string& path) {
  std::string uri = "file:";
  for (const char c : fs::absolute(path).lexically_normal().string()) {
    if (c == '%' || c == '?' || c == '#') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      uri += buf;
    } else {
      uri += c;
    }
  }
  return uri + "?mode=ro&immutable=1";
}

bool has_table(sqlite3* db, const std::string& path, const std::string& table) {
  Statement st(db, path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?");
  st.bind(1, table);
  st.step();
  return st.int_column(0) > 0;
}

// The schema version the file records. One no dtnn writes (negative, or past an int: a damaged or foreign
// database) is refused here, never read as another number and migrated.
int stored_version(sqlite3* db, const std::string& path) {
  if (!has_table(db, path, "schema_migrations")) return 0;
  Statement st(db, path, "SELECT coalesce(max(version), 0), coalesce(min(version), 0) FROM schema_migrations");
  st.step();
  const int64_t newest = st.int_column(0), oldest = st.int_column(1);
  if (oldest < 0 || newest > INT_MAX)
    fail(path, ": schema version ", oldest < 0 ? oldest : newest,
         " is not one any dtnn writes (a damaged or foreign database): not read or migrated");
  return static_cast<int>(newest);
}

// The message for a database whose schema is newer than this build's migrations.
std::string newer_schema(const std::string& path, int version) {
  return path + ": this database was written by a newer dtnn (schema version " + std::to_string(version) +
         ", this build knows " + std::to_string(ResultStore::latest_version()) + "): use that build or a newer one";
}

std::string param(const std::map<std::string, std::string>& params, const std::string& name,
                  const std::string& fallback) {
  auto it = params.find(name);
  return it == params.end() ? fallback : it->second;
}

}  // namespace

std::string dataset_label(const std::map<std::string, std::string>& params) {
  const std::string dataset = param(params, "dataset", "mnist");
  if (param(params, "use_synthetic_data", "False") == "True") return "synthetic-" + dataset;
  std::string path = param(params, "dataset_train_path", "");
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.empty()) return dataset;
  return std::filesystem::path(path).filename().string();
}

void ResultStore::check_path(const std::string& path) {
  if (path.empty()) fail("--db: empty path (expected a results database file)");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::is_directory(st)) fail(path, ": is a directory, expected a results database file");
  if (fs::exists(st) && !fs::is_regular_file(st)) fail(path, ": not a regular file (a results database is a file)");
  if (fs::exists(st)) return;
  // A new file: the nearest existing ancestor must be a directory (parents are created below it).
  for (fs::path up = fs::absolute(path, ec).parent_path(); !up.empty(); up = up.parent_path()) {
    const fs::file_status ust = fs::status(up, ec);
    if (!fs::exists(ust)) {
      if (up == up.parent_path()) break;
      continue;
    }
    if (!fs::is_directory(ust)) fail(path, ": ", up.string(), " is not a directory");
    break;
  }
}

ResultStore ResultStore::open(const std::string& path) { return open_at_version(path, latest_version()); }

ResultStore ResultStore::open_existing(const std::string& path) {
  check_path(path);
  if (!fs::exists(path)) fail(path, ": no such results database (run `dtnn run` first)");
  return open(path);
}

ResultStore ResultStore::open_at_version(const std::string& path, int version) {
  check_path(path);
  ResultStore store(open_db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE), path);
  exec_sql(store.db_, path, "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;");
  // Switching to WAL and creating the schema take locks for which SQLite does not always call the busy
  // handler (two runners creating one file at once): retry those steps while the database is busy.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    try {
      store.refuse_foreign();  // before WAL: switching another program's database to WAL would persist
      {
        // WAL: readers never block the writer and a killed writer leaves the last committed state.
        Statement wal(store.db_, store.path_, "PRAGMA journal_mode = WAL");
        if (!wal.step()) fail(path, ": cannot switch to WAL");
        if (*wal.text_column(0) != "wal") fail(path, ": journal mode is ", *wal.text_column(0), ", not WAL");
      }
      store.migrate(version);
      return store;
    } catch (const Error&) {
      const int code = sqlite3_errcode(store.db_) & 0xff;
      if ((code != SQLITE_BUSY && code != SQLITE_LOCKED) || std::chrono::steady_clock::now() > deadline) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

ResultStore ResultStore::open_read_only(const std::string& path) { return open_read_only(path, nullptr); }

ResultStore ResultStore::open_read_only_with_targets(const std::string& path, const std::vector<Target>& targets) {
  return open_read_only(path, &targets);
}

ResultStore ResultStore::open_read_only(const std::string& path, const std::vector<Target>* targets) {
  check_path(path);
  if (!fs::exists(path)) fail(path, ": no such results database (run `dtnn run` first)");
  ResultStore store(open_db(path, SQLITE_OPEN_READONLY), path);
  exec_sql(store.db_, path, "PRAGMA foreign_keys = ON");
  int v = 0;
  try {
    v = stored_version(store.db_, path);  // the first read: where a WAL database needs its -shm file
  } catch (const Error&) {
    const int code = sqlite3_errcode(store.db_) & 0xff;
    if (code != SQLITE_READONLY && code != SQLITE_CANTOPEN) throw;
    // The -shm/-wal files cannot be created here: read the main file as immutable (see store.h), unless a
    // -wal file holds commits that only a -shm file could let SQLite read.
    std::error_code ec;
    if (fs::file_size(path + "-wal", ec) > 0 && !ec && !fs::exists(path + "-shm"))
      fail(path, ": its write-ahead log ", path, "-wal holds changes SQLite reads only through a ", path,
           "-shm file, which this user cannot create in ", fs::absolute(path).parent_path().string(),
           ": copy the database and its -wal file to a directory you can write and read the copy, or have a "
           "user who can write there run `dtnn query matrices --db ", path, "` once");
    store = ResultStore(open_db(immutable_uri(path), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI), path);
    exec_sql(store.db_, path, "PRAGMA foreign_keys = ON");
    v = stored_version(store.db_, path);
  }
  if (v == 0) fail(path, ": not a dtnn results database");
  if (v > latest_version()) fail(newer_schema(path, v));
  if (v != latest_version())
    fail(path, ": schema version ", v, ", this dtnn reads version ", latest_version(),
         " (a writer such as `dtnn run` or `dtnn ingest` migrates it; query, check and report only read)");
  // Another build's views: this build's, for this connection only (the TEMP schema is not the file), created
  // before the connection is closed to writes.
  if (targets) {
    exec_sql(store.db_, path,
             "CREATE TEMP TABLE targets (id INTEGER PRIMARY KEY, model TEXT NOT NULL, dataset TEXT NOT NULL, metric "
             "TEXT NOT NULL, target REAL NOT NULL, tolerance REAL NOT NULL, num_epochs INTEGER NOT NULL, optimizer TEXT "
             "NOT NULL, recipe TEXT NOT NULL, source TEXT NOT NULL, learning_rate REAL NOT NULL, batch_size INTEGER NOT "
             "NULL, global_batch_size INTEGER NOT NULL, ranks TEXT NOT NULL, steps_per_epoch INTEGER NOT NULL, "
             "momentum REAL)");
    insert_targets(store.db_, path, "temp", *targets);
  }
  if (targets || !views_current(store.db_, path)) create_temp_views(store.db_, path);
  exec_sql(store.db_, path, "PRAGMA query_only = ON");
  guard_read_only(store.db_, path);
  store.read_only_ = true;
  return store;
}

ResultStore::ResultStore(ResultStore&& other) noexcept
    : db_(other.db_), path_(std::move(other.path_)), read_only_(other.read_only_) {
  other.db_ = nullptr;
}

ResultStore& ResultStore::operator=(ResultStore&& other) noexcept {
  if (this != &other) {
    sqlite3_close(db_);
    db_ = other.db_;
    path_ = std::move(other.path_);
    read_only_ = other.read_only_;
    other.db_ = nullptr;
  }
  return *this;
}

ResultStore::~ResultStore() { sqlite3_close(db_); }

int ResultStore::latest_version() {
  return static_cast<int>(sizeof schema::kMigrations / sizeof schema::kMigrations[0]);
}

int ResultStore::version() const { return stored_version(db_, path_); }

namespace {

// Foreign keys off for the length of a migration, as SQLite's table-rebuild procedure requires (a DROP TABLE
// with them on would cascade-delete the rows that reference it); migrate() checks them before committing.
// The pragma is a no-op inside a transaction, so this wraps the migration's transaction.
class ForeignKeysOff {
 public:
  ForeignKeysOff(sqlite3* db, const std::string& path) : db_(db) { exec_sql(db, path, "PRAGMA foreign_keys = OFF"); }
  ~ForeignKeysOff() { sqlite3_exec(db_, "PRAGMA foreign_keys = ON", nullptr, nullptr, nullptr); }
  ForeignKeysOff(const ForeignKeysOff&) = delete;
  ForeignKeysOff& operator=(const ForeignKeysOff&) = delete;

 private:
  sqlite3* db_;
};

}  // namespace

void ResultStore::refuse_foreign() const {
  if (has_table(db_, path_, "schema_migrations")) return;
  Statement any(db_, path_, "SELECT count(*) FROM sqlite_master");
  any.step();
  if (any.int_column(0) > 0) fail(path_, ": not a dtnn results database (it has tables but no schema_migrations)");
}

void ResultStore::migrate(int up_to) {
  const ForeignKeysOff fk_off(db_, path_);
  Transaction tx(db_, path_);
  if (!has_table(db_, path_, "schema_migrations")) {
    refuse_foreign();  // again inside the transaction: another process may have created tables meanwhile
    exec_sql(db_, path_,
             "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, "
             "applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')))");
  }
  const int current = stored_version(db_, path_);
  if (current > latest_version()) fail(newer_schema(path_, current));
  // Views come off before the tables change (a rebuilt table must not drag another build's views along) and
  // back, this build's, once the tables are the latest; a database left at an older version has none.
  const bool pending = current < std::min(up_to, latest_version());
  const bool at_latest = std::min(up_to, latest_version()) == latest_version();
  if (pending || !at_latest || !views_current(db_, path_)) drop_views(db_, path_);
  for (const schema::Migration& m : schema::kMigrations) {
    if (m.version <= current || m.version > up_to) continue;
    exec_sql(db_, path_, m.sql);
    Statement st(db_, path_, "INSERT INTO schema_migrations (version, description) VALUES (?, ?)");
    st.bind(1, m.version).bind(2, m.description).run();
  }
  if (at_latest && !views_current(db_, path_)) create_views(db_, path_);
  {
    Statement fk(db_, path_, "PRAGMA foreign_key_check");
    if (fk.step()) fail(path_, ": migrating: a row of table ", *fk.text_column(0), " refers to a missing row");
  }
  tx.commit();
}

int64_t ResultStore::add_matrix(const std::string& name, const std::string& file, const std::string& hash,
                                const std::string& text) {
  Transaction tx(db_, path_);
  Statement ins(db_, path_, "INSERT OR IGNORE INTO matrices (name, file, hash, text) VALUES (?, ?, ?, ?)");
  ins.bind(1, name).bind(2, file).bind(3, hash).bind(4, text).run();
  int64_t id = 0;
  {
    Statement sel(db_, path_, "SELECT id FROM matrices WHERE name = ? AND hash = ?");
    sel.bind(1, name).bind(2, hash);
    DTNN_ASSERT(sel.step());
    id = sel.int_column(0);
  }  // a statement still holding a row would block the COMMIT
  tx.commit();
  return id;
}

int64_t ResultStore::add_environment(const StoredEnvironment& e) {
  static const char* kColumns =
      "host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type, dtnn_version, git_commit, "
      "git_dirty, env_vars, machine_key, cpu_vendor, cpu_family, cpu_model_number, cpu_stepping, isa, "
      "logical_cpus, physical_cores, sockets, l1d_kib, l2_kib, l3_kib, kernel, hypervisor";
  const MachineIdentity& m = e.machine;
  const std::string key = m.key();  // '' for a machine nobody described: "not recorded", as before migration 10
  auto bind_all = [&](Statement& st) {
    st.bind(1, e.host).bind(2, e.cpu_model).bind(3, e.cores).bind(4, e.gpu).bind(5, e.compiler).bind(6, e.blas);
    st.bind(7, e.onednn).bind(8, e.mpi).bind(9, e.cuda).bind(10, e.build_type).bind(11, e.dtnn_version);
    st.bind(12, e.git_commit).bind(13, e.git_dirty ? 1 : 0).bind(14, e.env_vars).bind(15, key).bind(16, m.vendor);
    st.bind(17, m.family).bind(18, m.model).bind(19, m.stepping).bind(20, m.isa).bind(21, m.logical_cpus);
    st.bind(22, m.physical_cores).bind(23, m.sockets).bind(24, m.l1d_kib).bind(25, m.l2_kib).bind(26, m.l3_kib);
    st.bind(27, m.kernel).bind(28, m.hypervisor);
  };
  Transaction tx(db_, path_);
  Statement ins(db_, path_,
                std::string("INSERT OR IGNORE INTO environments (") + kColumns +
                    ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  bind_all(ins);
  ins.run();
  int64_t id = 0;
  {
    // The UNIQUE columns (and hypervisor, part of machine_key anyway); positions 16-26 go unused here.
    Statement sel(db_, path_,
                  "SELECT id FROM environments WHERE host = ?1 AND cpu_model = ?2 AND cores = ?3 AND gpu = ?4 AND "
                  "compiler = ?5 AND blas = ?6 AND onednn = ?7 AND mpi = ?8 AND cuda = ?9 AND build_type = ?10 AND "
                  "dtnn_version = ?11 AND git_commit = ?12 AND git_dirty = ?13 AND env_vars = ?14 AND "
                  "machine_key = ?15 AND kernel = ?27 AND hypervisor = ?28");
    bind_all(sel);
    DTNN_ASSERT(sel.step());
    id = sel.int_column(0);
  }
  tx.commit();
  return id;
}

int64_t ResultStore::insert_running(const RunStart& s) {
  nlohmann::json params = s.params;
  const auto& p = s.params;
  Statement st(db_, path_,
               "INSERT INTO runs (matrix_id, environment_id, trial_key, config_key, label, repeat, framework, model, "
               "dataset, conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, status, "
               "command, log_path, runner_pid, runner_host, tags, runner_job_id, runner_start) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?)");
  st.bind(1, s.matrix_id).bind(2, s.environment_id).bind(3, s.trial_key).bind(4, s.config_key).bind(5, s.label);
  st.bind(6, s.repeat).bind(7, param(p, "framework", "dtnn")).bind(8, param(p, "model", "simplecnn"));
  st.bind(9, dataset_label(p)).bind(10, param(p, "conv_algo", "auto"));
  st.bind(11, int64_t{std::stoll(param(p, "ranks", "1"))}).bind(12, int64_t{std::stoll(param(p, "threads", "0"))});
  // The trial's batch: batch_size, which a strong-scaling trial gives as the global batch, or the global batch
  // a trial sets as global_batch_size (stored as the default 64 before, beside real batch-64 runs).
  st.bind(13, param(p, "device", "cpu"))
      .bind(14, int64_t{std::stoll(param(p, "batch_size", param(p, "global_batch_size", "64")))});
  st.bind(15, int64_t{std::stoll(param(p, "num_epochs", "1"))}).bind(16, param(p, "optimizer", "sgd"));
  escape_invalid_utf8(params);  // paths resolved against a matrix's directory are bytes
  st.bind(17, params.dump()).bind(18, s.command).bind(19, s.log_path).bind(20, static_cast<int64_t>(::getpid()));
  const char* job = std::getenv("SLURM_JOB_ID");  // a runner inside a Slurm job (dtnn run --submit)
  st.bind(21, host_name()).bind(22, s.tags).bind(23, std::string(job ? job : ""));
  st.bind(24, process_start(::getpid()));
  st.run();
  return sqlite3_last_insert_rowid(db_);
}

int64_t ResultStore::begin_run(const RunStart& s) {
  Transaction tx(db_, path_);
  const int64_t id = insert_running(s);
  tx.commit();
  return id;
}

std::optional<int64_t> ResultStore::claim_run(RunStart& s, int repeats) {
  // Reading the taken repeats and inserting in one write transaction (BEGIN IMMEDIATE) is what makes the claim
  // exclusive: a second runner's read waits for this insert and sees it.
  Transaction tx(db_, path_);
  std::set<int64_t> taken;
  {
    Statement st(db_, path_,
                 "SELECT repeat FROM runs WHERE matrix_id IN (SELECT id FROM matrices WHERE name = "
                 "(SELECT name FROM matrices WHERE id = ?)) AND environment_id = ? AND trial_key = ? "
                 "AND status IN ('ok', 'diverged', 'running')");
    st.bind(1, s.matrix_id).bind(2, s.environment_id).bind(3, s.trial_key);
    while (st.step()) taken.insert(st.int_column(0));
  }
  if (static_cast<int64_t>(taken.size()) >= repeats) return std::nullopt;
  // Fewer than `repeats` numbers are taken, so one below `repeats` is free.
  int free = 0;
  while (taken.count(free)) ++free;
  s.repeat = free;
  const int64_t id = insert_running(s);
  tx.commit();
  return id;
}

void ResultStore::set_command(int64_t run_id, const std::string& command) {
  Statement st(db_, path_, "UPDATE runs SET command = ? WHERE id = ?");
  st.bind(1, command).bind(2, run_id);
  st.run();
}

void ResultStore::set_log_path(int64_t run_id, const std::string& log_path) {
  Statement st(db_, path_, "UPDATE runs SET log_path = ? WHERE id = ?");
  st.bind(1, log_path).bind(2, run_id).run();
}

void ResultStore::set_trace_path(int64_t run_id, const std::string& trace_path) {
  Statement st(db_, path_, "UPDATE runs SET trace_path = ? WHERE id = ?");
  st.bind(1, trace_path).bind(2, run_id).run();
}

std::vector<bool> ResultStore::add_conv_benchmarks(int64_t environment_id, const std::vector<ConvBenchmarkRow>& rows) {
  return add_benchmarks(environment_id, rows, {}).conv;
}

bool ResultStore::insert_conv_benchmark(int64_t environment_id, const ConvBenchmarkRow& r) {
  // Skipped when an equal row (every field but the file name, which may be spelt differently) is stored:
  // ingesting one file twice adds nothing. Equal doubles: both were parsed from the same JSON text.
  Statement st(db_, path_,
               "INSERT INTO conv_benchmarks (environment_id, source, file, model, layer, problem, algorithm, "
               "direction, device, threads, tf32, median_ms, min_ms, max_ms, gflops, declined) "
               "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16 WHERE NOT EXISTS ("
               "SELECT 1 FROM conv_benchmarks WHERE environment_id = ?1 AND source = ?2 AND model = ?4 AND "
               "layer IS ?5 AND problem = ?6 AND algorithm = ?7 AND direction = ?8 AND device = ?9 AND "
               "threads = ?10 AND tf32 = ?11 AND median_ms IS ?12 AND min_ms IS ?13 AND max_ms IS ?14 AND "
               "gflops IS ?15 AND declined IS ?16)");
  st.bind(1, environment_id).bind(2, r.source).bind(3, r.file).bind(4, r.model).bind(5, r.layer);
  st.bind(6, r.problem).bind(7, r.algorithm).bind(8, r.direction).bind(9, r.device);
  st.bind(10, static_cast<int64_t>(r.threads)).bind(11, static_cast<int64_t>(r.tf32 ? 1 : 0));
  st.bind(12, r.median_ms).bind(13, r.min_ms).bind(14, r.max_ms).bind(15, r.gflops);
  st.bind(16, r.declined.empty() ? std::optional<std::string>() : std::optional<std::string>(r.declined));
  st.run();
  return sqlite3_changes(db_) == 1;
}

void ResultStore::finish_run(int64_t run_id, const std::string& status, const std::string& error, double duration_s) {
  DTNN_ASSERT(status != "ok" && status != "running");
  Transaction tx(db_, path_);
  Statement up(db_, path_,
               "UPDATE runs SET status = ?, error = ?, duration_s = ?, "
               "finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ? AND status = 'running'");
  up.bind(1, status).bind(2, error).bind(3, duration_s).bind(4, run_id).run();
  tx.commit();
}

std::vector<std::string> ResultStore::reap_orphaned_runs() {
  Transaction tx(db_, path_);
  std::vector<std::pair<int64_t, int64_t>> gone;
  std::vector<std::string> log_paths;
  {
    const std::string host = host_name();
    Statement sel(db_, path_,
                  "SELECT id, runner_pid, log_path, runner_start FROM runs WHERE status = 'running' AND "
                  "runner_host = ?");
    sel.bind(1, host);
    while (sel.step()) {
      const int64_t pid = sel.int_column(1);
      if (!runner_gone(host, pid, sel.text_column(3).value_or(""))) continue;
      gone.emplace_back(sel.int_column(0), pid);
      log_paths.push_back(sel.text_column(2).value_or(""));
    }
  }
  for (const auto& [id, pid] : gone) {
    Statement up(db_, path_,
                 "UPDATE runs SET status = 'interrupted', finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), "
                 "error = ? WHERE id = ?");
    up.bind(1, "the runner (pid " + std::to_string(pid) + ") ended before the run finished").bind(2, id).run();
  }
  tx.commit();
  return log_paths;
}

ResultStore::StoredResults ResultStore::count_stored_results(int64_t matrix_id, int64_t environment_id,
                                                             const std::string& trial_key) {
  // Any version of the matrix with this name: the trial key holds every parameter of the trial, so an edit
  // that adds an axis value (a new matrix text, a new matrices row) reruns only the new trials.
  Statement st(db_, path_,
               "SELECT count(*) FILTER (WHERE status = 'ok'), count(*) FILTER (WHERE status = 'diverged') FROM runs "
               "WHERE matrix_id IN (SELECT id FROM matrices WHERE name = (SELECT name FROM matrices WHERE id = ?)) "
               "AND environment_id = ? AND trial_key = ?");
  st.bind(1, matrix_id).bind(2, environment_id).bind(3, trial_key);
  st.step();
  return {static_cast<int>(st.int_column(0)), static_cast<int>(st.int_column(1))};
}

void ResultStore::replace_targets(const std::vector<Target>& targets) {
  Transaction tx(db_, path_);
  exec_sql(db_, path_, "DELETE FROM targets");
  insert_targets(db_, path_, "main", targets);
  tx.commit();
}

namespace {

// sqlite3_progress_handler's callback: non-zero interrupts the statement (SQLITE_INTERRUPT).
int past_deadline(void* deadline) {
  return std::chrono::steady_clock::now() > *static_cast<std::chrono::steady_clock::time_point*>(deadline);
}

// Removes the progress handler however the statement ends.
struct ProgressHandlerOff {
  sqlite3* db;
  ~ProgressHandlerOff() { sqlite3_progress_handler(db, 0, nullptr, nullptr); }
};

}  // namespace

void ResultStore::query_rows(const std::string& sql,
                             const std::function<void(const std::vector<std::string>&)>& on_columns,
                             const std::function<void(const RowView&)>& on_row, double time_limit_s,
                             std::size_t max_result_bytes) const {
  // NaN would turn the time guard off (every comparison with it is false).
  DTNN_CHECK(std::isfinite(time_limit_s) && time_limit_s >= 0, "query time limit must be >= 0 seconds (got ",
             time_limit_s, ")");
  Statement st(db_, path_, sql);
  // VACUUM INTO has no authorizer action (read_only_guard.h); it would create its file before failing.
  if (read_only_ && !st.read_only())
    fail(path_, ": the database is open read-only: only statements that read run (not \"", sql.substr(0, 40), "\")");
  auto deadline = std::chrono::steady_clock::time_point::max();
  if (time_limit_s > 0) {
    deadline = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(std::min(time_limit_s, 1e9)));
    sqlite3_progress_handler(db_, 100000, past_deadline, &deadline);  // ~1 ms of virtual-machine steps
  }
  const ProgressHandlerOff off{db_};
  std::vector<std::string> columns;
  for (int i = 0; i < st.columns(); ++i) columns.push_back(st.column_name(i));
  on_columns(columns);
  RowView row(columns.size());
  std::size_t bytes = 0, rows = 0;
  for (;; ++rows) {
    bool row_ready = false;
    try {
      row_ready = st.step();
    } catch (const Error&) {
      if (std::chrono::steady_clock::now() > deadline)
        fail(path_, ": the statement ran longer than ", time_limit_s,
             " s and was stopped (a recursive WITH without LIMIT? raise --timeout, or 0 for none)");
      if ((sqlite3_errcode(db_) & 0xff) == SQLITE_NOMEM && sqlite3_hard_heap_limit64(-1) > 0)
        fail(path_, ": the statement needed more than the ", sqlite3_hard_heap_limit64(-1),
             " bytes SQLite may use here and was stopped (add WHERE or LIMIT, or smaller values)");
      throw;
    }
    if (!row_ready) break;
    for (int i = 0; i < st.columns(); ++i) {
      row[static_cast<size_t>(i)] = st.text_view(i);
      bytes += (row[static_cast<size_t>(i)] ? row[static_cast<size_t>(i)]->size() : 0) + 1;
      if (bytes > max_result_bytes)
        fail(path_, ": the result passed ", max_result_bytes, " bytes after ", rows,
             " rows and was stopped (add WHERE or LIMIT)");
    }
    on_row(row);
  }
}

QueryResult ResultStore::query(const std::string& sql, double time_limit_s, std::size_t max_result_bytes) const {
  QueryResult r;
  std::size_t held = 0;  // what the rows take in memory: text, and each cell's and row's bookkeeping
  query_rows(
      sql, [&](const std::vector<std::string>& columns) { r.columns = columns; },
      [&](const RowView& view) {
        std::vector<std::optional<std::string>> row;
        row.reserve(view.size());
        held += kRowBytes;
        for (const std::optional<std::string_view>& cell : view) {
          held += kCellBytes + (cell ? cell->size() : 0);
          if (held > max_result_bytes)
            fail(path_, ": the result passed ", max_result_bytes, " bytes after ", r.rows.size(),
                 " rows and was stopped (add WHERE or LIMIT)");
          row.push_back(cell ? std::optional<std::string>(std::string(*cell)) : std::nullopt);
        }
        r.rows.push_back(std::move(row));
      },
      time_limit_s, std::numeric_limits<std::size_t>::max());  // the memory held is the guard here
  return r;
}

void ResultStore::limit_sqlite_memory(std::size_t bytes) {
  sqlite3_hard_heap_limit64(static_cast<sqlite3_int64>(bytes));
}

void ResultStore::exec(const std::string& sql) {
  if (read_only_) {
    query(sql);  // one statement, through the read-only checks
    return;
  }
  exec_sql(db_, path_, sql);
}

}  // namespace dtnn
