// `dtnn query`. See query.h.
#include "analysis/query.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <regex>
#include <set>

#include "core/error.h"
#include "core/strings.h"

namespace dtnn {

namespace {

struct View {
  const char* name;
  const char* description;
  const char* sql;
};

const View kViews[] = {
    {"throughput", "samples/s of every ok run", "SELECT * FROM v_throughput ORDER BY run_id"},
    {"scaling", "speed-up and parallel efficiency against the fewest ranks (baseline_ranks) the same configuration "
     "ran on (source 'measured'), and predicted curves beside them (source 'model' or 'simgrid': against their own 1-rank prediction)",
     "SELECT * FROM v_scaling"},
    {"frameworks", "per recipe, machine and rank count, each framework (dtnn, pytorch: DDP beyond 1 rank, pydtnn) "
     "side by side: ok runs, median samples/s with its spread (min, max), speed-up and efficiency of the medians "
     "against the same framework's fewest ranks, exposed-communication share of the step, test accuracy",
     "SELECT * FROM v_frameworks"},
    {"ceilings", "contention ceilings (experiments/contention_ceiling.sh, dtnn ingest): per machine, model and rank "
     "count, independent copies' summed samples/s over one alone, newest first; dtnn predict applies the newest on "
     "localhost platforms",
     "SELECT id, machine_key, model, dataset, ranks, round(ceiling, 3) AS ceiling, round(alone_samples_per_s, 1) AS "
     "alone_samples_per_s, round(independent_samples_per_s, 1) AS independent_samples_per_s, "
     "round(data_parallel_samples_per_s, 1) AS data_parallel_samples_per_s, round(data_parallel_samples_per_s / "
     "independent_samples_per_s * 100, 1) AS data_parallel_pct_of_ceiling, round(step_jitter, 4) AS step_jitter, "
     "rounds, epochs, dtnn_commit, measured_at "
     "FROM contention_ceilings ORDER BY measured_at DESC, id DESC"},
    {"predictions", "every predicted row (dtnn predict --store, a matrix's mode = \"predict\" trials): never a "
     "measurement; calibration_runs: the measured runs its profile came from",
     "SELECT p.id, p.source, p.model_version, p.model_kind, p.model, p.platform, p.rules, p.mode, p.scaling, p.ranks, "
     "p.samples_per_rank, round(1e3 * p.step_s, 3) AS step_ms, round(1e3 * p.compute_s, 3) AS compute_ms, "
     "round(1e3 * p.exposed_s, 3) AS exposed_ms, round(1e3 * p.comm_s, 3) AS comm_ms, "
     "round(p.samples_per_s, 1) AS samples_per_s, round(p.speedup, 3) AS speedup, round(p.efficiency, 3) AS efficiency, "
     "p.algorithms, (SELECT group_concat(l.run_id) FROM prediction_runs l WHERE l.prediction_id = p.id) AS "
     "calibration_runs, p.environment_id, p.matrix_id, p.config_key, p.label, p.created_at FROM predictions p "
     "ORDER BY p.id"},
    {"comm", "gradient reduction of every ok run: mode, buckets, the median rank's ms per step of step time, compute, "
     "communication calls and exposed communication", "SELECT * FROM v_comm ORDER BY run_id"},
    {"phases", "per-rank time per phase of traced runs (forward/backward summed over layers; per layer: table "
     "run_phases) and of data-parallel runs (comm_timers: step, compute, comm_calls, exposed_comm)",
     "SELECT * FROM v_phases"},
    {"stragglers", "per step of every traced multi-rank run: the slowest rank (most busy time: step + data wait - "
     "exposed waits), its lag over the median rank and the phase where it lost most",
     "SELECT s.run_id, r.model, r.ranks, s.step, s.slowest_rank, round(1e3 * s.busy_s, 3) AS busy_ms, "
     "round(1e3 * s.median_busy_s, 3) AS median_busy_ms, round(1e3 * s.lag_s, 3) AS lag_ms, s.phase, "
     "round(1e3 * s.phase_lag_s, 3) AS phase_lag_ms FROM run_stragglers s JOIN runs r ON r.id = s.run_id "
     "ORDER BY s.run_id, s.step"},
    {"straggler_summary", "per traced multi-rank run: mean and largest lag of the slowest rank, which rank was "
     "slowest most often and the phase most often behind it", "SELECT * FROM v_stragglers"},
    {"averaging", "per run with --model_averaging, and per run of a matrix declaring model_averaging without it "
     "(mode gradient: --parallel=data; none: 1 rank): period, straggler, communication rounds (averages or merges; "
     "a gradient run's steps), bytes per rank, wait (rank 0, slowest rank), train and wall time, test accuracy",
     "SELECT * FROM v_averaging"},
    {"averaging_epochs", "per epoch of those runs: validation and train accuracy beside the cumulative "
     "communication rounds, bytes, slowest rank's wait and training time (accuracy vs rounds and vs time)",
     "SELECT * FROM v_averaging_epochs"},
    {"accuracy", "accuracy of ok runs against the targets the last `dtnn run` stored",
     "SELECT * FROM v_accuracy_vs_target ORDER BY run_id"},
    {"runs", "every run with its status and error ('running (runner gone)': its runner was killed; 'diverged': its "
     "loss became NaN or infinite, no samples/s or accuracy), and where it ran: launcher, Slurm job.step, the "
     "ranks' nodes and ranks per node, the scheduler, the launcher's version and the Slurm job the runner itself ran in "
     "(dtnn run --submit)",
     "SELECT id, matrix_id, label, repeat, CASE WHEN status = 'running' AND NOT dtnn_runner_alive(runner_host, "
     "runner_pid, runner_start) THEN 'running (runner gone)' ELSE status END AS status, round(duration_s, 1) AS duration_s, "
     "round(samples_per_s, 1) AS samples_per_s, round(test_accuracy, 2) AS test_accuracy, error, started_at, "
     "scheduler, launcher, CASE WHEN job_id = '' THEN '' ELSE job_id || '.' || step_id END AS slurm_step, "
     "node_list AS nodes, tasks_per_node, launcher_version, runner_job_id FROM runs ORDER BY id"},
    {"epochs", "per-epoch metrics of every run",
     "SELECT run_id, epoch, samples, round(time_s, 3) AS time_s, round(samples_per_s, 1) AS samples_per_s, lr, "
     "train_loss, train_accuracy, val_loss, val_accuracy FROM epochs ORDER BY run_id, epoch"},
    // Grouped by everything that changes a layer's time (device, threads, batch per rank, machine, the
    // algorithm that ran): one row averaged CPU and GPU runs of other batches under the labels of one of them.
    {"layers", "mean per-layer forward/backward ms per machine, model, device, threads, batch per rank, requested "
     "algorithm and layer (and the algorithm that ran)",
     "SELECT r.environment_id, r.model, r.device, r.threads, "
     "CAST(coalesce(json_extract(r.report, '$.options.batch_size'), r.batch_size) AS INTEGER) AS batch_per_rank, "
     "r.conv_algo AS requested_algo, l.layer_id, l.type, l.conv_algo, l.problem, count(*) AS runs, "
     "round(avg(l.forward_ms), 4) AS forward_ms, round(avg(l.backward_ms), 4) AS backward_ms "
     "FROM layer_timings l JOIN runs r ON r.id = l.run_id WHERE r.status = 'ok' AND r.framework = 'dtnn' "
     "GROUP BY r.environment_id, r.model, r.device, r.threads, batch_per_rank, r.conv_algo, l.layer_id, l.conv_algo, "
     "l.problem ORDER BY r.environment_id, r.model, r.device, r.threads, batch_per_rank, r.conv_algo, l.layer_id"},
    // One row per dtnn configuration and recipe, against PyTorch runs of the same recipe, threads and device.
    // Grouped by fewer keys than the join, it averaged dtnn over batch sizes against one arbitrary PyTorch
    // batch (a 2.0 ratio at both batches showed as 6.0), PyTorch over thread counts, and weak with strong
    // scaling. Runs without a samples/s (nothing trained) are left out.
    {"vs_pytorch",
     "dtnn against the PyTorch reference on the same model, data, recipe, device and threads (the newest "
     "environment's runs)",
     "WITH latest AS (SELECT environment_id AS id FROM runs WHERE status = 'ok' ORDER BY id DESC LIMIT 1), "
     "ok AS (SELECT *, CASE WHEN json_extract(params, '$.scaling') = 'strong' OR "
     "json_extract(params, '$.global_batch_size') IS NOT NULL THEN 'strong' ELSE 'weak' END AS scaling "
     "FROM runs WHERE status = 'ok' AND samples_per_s IS NOT NULL AND environment_id = (SELECT id FROM latest)), "
     "torch AS (SELECT model, dataset, num_epochs, batch_size, optimizer, device, threads, count(*) AS n, "
     "avg(samples_per_s) AS sps, avg(test_accuracy) AS acc FROM ok WHERE framework = 'pytorch' "
     "GROUP BY model, dataset, num_epochs, batch_size, optimizer, device, threads) "
     "SELECT d.model, d.dataset, d.device, d.batch_size, d.scaling, d.num_epochs, d.optimizer, d.conv_algo, d.ranks, "
     "d.threads, count(*) AS runs, t.n AS pytorch_runs, round(avg(d.samples_per_s), 1) AS dtnn_samples_per_s, "
     "round(t.sps, 1) AS pytorch_samples_per_s, round(avg(d.samples_per_s) / t.sps, 2) AS dtnn_over_pytorch, "
     "round(avg(d.test_accuracy), 2) AS dtnn_test_acc, round(t.acc, 2) AS pytorch_test_acc "
     "FROM ok d JOIN torch t ON t.model = d.model AND t.dataset = d.dataset AND t.num_epochs = d.num_epochs "
     "AND t.batch_size = d.batch_size AND t.optimizer = d.optimizer AND t.device = d.device AND t.threads = d.threads "
     "WHERE d.framework = 'dtnn' "
     "GROUP BY d.model, d.dataset, d.device, d.batch_size, d.scaling, d.num_epochs, d.optimizer, d.conv_algo, "
     "d.ranks, d.threads ORDER BY d.model, d.dataset, d.device, d.batch_size, d.scaling, d.conv_algo, d.ranks"},
    {"conv", "the fastest algorithm per conv problem, direction, device and threads (`dtnn ingest`ed benchmarks)",
     "SELECT * FROM v_best_conv"},
    {"conv_benchmarks", "every ingested convolution benchmark row",
     "SELECT id, source, model, layer, problem, algorithm, direction, device, threads, tf32, round(median_ms, 4) AS "
     "median_ms, round(min_ms, 4) AS min_ms, round(max_ms, 4) AS max_ms, round(gflops, 1) AS gflops, declined "
     "FROM conv_benchmarks ORDER BY id"},
    {"collectives", "every ingested MPI collective benchmark row (bench_allreduce): microseconds per operation, "
     "GB/s",
     "SELECT id, environment_id, op, bytes, ranks, transport, repetitions, round(time_s * 1e6, 3) AS time_us, "
     "round(time_min_s * 1e6, 3) AS min_us, round(time_max_s * 1e6, 3) AS max_us, "
     "round(time_stddev_s * 1e6, 3) AS stddev_us, round(bytes_per_s * 1e-9, 4) AS gb_per_s, "
     "round(bus_bytes_per_s * 1e-9, 4) AS bus_gb_per_s FROM collective_benchmarks ORDER BY id"},
    {"benchmarks", "every ingested named Google Benchmark row (bench_gemm, bench_layers, other suites): ms, "
     "GFLOP/s where the suite counts FLOP/s",
     "SELECT id, environment_id, source, name, threads, repetitions, round(real_time_ms, 4) AS real_ms, "
     "round(cpu_time_ms, 4) AS cpu_ms, round(real_min_ms, 4) AS min_ms, round(real_max_ms, 4) AS max_ms, "
     "round(json_extract(counters, '$.\"FLOP/s\"') * 1e-9, 2) AS gflops, counters, error "
     "FROM named_benchmarks ORDER BY id"},
    {"targets", "the accuracy targets stored by the last `dtnn run`", "SELECT * FROM targets ORDER BY id"},
    {"memory", "per run: the largest rank's peak resident memory (and device peak on a GPU) in MiB beside the "
     "model's planned buffers (dtnn), and every rank's peak RSS in bytes",
     "SELECT * FROM v_memory ORDER BY run_id"},
    {"time_to_target", "per run a target matches: the training time and epochs at which its metric first reached "
     "target - tolerance (MLPerf's time to train; a test-accuracy target is evaluated after training: reached at "
     "the end), NULL when not reached",
     "SELECT * FROM v_time_to_target ORDER BY run_id, metric"},
    {"environments", "machines and builds runs were made with", "SELECT * FROM environments ORDER BY id"},
    {"matrices", "matrix files runs came from", "SELECT id, name, file, hash, created_at FROM matrices ORDER BY id"},
};

// A stored cell as JSON: a number when its text is a JSON number literal (an integer within int64 as an integer,
// another as a double, subnormals included), else text: "007", "+1", ".5" and SQLite's "Inf" stay text.
nlohmann::json json_cell(const std::string& s) {
  static const std::regex number(R"(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)");
  if (s.size() > 400 || !std::regex_match(s, number)) return s;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && end == s.data() + s.size()) return v;
  if (const std::optional<double> d = parse_double(s)) return *d;
  return s;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// config_key cells ("name=value;..." in a canonical order) of a table: each cut down to the names whose values
// differ between the rows shown (a name a row lacks has its default), so rows that differ past the table's
// cell width still read apart; `shared` gets what every row has in common, printed once under the table.
std::vector<std::string> key_differences(const std::vector<std::string>& keys, std::string& shared) {
  std::vector<std::map<std::string, std::string>> parsed;
  std::set<std::string> names;
  for (const std::string& k : keys) {
    std::map<std::string, std::string> m;
    size_t at = 0;
    while (at < k.size()) {
      const size_t end = std::min(k.find(';', at), k.size());
      const std::string part = k.substr(at, end - at);
      const size_t eq = part.find('=');
      if (!part.empty()) m[part.substr(0, eq)] = eq == std::string::npos ? "" : part.substr(eq + 1);
      at = end + 1;
    }
    for (const auto& [n, v] : m) names.insert(n);
    parsed.push_back(std::move(m));
  }
  const auto value = [](const std::map<std::string, std::string>& m, const std::string& n) {
    const auto it = m.find(n);
    return it == m.end() ? std::string("default") : it->second;
  };
  std::vector<std::string> differ;
  shared.clear();
  for (const std::string& n : names) {
    bool same = true;
    for (const auto& m : parsed) same = same && value(m, n) == value(parsed.front(), n);
    if (same) shared += (shared.empty() ? "" : ";") + n + "=" + value(parsed.front(), n);
    else differ.push_back(n);
  }
  std::vector<std::string> out;
  for (const auto& m : parsed) {
    std::string cell;
    for (const std::string& n : differ) cell += (cell.empty() ? "" : ", ") + n + "=" + value(m, n);
    out.push_back(cell.empty() ? "(shared)" : cell);
  }
  return out;
}

// CSV (RFC 4180) or JSON rows, one at a time: the JSON is the array nlohmann's dump(2) prints, each object
// indented inside it, so a result is never held whole.
class RowPrinter {
 public:
  RowPrinter(std::ostream& out, const std::string& format) : out_(out), json_(format == "json") {}
  void columns(const std::vector<std::string>& names) {
    names_ = names;
    if (json_) return;
    for (size_t i = 0; i < names.size(); ++i) out_ << (i ? "," : "") << csv_field(names[i]);
    out_ << "\n";
  }
  void row(const ResultStore::RowView& row) {
    if (!json_) {
      for (size_t i = 0; i < row.size(); ++i) out_ << (i ? "," : "") << (row[i] ? csv_field(std::string(*row[i])) : "");
      out_ << "\n";
      return;
    }
    nlohmann::json o = nlohmann::json::object();
    for (size_t i = 0; i < row.size(); ++i) o[names_[i]] = row[i] ? json_cell(std::string(*row[i])) : nlohmann::json(nullptr);
    // Rows stored before the store made text valid UTF-8 may hold other bytes: U+FFFD for them, not a throw.
    const std::string text = o.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    out_ << (rows_++ ? ",\n  " : "[\n  ");
    for (const char c : text) out_ << c << (c == '\n' ? "  " : "");
  }
  void end() {
    if (json_) out_ << (rows_ ? "\n]\n" : "[]\n");
  }

