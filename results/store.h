// The results store: one SQLite file (WAL, busy timeout, foreign keys) holding matrices, environments,
// runs, per-epoch metrics, per-layer timings and accuracy targets, with a versioned schema applied by
// migrations (results/migrations.h lists them; never edit a released one, add the next).
//
// Two commands write, both through ResultStore::open and every write one transaction (BEGIN IMMEDIATE:
// concurrent writers queue on the busy timeout): the runner (`dtnn run`: matrices, environments, runs with
// their epochs and layer timings, and the targets file it was given) and `dtnn ingest` (conv_benchmarks and
// collective_benchmarks). A
// run is inserted as 'running' before its process starts and finished (status, error, the report's epochs
// and layers) in one transaction, so a killed runner leaves at most a 'running' row, which the next writer
// marks 'interrupted' once the runner process that owns it is gone. Everything else (query, compare, check,
// report) opens the file read-only; SQL run through a store can ask dtnn_runner_alive(runner_host,
// runner_pid, runner_start) whether a 'running' row still has its runner (0 only when the host is this one
// and no process has that pid, or the one that has it started at another time), so read-only tools can show
// orphans without writing.
//
// Errors (SQLite failures, a malformed report) are dtnn::Error naming the database file and, in words, what
// was being done ("<db>: committing: disk I/O error").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/machine.h"

struct sqlite3;