 private:
  std::ostream& out_;
  bool json_;
  std::vector<std::string> names_;
  size_t rows_ = 0;
};

// A cell as the table shows it: control characters (C0, DEL) escaped, so stored text cannot move the cursor,
// clear the screen or retitle the terminal.
std::string shown_text(const std::optional<std::string>& v) {
  if (!v) return "NULL";
  std::string out;
  for (const char c : *v) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out += c;
      continue;
    }
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", u);
    out += buf;
  }
  return out;
}

// The rows aligned; column `replaced` (when `cells` is given) shows those cells instead of its own.
void print_table(std::ostream& out, const QueryResult& r, size_t replaced = std::numeric_limits<size_t>::max(),
                 const std::vector<std::string>* cells = nullptr) {
  const auto text_at = [&](size_t row, size_t i) {
    return cells && i == replaced ? shown_text((*cells)[row]) : shown_text(r.rows[row][i]);
  };
  std::vector<size_t> width(r.columns.size());
  for (size_t i = 0; i < r.columns.size(); ++i) width[i] = r.columns[i].size();
  constexpr size_t kMax = 60;  // long cells (errors, keys) are cut in the table; csv/json keep them whole
  for (size_t row = 0; row < r.rows.size(); ++row)
    for (size_t i = 0; i < r.rows[row].size(); ++i) width[i] = std::min(kMax, std::max(width[i], text_at(row, i).size()));
  auto cell = [&](const std::string& s, size_t w) {
    std::string c = s.size() > w ? s.substr(0, w - 3) + "..." : s;
    return c + std::string(w - c.size(), ' ');
  };
  for (size_t i = 0; i < r.columns.size(); ++i) out << (i ? "  " : "") << cell(r.columns[i], width[i]);
  out << "\n";
  for (size_t i = 0; i < r.columns.size(); ++i) out << (i ? "  " : "") << std::string(width[i], '-');
  out << "\n";
  for (size_t row = 0; row < r.rows.size(); ++row) {
    for (size_t i = 0; i < r.rows[row].size(); ++i) out << (i ? "  " : "") << cell(text_at(row, i), width[i]);
    out << "\n";
  }
  out << "(" << r.rows.size() << " row" << (r.rows.size() == 1 ? "" : "s") << ")\n";
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& query_views() {
  static const std::vector<std::pair<std::string, std::string>> views = [] {
    std::vector<std::pair<std::string, std::string>> v;
    for (const View& view : kViews) v.emplace_back(view.name, view.description);
    return v;
  }();
  return views;
}

std::string query_sql(const std::string& view_or_sql) {
  for (const View& v : kViews)
    if (view_or_sql == v.name) return v.sql;
  if (view_or_sql.find_first_of(" \t\n") == std::string::npos) {
    std::string names;
    for (const View& v : kViews) names += (names.empty() ? "" : ", ") + std::string(v.name);
    fail("unknown view '", view_or_sql, "' (views: ", names, "; or give an SQL statement)");
  }
  return view_or_sql;
}

void print_query(std::ostream& out, const QueryResult& r, const std::string& format) {
  auto text = [](const std::optional<std::string>& v) { return v ? *v : std::string("NULL"); };
  if (format == "csv" || format == "json") {
    RowPrinter printer(out, format);
    printer.columns(r.columns);
    ResultStore::RowView view;
    for (const auto& row : r.rows) {
      view.assign(row.begin(), row.end());
      printer.row(view);
    }
    printer.end();
  } else if (format == "table") {
    const auto key_col = std::find(r.columns.begin(), r.columns.end(), "config_key");
    if (key_col == r.columns.end() || r.rows.size() < 2) {
      print_table(out, r);
      return;
    }
    const size_t k = static_cast<size_t>(key_col - r.columns.begin());
    std::vector<std::string> keys;
    for (const auto& row : r.rows) keys.push_back(text(row[k]));
    std::string shared;
    const std::vector<std::string> cells = key_differences(keys, shared);
    print_table(out, r, k, &cells);
    out << "config_key shared by every row: " << (shared.empty() ? "(nothing)" : shown_text(shared)) << "\n";
  } else {
    fail("unknown --format '", format, "' (table, csv or json)");
  }
}

void run_query(std::ostream& out, const ResultStore& store, const std::string& sql, const std::string& format,
               double timeout_s) {
  if (format != "csv" && format != "json") return print_query(out, store.query(sql, timeout_s), format);
  RowPrinter printer(out, format);
  store.query_rows(
      sql, [&](const std::vector<std::string>& columns) { printer.columns(columns); },
      [&](const ResultStore::RowView& row) { printer.row(row); }, timeout_s);
  printer.end();
}

}  // namespace dtnn