namespace dtnn {

// Where and with what a run was made. All the fields together identify a row (UNIQUE in the environments
// table): an equal environment is stored once.
struct StoredEnvironment {
  std::string host, cpu_model, gpu, compiler, blas, onednn, mpi, cuda, build_type, dtnn_version;
  int cores = 0;
  std::string git_commit;          // "" when not built from a git checkout
  bool git_dirty = false;
  std::string env_vars;            // JSON object of the relevant environment variables
  MachineIdentity machine;         // default (vendor "") in tests that do not care: machine_key ''
};

// What the runner knows before a run starts.
struct RunStart {
  int64_t matrix_id = 0;
  int64_t environment_id = 0;
  std::string trial_key, config_key, label;  // config_key: trial_key without ranks (the scaling group)
  int repeat = 0;                            // 0-based
  std::map<std::string, std::string> params;  // every trial parameter
  std::string tags;                           // comma-separated
  std::string command, log_path;
};

// One timed (or declined) convolution: a row of conv_benchmarks.
struct ConvBenchmarkRow {
  std::string source;  // bench_conv | dtnn_layers
  std::string file, model;
  std::optional<int64_t> layer;
  std::string problem, algorithm, direction, device;
  int threads = 0;
  bool tf32 = false;
  std::optional<double> median_ms, min_ms, max_ms, gflops;
  std::string declined;  // non-empty: no times
};

// One timed MPI collective (suites/bench_allreduce): a row of collective_benchmarks. Times are seconds per
// operation on the slowest rank.
struct CollectiveBenchmarkRow {
  std::string file;
  std::string op;         // allreduce | iallreduce (MPI_Iallreduce + MPI_Wait)
  int64_t bytes = 0;      // buffer size (floats × 4)
  int ranks = 0;
  std::string transport;  // as bench_allreduce's context says it: "default", "btl=self,tcp", ...
  std::string mpi_library;
  int repetitions = 1;    // runs the time summarises
  double time_s = 0;      // the median over repetitions (the only run without)
  std::optional<double> time_min_s, time_max_s, time_stddev_s;  // over repetitions; none without
  double bytes_per_s = 0;      // bytes / time_s (algorithm bandwidth)
  double bus_bytes_per_s = 0;  // × 2(ranks-1)/ranks (allreduce bus bandwidth, as nccl-tests)
};

// A benchmark known by its name only (migration 10): suites/bench_gemm, suites/bench_layers and any other
// project's Google Benchmark JSON. Times in milliseconds; NULL (nullopt) for a case skipped with an error.
struct NamedBenchmarkRow {
  std::string source;      // bench_gemm | bench_layers | google_benchmark
  std::string file, executable, name;  // name: Google Benchmark's run_name
  int threads = 1, repetitions = 1;
  std::optional<int64_t> iterations;
  std::optional<double> real_time_ms, cpu_time_ms, real_min_ms, real_max_ms, real_stddev_ms;
  std::optional<double> items_per_s, bytes_per_s;
  std::string counters = "{}";  // JSON object: user counters (medians over repetitions)
  std::string label;
  std::string error;            // the case's error_message; "" = it ran
};

// A measured contention ceiling (migration 22): experiments/contention_ceiling.sh's dtnn.contention_ceiling/1
// file (results/ingest_ceiling.h reads and checks it).
struct ContentionCeilingRow {
  std::string machine_key, model, dataset;
  int ranks = 2;
  double ceiling = 0.0;                       // independent / alone
  double alone_samples_per_s = 0.0, independent_samples_per_s = 0.0;
  std::optional<double> data_parallel_samples_per_s;
  std::optional<double> step_jitter;          // relative step-time standard deviation of the copies
  int rounds = 1, epochs = 1;
  std::string dtnn_commit, measured_at, file;
};

// A predicted row (migration 8): one rank count of a curve of `dtnn predict` or the SimGrid replay. Never a
// measurement: it goes to the predictions table, never to runs.
struct PredictionRow {
  std::string source = "model";  // model | simgrid
  std::string model_version, model_kind, model, platform;
  std::string platform_params = "{}";  // JSON object
  std::optional<std::string> rules;    // collective decision rules; none for PyDTNN's formulas
  std::string mode, scaling;           // blocking | non_blocking; weak | strong
  int ranks = 1;
  std::optional<int64_t> batch_size;
  double samples_per_rank = 0, global_batch = 0, step_s = 0, compute_s = 0, exposed_s = 0, comm_s = 0,
         samples_per_s = 0, speedup = 0, efficiency = 0;
  std::string algorithms;
  std::string variant;                  // what the options set beyond platform, mode, scaling, rules (migration 15)
  std::string provenance = "{}";        // JSON object
  std::vector<int64_t> calibration_runs;  // the measured runs the profile came from
  // The measured group it belongs with (the calibration run's environment and configuration), the matrix
  // that declared it and its trial there; unset when unknown.
  std::optional<int64_t> environment_id, matrix_id;
  std::optional<std::string> config_key, trial_key, label;
};

// The query result: column names and rows of text (SQL NULL is std::nullopt).
struct QueryResult {
  std::vector<std::string> columns;
  std::vector<std::vector<std::optional<std::string>>> rows;
};

class ResultStore {
 public:
  // Throws a one-line dtnn::Error when `path` cannot be a results database file: empty ("--db: empty
  // path"), a directory or another non-regular file (/dev/null), or under a parent that is not a directory.
  // The open functions call it; callers that create directories for the database call it first.
  static void check_path(const std::string& path);
  // Opens (creating if needed) for writing and applies pending migrations. Throws when the file is not a
  // dtnn database or its schema is newer than this build knows.
  static ResultStore open(const std::string& path);
  // As open, but a missing file is an error ("no such results database"), for tools that only add to
  // existing results.
  static ResultStore open_existing(const std::string& path);
  // Opens an existing database read-only (SQLITE_OPEN_READONLY, PRAGMA query_only and the authorizer of
  // results/read_only_guard.h): writes, ATTACH, VACUUM, writing pragmas and load_extension are refused before
  // they run, so no file is created or changed.
  // A WAL database whose -shm/-wal files cannot be created (a read-only directory, another user's files) is
  // opened again as immutable (URI immutable=1): SQLite then takes no locks and ignores a -wal file, which
  // is safe because nothing can be writing where those files cannot even be created, and a cleanly closed
  // WAL database keeps every committed row in the main file. A non-empty -wal file without its -shm there
  // is refused instead (immutable would silently miss its commits), in one line saying what to do.
  static ResultStore open_read_only(const std::string& path);
  // For migration tests: opens for writing and applies migrations only up to `version`.
  static ResultStore open_at_version(const std::string& path, int version);

  ResultStore(ResultStore&& other) noexcept;
  ResultStore& operator=(ResultStore&& other) noexcept;
  ~ResultStore();

  static int latest_version();
  int version() const;
  const std::string& path() const { return path_; }

  int64_t add_matrix(const std::string& name, const std::string& file, const std::string& hash,
                     const std::string& text);  // returns the existing id for the same name and hash
  int64_t add_environment(const StoredEnvironment& env);  // the id of the equal row, inserted if none

  // Inserts a run with status 'running', owned by this process (pid, host).
  int64_t begin_run(const RunStart& start);
  // begin_run for a runner that resumes a matrix beside others (--resume, a requeued job): inserts the run
  // only while fewer than `repeats` runs of its trial key (any version of the matrix, this environment) are
  // ok, diverged or running, numbered with the lowest repeat none of them holds (start.repeat is set to it: a
  // matrix with repeat_seeds trains repeat r with seed + r); nullopt when they are all taken. A 'running' row
  // of a runner that died keeps its place until a runner on its host reaps it.
  std::optional<int64_t> claim_run(RunStart& start, int repeats);
  // Replaces the run's stored command line (the runner's, once the claimed repeat decided its seed).
  void set_command(int64_t run_id, const std::string& command);
  // Records where the run's log is (known once the run has its id).
  void set_log_path(int64_t run_id, const std::string& log_path);
  // Records the run's trace files (the runner's --tracer_output for a matrix with tracing = true).
  void set_trace_path(int64_t run_id, const std::string& trace_path);
  // Ingests a dtnn.run_report/1 JSON text and sets status 'ok', in one transaction. Throws dtnn::Error
  // (and changes nothing) when the report is malformed, truncated or not a run report.
  void finish_run_ok(int64_t run_id, const std::string& report_json, double duration_s);
  // As finish_run_ok for a report whose status is "diverged" (the training loss became NaN or infinite): status
  // 'diverged' with the error line; the report, epochs and layer timings are stored as for an ok run, the
  // run-level samples_per_s, test_loss, test_accuracy and val_accuracy are left NULL (nothing counts them).
  void finish_run_diverged(int64_t run_id, const std::string& report_json, const std::string& error,
                           double duration_s);
  // Sets a final status without a report: failed | timeout | interrupted | unsupported, with the error line.
  void finish_run(int64_t run_id, const std::string& status, const std::string& error, double duration_s);
  // Marks 'interrupted' every 'running' row whose owning process no longer exists on this host; returns
  // their log paths (the runner deletes what their trials may have left next to them).
  std::vector<std::string> reap_orphaned_runs();

  // Runs with a result (status ok, or diverged: training that blows up does so again from the same seed) for
  // this environment and trial key in any version of this matrix (the matrices of its name: an edited file is
  // a new row) — what --resume skips. failed, timeout, interrupted and unsupported runs are run again.
  struct StoredResults {
    int ok = 0, diverged = 0;
  };
  StoredResults count_stored_results(int64_t matrix_id, int64_t environment_id, const std::string& trial_key);

  // Inserts convolution benchmark rows in one transaction (all or none). A row equal in every field to one
  // already stored for this environment (the same file ingested twice) is skipped: returns, per row,
  // whether it was stored.
  std::vector<bool> add_conv_benchmarks(int64_t environment_id, const std::vector<ConvBenchmarkRow>& rows);
  // As add_conv_benchmarks for both tables in one transaction (`dtnn ingest` of files of either kind); an
  // equal collective row (every field but the file) is skipped the same way.
  // Named rows too: an equal row (every field but the file) is skipped likewise; and contention ceilings, a
  // measurement already stored (machine, model, dataset, ranks and time) skipped.
  struct StoredRows {
    std::vector<bool> conv, collectives, named, ceilings;
  };
  StoredRows add_benchmarks(int64_t environment_id, const std::vector<ConvBenchmarkRow>& conv,
                            const std::vector<CollectiveBenchmarkRow>& collectives,
                            const std::vector<NamedBenchmarkRow>& named = {},
                            const std::vector<ContentionCeilingRow>& ceilings = {});

  // Inserts predicted rows and their calibration runs in one transaction (all or none); returns their ids.
  // Throws dtnn::Error naming the field for a value the schema refuses (a bad mode, source, rank count).
  std::vector<int64_t> add_predictions(const std::vector<PredictionRow>& rows);
  // Number of predicted rows of this matrix, environment and predicted trial (what --resume skips).
  int count_predictions(int64_t matrix_id, int64_t environment_id, const std::string& trial_key);

  // Replaces the targets table (the runner stores the targets file it was given; check reads the file).
  // An accuracy target and the recipe it holds for (analysis/targets.h says how a run matches it).
  struct Target {
    std::string model, dataset, metric;  // metric: test_accuracy | val_accuracy (percent)
    double target = 0.0, tolerance = 0.0;
    int num_epochs = 0;                  // 0: any epoch count (run to the target)
    std::string optimizer, recipe, source;
    double learning_rate = 0.0;          // the initial rate
    int batch_size = 0;                  // per rank; 0: stated as global_batch_size instead
    int global_batch_size = 0;           // batch_size x ranks; 0: stated per rank with `ranks`
    std::vector<int> ranks;              // rank counts the recipe holds for (with batch_size)
    int steps_per_epoch = 0;             // 0: whole epochs (a run truncating its epochs is another recipe)
    double momentum = -1.0;              // SGD's momentum; < 0: not stated (stored NULL), any run's matches
  };
  void replace_targets(const std::vector<Target>& targets);
  // open_read_only, with `targets` in place of the stored ones for this connection (`dtnn check` with a targets
  // file): a TEMP targets table, which shadows the file's, and this build's views as TEMP views that read it.
  static ResultStore open_read_only_with_targets(const std::string& path, const std::vector<Target>& targets);

  // Runs one SQL statement and returns its rows (for read-only stores, any write fails). A statement that
  // would not end or fill memory (a recursive CTE without LIMIT) fails with one line instead: after
  // time_limit_s seconds when it is > 0 (finite: NaN is refused), and as soon as its rows pass max_result_bytes.
  // The result's size counts each cell's text plus what holding it costs (kCellBytes a cell, kRowBytes a row),
  // so the guard bounds the memory a result takes, not only its text.
  static constexpr std::size_t kMaxQueryResultBytes = std::size_t{1} << 30;
  static constexpr std::size_t kCellBytes = 48, kRowBytes = 40;
  QueryResult query(const std::string& sql, double time_limit_s = 0,
                    std::size_t max_result_bytes = kMaxQueryResultBytes) const;
  // The same statement streamed: on_columns gets the column names once, then on_row every row in turn (its
  // cells are valid during that call only), so memory stays one row's. The same guards: time_limit_s, and
  // max_result_bytes over the cells' text (checked before a cell is read).
  using RowView = std::vector<std::optional<std::string_view>>;
  void query_rows(const std::string& sql, const std::function<void(const std::vector<std::string>&)>& on_columns,
                  const std::function<void(const RowView&)>& on_row, double time_limit_s = 0,
                  std::size_t max_result_bytes = kMaxQueryResultBytes) const;
  // Caps SQLite's own memory in this process (sqlite3_hard_heap_limit64): a statement that would need more
  // (three 900 MB blobs in one row, a huge sort) fails with "out of memory" instead of growing the process.
  static void limit_sqlite_memory(std::size_t bytes);
  // Statements without results (tests, maintenance); on a read-only store, one statement as query runs it.
  void exec(const std::string& sql);

 private:
  ResultStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  static ResultStore open_read_only(const std::string& path, const std::vector<Target>* targets);
  void migrate(int up_to);
  // Throws "not a dtnn results database" for a database with tables but no schema_migrations table.
  void refuse_foreign() const;
  int64_t insert_running(const RunStart& start);  // begin_run's INSERT, inside the caller's transaction
  bool insert_conv_benchmark(int64_t environment_id, const ConvBenchmarkRow& row);  // no transaction of its own
  bool insert_named_benchmark(int64_t environment_id, const NamedBenchmarkRow& row);
  bool insert_collective_benchmark(int64_t environment_id, const CollectiveBenchmarkRow& row);
  bool insert_contention_ceiling(int64_t environment_id, const ContentionCeilingRow& row);
  void finish_run_with_report(int64_t run_id, const std::string& report_json, double duration_s,
                              const std::string& status, const std::string& error);
  sqlite3* db_ = nullptr;
  std::string path_;
  bool read_only_ = false;  // open_read_only: query() runs only statements that read
};

// The dataset label of a trial, as targets and tables name datasets: "synthetic-<dataset>" for synthetic
// data, else the last component of dataset_train_path ("fashion-mnist", "mnist-10k"), else the dataset name.
std::string dataset_label(const std::map<std::string, std::string>& params);

}  // namespace dtnn
