// The dtnn command line: `dtnn train`, `models`, `algos`, `conv`, `layers` (the engine), `run`, `query`, `check`,
// `compare`, `report` (the harness) and `predict` (the performance model, analysis/perfmodel; its options in
// cli_predict.cpp). Only these two translation units include CLI11 (it is heavy to compile). Bad input prints one line, "dtnn: <what>", and exits non-zero: 2 for a malformed command line,
// 3 (kUnsupportedExit) for a valid request this build or machine cannot run, 4 (kDivergedExit) for a `dtnn train`
// whose loss became NaN or infinite, 1 for everything else. The judging commands (check, compare, history)
// exit 1 only for their verdict (a failed target, a regression) and 2 (kNoVerdictExit) when they could not
// judge (a bad file, an empty selection, mixed machines), so that CI tells a regression from a broken job.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "analysis/check.h"
#include "analysis/ci_output.h"
#include "analysis/compare.h"
#include "analysis/history.h"
#include "analysis/query.h"
#include "analysis/references.h"
#include "experiments/submit.h"
#include "experiments/source_dir.h"
#include "backend/cpu/blas.h"
#include "backend/cpu/blas_core.h"
#include "backend/gpu.h"
#include "conv/conv_algorithm.h"
#include "conv/cpu/cpu_algorithms.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/temp_cleanup.h"
#include "core/strings.h"
#include "experiments/cli_predict.h"
#include "experiments/conv_command.h"
#include "experiments/ingest.h"
#include "experiments/layers_command.h"
#include "experiments/runner.h"
#include "experiments/train_model_time.h"
#include "models/model.h"
#include "models/plan.h"
#include "parallel/communicator.h"
#include "results/store.h"
#include "train/option_table.h"
#include "train/run.h"

namespace {

// A number option's value must be finite: CLI11's Range lets "nan" through (every comparison with it is false).
const CLI::Validator finite_number(
    [](std::string& text) {
      const std::optional<double> v = dtnn::parse_double(text);
      return v && std::isfinite(*v) ? std::string() : "not a finite number: " + text;
    },
    "FINITE");

using dtnn::shell_quote;

using dtnn::TrainOptions;

void add_bool(CLI::App& app, const std::string& name, bool& value, const std::string& help) {
  // PyDTNN spells booleans as values (--test_as_validation=True); a bare flag means true.
  app.add_flag("--" + name, value, help)->default_str(value ? "True" : "False");
}

// One command-line option per row of the option table (train/option_table.h). CLI11 only collects the text;
// set_option_text converts and checks it, as it does for a matrix, so both accept and refuse the same values.
struct TrainFlags {
  std::vector<std::pair<const dtnn::OptionSpec*, CLI::Option*>> options;
  bool list = false;
  std::string list_format = "text";
};

void add_train_options(CLI::App& app, TrainFlags& flags) {
  for (const dtnn::OptionSpec& spec : dtnn::train_option_table()) {
    std::string help = spec.help;
    if (spec.flags & dtnn::kOptPlanned) help += " [not implemented yet: " + std::string(spec.why_not) + "]";
    // expected(0, 1): a bare boolean means True (PyDTNN's --evaluate), a bare text option means "" (--lr_schedulers=).
    // No default_str: CLI11 would hand it over as the value of a bare option.
    const std::string def = dtnn::option_default_text(spec);
    CLI::Option* opt = app.add_option("--" + std::string(spec.name))
                           ->description(help + " (default: " + (def.empty() ? "none" : def) + ")")
                           ->expected(0, 1)
                           ->type_name(spec.kind == dtnn::OptionKind::boolean ? "[=True|False]" : "=VALUE");
    flags.options.emplace_back(&spec, opt);
  }
  app.add_flag("--list-options", flags.list, "Print the option table (name, kind, default, where it is understood)")
      ->disable_flag_override();
  app.add_option("--format", flags.list_format, "--list-options: text, json or markdown (engine/OPTIONS.md)")
      ->capture_default_str();
}

// The parsed values into `o`; the names given (for resolve_options' conflict checks). Throws dtnn::Error.
std::vector<std::string> read_train_options(const TrainFlags& flags, TrainOptions& o) {
  std::vector<std::string> given;
  for (const auto& [spec, opt] : flags.options) {
    if (opt->count() == 0) continue;
    const std::vector<std::string> results = opt->results();
    // A bare boolean (--evaluate) is True (CLI11 hands "--evaluate=" over the same way: refused in main).
    std::string value = results.empty() ? "" : results.back();
    if (value.empty() && spec->kind == dtnn::OptionKind::boolean) value = "True";
    dtnn::set_option_text(*spec, o, value);
    given.push_back(spec->name);
  }
  return given;
}

// The zoo, one line per model: trainable parameters and forward GFLOPs per sample (a multiply-add is 2),
// from the models' plans (shapes only: listing the zoo allocates no weights).
int cmd_models() {
  std::printf("%-22s %-9s %-15s %12s %10s\n", "model", "dataset", "input (HWC)", "params", "GFLOPs");
  for (const dtnn::ModelInfo& info : dtnn::model_zoo()) {
    const dtnn::ModelPlan p = dtnn::plan_model(info.name);
    std::printf("%-22s %-9s %-15s %12lld %10.3f\n", info.name, info.dataset, p.input.str().c_str(),
                static_cast<long long>(p.params), p.forward_flops * 1e-9);
  }
  return 0;
}

int cmd_algos() {
  std::printf("Convolution algorithms, in fallback order (--conv_algo=NAME or auto):\n");
  for (const dtnn::ConvAlgorithm* a : dtnn::conv_algorithms()) std::printf("  %s\n", std::string(a->name()).c_str());
  if (!dtnn::gpu_conv_algorithms().empty()) {
    std::printf("GPU convolution algorithms (--enable_gpu; per direction, the others by gpu.cudnn_find):\n");
    for (const dtnn::ConvAlgorithm* a : dtnn::gpu_conv_algorithms()) {
      std::string dirs;
      for (dtnn::ConvDir d : {dtnn::ConvDir::fwd, dtnn::ConvDir::bwd_data, dtnn::ConvDir::bwd_filter}) {
        const dtnn::Support s = a->supports_dir(dtnn::ConvProblem{}, d);
        if (s.code != dtnn::SupportCode::no_such_direction) dirs += std::string(dirs.empty() ? "" : ", ") + dtnn::conv_dir_name(d);
      }
      std::printf("  %-34s %s\n", std::string(a->name()).c_str(), dirs.c_str());
    }
  }
  const std::string bf16 = dtnn::cpu_bf16_support();
  std::printf("bfloat16 (--dtype=bfloat16): cpu.onednn_bf16 and oneDNN's bf16 matmul: %s\n",
              bf16.empty() ? ("native here (oneDNN's ISA: " + dtnn::onednn_isa_name() + ")").c_str() : bf16.c_str());
  std::printf("BLAS: %s\nGPU backend: %s\n", dtnn::cpu::blas_version().c_str(), dtnn::gpu_description().c_str());
  return 0;
}

// Defaults that work from the repository root and from anywhere else.
const std::string kDefaultDb = "results/dtnn.db";
const std::string kDefaultTargets = dtnn::source_dir() + "/analysis/targets.toml";  // $DTNN_SOURCE_DIR too
const std::string kDefaultReferences = dtnn::source_dir() + "/analysis/references.toml";

int cmd_query(const std::string& db, const std::string& what, const std::string& format, double timeout_s) {
  if (what.empty()) {
    std::printf("Named views (dtnn query VIEW), or give one SQL statement:\n");
    for (const auto& [name, description] : dtnn::query_views()) std::printf("  %-13s %s\n", name.c_str(), description.c_str());
    return 0;
  }
  const std::string sql = dtnn::query_sql(what);
  if (format != "table" && format != "csv" && format != "json") dtnn::fail("unknown --format '", format, "' (table, csv or json)");
  // SQLite's own memory bounded beside the result guard's: a statement the guard never sees a row of (a huge
  // sort, three 900 MB blobs in one row) fails with "out of memory" instead of growing the process.
  dtnn::ResultStore::limit_sqlite_memory(dtnn::ResultStore::kMaxQueryResultBytes / 2);
  const dtnn::ResultStore store = dtnn::ResultStore::open_read_only(db);
  dtnn::run_query(std::cout, store, sql, format, timeout_s);
  return 0;
}

// "5%" or "0.05" -> 0.05.
double parse_fraction(const std::string& text) {
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    if (used < text.size() && text.substr(used) == "%") v /= 100.0, used = text.size();
    if (used == text.size() && v >= 0.0 && v < 1.0) return v;
  } catch (const std::exception&) {
  }
  dtnn::fail("--threshold: expected a fraction such as 5% or 0.05 (got '", text, "')");
}

// report --format: all, or a comma-separated list of markdown, html and paper; the formats to write.
std::vector<std::string> report_formats(const std::string& text) {
  if (text == "all") return {"markdown", "html", "paper"};
  std::vector<std::string> formats;
  std::stringstream parts(text);
  for (std::string f; std::getline(parts, f, ',');) {
    if (f != "markdown" && f != "html" && f != "paper")
      dtnn::fail("--format: expected all, or markdown, html and paper separated by commas (got '", text, "')");
    formats.push_back(f);
  }
  if (formats.empty()) dtnn::fail("--format: expected all, or markdown, html and paper separated by commas");
  return formats;
}

int cmd_report(const std::string& db, const std::string& out_dir, const std::string& matrix,
               const std::string& format) {
  const std::vector<std::string> formats = report_formats(format);
  std::error_code ec;  // not by opening it: a FIFO would block
  if (!std::filesystem::exists(db, ec)) dtnn::fail(db, ": no such results database (run `dtnn run` first)");
  // The checks query, check, compare and history make (a dtnn database, a schema this build knows) before
  // report.py reads it with its own SQL: a newer schema's tables may mean other things.
  (void)dtnn::ResultStore::open_read_only(db);
  std::string cmd = "/usr/bin/python3 " + shell_quote(dtnn::source_dir() + "/analysis/plots/report.py") +
                    " --db " + shell_quote(db) + " --out " + shell_quote(out_dir) + " --format " + shell_quote(format);
  if (!matrix.empty()) cmd += " --matrix " + shell_quote(matrix);
  // The history page asks this binary for `dtnn history --format json` (the change points live in C++).
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (!ec) cmd += " --dtnn " + shell_quote(self);
  const int rc = std::system(cmd.c_str());
  if (rc != 0) return 1;  // report.py printed its one-line error
  for (const std::string& f : formats)
    std::printf("report: %s/%s\n", out_dir.c_str(),
                f == "markdown" ? "report.md" : f == "html" ? "report.html" : "paper/ (PDF, SVG, CSV, LaTeX)");
  return 0;
}

void print_error(const char* what) { dtnn::print_error_line(what); }

// The ranks a launcher started this process among, from the launcher's environment (Open MPI's mpirun, PMI,
// PMIx: srun --mpi=pmix); 1 outside a launcher.
int env_count(std::initializer_list<const char*> names, int fallback) {
  for (const char* name : names)
    if (const std::optional<double> v = dtnn::parse_double(std::getenv(name) ? std::getenv(name) : ""))
      if (*v >= 0 && *v < 1e9) return static_cast<int>(*v);
  return fallback;
}
int launcher_ranks() { return env_count({"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"}, 1); }

// A refusal of the command line, before any rank starts MPI. Every rank of a job that runs one command (Open
// MPI says so: OMPI_NUM_APP_CTX = 1) reaches the same refusal, so rank 0 says it once and the others only exit
// with its status. The ranks of an MPMD job (mpirun a : b) or of another launcher each say theirs: their
// command lines may differ.
void print_usage_error(const char* what) {
  const bool one_command = env_count({"OMPI_NUM_APP_CTX"}, 0) == 1;
  if (one_command && env_count({"OMPI_COMM_WORLD_RANK"}, 0) > 0) return;
  print_error(what);
}

// The engine's commands: train, models, algos, conv, layers.
struct EngineCommands {
  TrainOptions train_options;
  TrainFlags train_flags;
  dtnn::ConvCommandOptions conv_options;
  dtnn::LayersCommandOptions layers_options;
  CLI::App *train = nullptr, *models = nullptr, *algos = nullptr, *conv = nullptr, *layers = nullptr;
};

void add_engine_commands(CLI::App& app, EngineCommands& e) {
  e.train = app.add_subcommand("train", "Train and evaluate one model (PyDTNN option names)");
  add_train_options(*e.train, e.train_flags);
  e.models = app.add_subcommand("models", "List the model zoo");
  e.algos = app.add_subcommand("algos", "List the convolution algorithms of this build");
  dtnn::ConvCommandOptions& conv_options = e.conv_options;
  CLI::App* conv = e.conv = app.add_subcommand("conv", "Time one convolution problem over algorithms and directions");
  conv->add_option("problem", conv_options.problem,
                   "Canonical problem string, e.g. n64_c64h32w32_k64r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32")
      ->required();
  conv->add_option("--algo", conv_options.algos, "Algorithms (comma-separated names, or all)")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  conv->add_option("--dir", conv_options.dirs, "Directions: fwd, bwd_data, bwd_filter, or all")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  conv->add_option("--threads", conv_options.threads, "Threads")->capture_default_str();
  conv->add_option("--samples", conv_options.samples, "Timed samples (each >= 20 ms)")->capture_default_str();
  conv->add_option("--device", conv_options.device, "cpu or gpu (the cuDNN algorithms)")->capture_default_str();
  add_bool(*conv, "allow_tf32", conv_options.allow_tf32, "GPU: TF32 tensor-core math");
  dtnn::LayersCommandOptions& layers_options = e.layers_options;
  CLI::App* layers = e.layers = app.add_subcommand("layers", "Time every convolution layer of a model under each algorithm");
  layers->add_option("--model", layers_options.model, "Model name (see `dtnn models`)")->required();
  layers->add_option("--dataset", layers_options.dataset, "Dataset (must be the model's)");
  layers->add_option("--batch_size", layers_options.batch_size, "Batch size")->capture_default_str();
  layers->add_option("--tensor_format", layers_options.tensor_format, "NHWC or NCHW")->capture_default_str();
  layers->add_option("--conv_algo", layers_options.algos, "Algorithms (comma-separated names, or all)")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  layers->add_option("--threads", layers_options.threads, "Threads")->capture_default_str();
  layers->add_option("--samples", layers_options.samples, "Timed samples per direction")->capture_default_str();
  layers->add_flag("--list", layers_options.list, "Only list the distinct convolution problems");
  layers->add_option("--json", layers_options.json_path, "Also write the measurements to this JSON file");
  layers->add_option("--device", layers_options.device, "cpu or gpu (cuDNN algorithms per direction)")
      ->capture_default_str();
  add_bool(*layers, "allow_tf32", layers_options.allow_tf32, "GPU: TF32 tensor-core math");

}

// The communicator `dtnn train` trains over: MPI's world for --parallel=data, one process for sequential. In a job
// of several ranks (a launcher's environment says so) every rank joins MPI first and the ranks agree on
// --parallel: a sequential rank beside data ranks would train alone while they wait for it in MPI_Init, so
// such a job is refused, said once by rank 0 (null: exit 2). Sequential ranks of one job (PyDTNN's scripts run
// mpirun -np 2 with --parallel=sequential) each train alone, as PyDTNN's do; their MPI world stays open until
// the process ends, so that every rank finalises it.
std::unique_ptr<dtnn::Communicator> start_communicator(const std::string& parallel) {
  if (launcher_ranks() <= 1 || !dtnn::mpi_available())
    return parallel == "data" ? dtnn::make_mpi_communicator() : dtnn::make_local_communicator();
  static std::unique_ptr<dtnn::Communicator> world;
  world = dtnn::make_mpi_communicator();
  const double mine = parallel == "data" ? 1.0 : 0.0;
  const bool some = world->max(mine) > 0.0, all = world->max(-mine) < 0.0;  // max(-x) < 0: every x is 1
  if (some != all) {
    if (world->rank() == 0)
      dtnn::print_error_line("--parallel=data on some ranks of this job and sequential on others: a sequential rank "
                             "would train alone beside the others; give every rank the same --parallel");
    world.reset();
    return nullptr;
  }
  if (all) return std::move(world);
  return dtnn::make_local_communicator();
}

// `dtnn train` after parsing: the option table's listing, or the options resolved and the run.
int cmd_train(EngineCommands& e, std::unique_ptr<dtnn::Communicator>& comm) {
  if (e.train_flags.list) {
    const std::string& format = e.train_flags.list_format;
    if (format != "text" && format != "json" && format != "markdown")
      dtnn::fail("--format: expected text, json or markdown (got '", format, "')");
    std::cout << (format == "json" ? dtnn::option_table_json()
                  : format == "markdown" ? dtnn::option_table_markdown() : dtnn::option_table_text());
    return 0;
  }
  TrainOptions& options = e.train_options;
  std::vector<std::string> given;
  try {
    given = read_train_options(e.train_flags, options);
    dtnn::resolve_options(options, given);
  } catch (const dtnn::Unsupported&) {
    throw;
  } catch (const dtnn::Error& err) {  // a malformed command line
    print_usage_error(err.what());
    return 2;
  }
  comm = start_communicator(options.parallel);
  if (!comm) return 2;
  if (dtnn::cli::names_pydtnn_model_options(given) && comm->rank() == 0)
    dtnn::cli::print_pydtnn_model_time(options, comm->size(), std::cout);
  return dtnn::run_training(options, *comm, std::cout);
}

constexpr int kNoVerdictExit = 2;

// The harness's commands: run, query, check, compare, ingest, report, history.
struct HarnessCommands {
  dtnn::RunnerOptions run_options;
  std::string db = kDefaultDb, query_what, format = "table", targets = kDefaultTargets, select, threshold = "5%";
  dtnn::CompareOptions compare_options;
  dtnn::HistoryOptions history_options;
  std::string history_threshold = "5%", history_format = "table";
  bool fail_on_regression = false, submit = false;
  std::string sbatch_args;  // run --submit
  double query_timeout_s = 600;  // query --timeout: minutes for any real store, not forever
  std::string junit, markdown;  // check, compare, history: CI outputs
  std::string references = kDefaultReferences, record_references, reference_bounds = "-30%,+100%";  // check
  std::string out_dir, report_matrix, report_format = "all";
  dtnn::IngestOptions ingest_options;
  CLI::App *run = nullptr, *query = nullptr, *check = nullptr, *compare = nullptr, *ingest = nullptr,
           *report = nullptr, *history = nullptr;
  bool judging() const { return check->parsed() || compare->parsed() || history->parsed(); }
};

void add_ci_outputs(CLI::App* app, HarnessCommands& h) {
  app->add_option("--junit", h.junit, "Also write JUnit XML (one test case per trial) to this file");
  app->add_option("--markdown", h.markdown, "Also write a Markdown summary (a CI job summary) to this file");
}

void add_check_command(CLI::App& app, HarnessCommands& h) {
  CLI::App* check = h.check = app.add_subcommand(
      "check", "Check stored runs against the accuracy targets and this machine's performance references; exit 1 on "
               "a failure");
  check->add_option("--db", h.db, "Results database")->capture_default_str();
  check->add_option("--targets", h.targets, "Targets file")->capture_default_str();
  check->add_option("--references", h.references,
                    "Performance references file (per machine; a machine without references gets 'no reference')")
      ->capture_default_str();
  check->add_option("--record-references", h.record_references,
                    "Write references from the selected runs' median samples/s to this file (kept: those of other "
                    "trials and machines) instead of checking");
  check->add_option("--reference-bounds", h.reference_bounds,
                    "Bounds recorded with --record-references: LOWER,UPPER as fractions or percentages of the "
                    "value (UPPER 'none': no upper bound)")
      ->capture_default_str();
  check->add_option("--select", h.select, "Only runs of this selection (commit=, matrix=, tag=, runs=)");
  add_ci_outputs(check, h);
}

void add_harness_commands(CLI::App& app, HarnessCommands& h) {
  dtnn::RunnerOptions& run_options = h.run_options;
  std::string &db = h.db, &query_what = h.query_what, &format = h.format, &targets = h.targets,
              &threshold = h.threshold, &out_dir = h.out_dir, &report_matrix = h.report_matrix;
  dtnn::CompareOptions& compare_options = h.compare_options;
  dtnn::IngestOptions& ingest_options = h.ingest_options;
  CLI::App* run = h.run = app.add_subcommand("run", "Run an experiment matrix (experiments/*.toml) into the results store");
  run->add_option("matrix", run_options.matrix_path, "Matrix file")->required();
  run->add_option("--db", run_options.db_path, "Results database")->capture_default_str();
  run->add_flag("--resume", run_options.resume,
                "Skip runs already stored ok (or diverged) for this matrix and environment")
      ->disable_flag_override();
  run->add_flag("--dry-run", run_options.dry_run, "Print the expanded trials and their count; run nothing")
      ->disable_flag_override();
  run->add_option("--only", run_options.only, "Run only trials with this name=value (repeatable; several values of one name: any of them)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run->add_option("--tag", run_options.tags, "Tag every run (repeatable); compare selects by tag=")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run->add_option("--dtnn", run_options.dtnn_binary, "The dtnn binary trials run (default: this one)");
  run->add_option("--commit", run_options.git_commit, "Git commit to record for the runs (with --dtnn of another build)");
  run->add_option("--targets", targets, "Accuracy targets to store with the runs")->capture_default_str();
  run->add_flag("--submit", h.submit, "Submit the matrix as one Slurm batch job whose runner runs it (sbatch)")
      ->disable_flag_override();
  run->add_option("--sbatch-args", h.sbatch_args, "With --submit: sbatch options, split at spaces (e.g. \"--partition=p --time=60\")");

  CLI::App* query = h.query = app.add_subcommand("query", "Named views or one read-only SQL statement over the results");
  query->add_option("view_or_sql", query_what, "A view name (list them with no argument) or an SQL statement");
  query->add_option("--db", db, "Results database")->capture_default_str();
  query->add_option("--format", format, "table, csv or json")->capture_default_str();
  query->add_option("--timeout", h.query_timeout_s, "Stop a statement running longer (seconds; 0: no limit)")
      ->capture_default_str()->check(CLI::Range(0.0, 1e9))->check(finite_number);

  add_check_command(app, h);

  CLI::App* compare = h.compare = app.add_subcommand("compare", "Compare throughput of two run selections; exit 1 on a regression");
  compare->add_option("--baseline", compare_options.baseline, "Baseline runs (commit=, matrix=, tag=, runs=)")->required();
  compare->add_option("--candidate", compare_options.candidate, "Candidate runs")->required();
  compare->add_option("--threshold", threshold, "Slowdown that counts as a regression (5% or 0.05)")->capture_default_str();
  compare->add_option("--warmup-epochs", compare_options.warmup_epochs,
                      "Leading epochs of each run left out of its sample (its median steady-state epoch)")
      ->capture_default_str()->check(CLI::Range(0, INT_MAX));
  compare->add_flag("--cross-machine", compare_options.cross_machine,
                    "Compare runs of different machines (refused by default), flagged in the output");
  compare->add_option("--db", db, "Results database")->capture_default_str();
  add_ci_outputs(compare, h);

  CLI::App* history = h.history = app.add_subcommand(
      "history", "Each trial's values over commits with the steps in them (change points); exit 1 with "
                 "--fail-on-regression when a newest segment regressed");
  dtnn::HistoryOptions& ho = h.history_options;
  history->add_option("--db", db, "Results database")->capture_default_str();
  history->add_option("--select", ho.selection, "Only runs of this selection (commit=, matrix=, tag=, runs=)");
  history->add_option("--metric", ho.metric, "samples_per_s or test_accuracy")->capture_default_str();
  history->add_option("--repo", ho.repo, "Git repository giving the commit order (else: time of each commit's runs)")
      ->capture_default_str()
      ->each([&ho](const std::string&) { ho.repo_given = true; });
  history->add_option("--threshold", h.history_threshold, "A step down by more than this is a regression (5% or 0.05)")
      ->capture_default_str();
  history->add_option("--warmup-epochs", ho.warmup_epochs, "Leading epochs of each run left out (samples_per_s)")
      ->capture_default_str()->check(CLI::Range(0, INT_MAX));
  history->add_option("--max-commits", ho.max_commits, "Newest commits per series to fit (0 = all)")
      ->capture_default_str()->check(CLI::Range(0, INT_MAX));
  history->add_flag("--fail-on-regression", h.fail_on_regression, "Exit 1 when a series' newest segment regressed");
  history->add_option("--format", h.history_format, "table or json")->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  add_ci_outputs(history, h);

  CLI::App* ingest = h.ingest = app.add_subcommand("ingest", "Store benchmarks (bench_conv, dtnn layers or bench_allreduce JSON)");
  ingest->add_option("files", ingest_options.files, "JSON files")->required();
  ingest->add_option("--db", ingest_options.db_path, "Results database")->capture_default_str();
  CLI::App* report = h.report = app.add_subcommand(
      "report", "The results store's report: Markdown with PNG plots, one HTML page, figures and tables for a paper");
  report->add_option("--out", out_dir, "Output directory")->required();
  report->add_option("--format", h.report_format,
                     "markdown (report.md + PNGs), html (report.html, self-contained), paper (paper/: PDF and SVG "
                     "figures, CSV and LaTeX tables), comma-separated, or all")
      ->capture_default_str();
  report->add_option("--db", db, "Results database")->capture_default_str();
  report->add_option("--matrix", report_matrix, "Only runs of this matrix");
}

// `dtnn run`, the writer of runs, also stores the targets file (for `dtnn query accuracy|targets` and the
// report; `dtnn check` reads the file itself and never writes). The file is read first, so a bad one fails
// before any trial runs.
int cmd_run(const dtnn::RunnerOptions& options, const std::string& targets_path) {
  if (options.dry_run) return dtnn::run_matrix(options, std::cout);
  const std::vector<dtnn::ResultStore::Target> targets = dtnn::load_targets(targets_path);
  const int rc = dtnn::run_matrix(options, std::cout);
  std::error_code ec;
  if (std::filesystem::exists(options.db_path, ec)) dtnn::ResultStore::open(options.db_path).replace_targets(targets);
  return rc;
}

// Before anything is read or written: no output of the command may be one of its inputs (`dtnn check --db r.db
// --junit r.db` would leave XML where the results were), and the database may not be the matrix or targets.
void check_harness_files(const HarnessCommands& h) {
  using dtnn::CommandFile;
  if (h.run->parsed())
    dtnn::check_files_distinct({{"--db", h.run_options.db_path, true},
                                {"the matrix", h.run_options.matrix_path, false},
                                {"--targets", h.targets, false}});
  if (h.ingest->parsed()) {
    std::vector<CommandFile> files = {{"--db", h.ingest_options.db_path, true}};
    for (const std::string& f : h.ingest_options.files) files.push_back({"the input file", f, false});
    dtnn::check_files_distinct(files);
  }
  if (h.judging())
    dtnn::check_outputs_writable(
        {{"--junit", h.junit}, {"--markdown", h.markdown}, {"--record-references", h.record_references}});
  if (h.judging())
    dtnn::check_files_distinct({{"--junit", h.junit, true},
                                {"--markdown", h.markdown, true},
                                {"--db", h.db, false},
                                {"--targets", h.check->parsed() ? h.targets : std::string(), false},
                                // Recording merges into its file (read, then replaced atomically): not --references.
                                {"--references", h.check->parsed() && h.record_references.empty() ? h.references
                                                                                                 : std::string(),
                                 false},
                                {"--record-references", h.record_references, true}});
}

// "-30%" or "-0.3" -> -0.3; "none" -> no value (for UPPER).
std::optional<double> parse_bound(const std::string& text, const std::string& all) {
  if (text == "none") return std::nullopt;
  const bool percent = !text.empty() && text.back() == '%';
  const std::optional<double> v = dtnn::parse_double(percent ? text.substr(0, text.size() - 1) : text);
  if (!v || !std::isfinite(*v)) dtnn::fail("--reference-bounds: '", text, "' in '", all, "' is not a number");
  return percent ? *v / 100 : *v;
}

// `dtnn check`: --record-references writes references and judges nothing; else the accuracy targets, then the
// performance references of the file (the default file may be absent: nothing to judge against).
int cmd_check(HarnessCommands& h) {
  if (!h.record_references.empty()) {
    const size_t comma = h.reference_bounds.find(',');
    if (comma == std::string::npos) dtnn::fail("--reference-bounds: expected LOWER,UPPER (e.g. -30%,+100%)");
    const std::optional<double> lower = parse_bound(h.reference_bounds.substr(0, comma), h.reference_bounds);
    const std::optional<double> upper = parse_bound(h.reference_bounds.substr(comma + 1), h.reference_bounds);
    if (!lower || !(*lower <= 0 && *lower > -1)) dtnn::fail("--reference-bounds: LOWER must be in (-100%, 0]");
    if (upper && *upper < 0) dtnn::fail("--reference-bounds: UPPER must be >= 0 (or none)");
    const dtnn::ResultStore store = dtnn::ResultStore::open_read_only(h.db);
    dtnn::record_references(store, h.select, h.record_references, *lower, upper, std::cout);
    return 0;
  }
  const dtnn::CheckCounts c = dtnn::check_targets(h.db, h.targets, h.select, std::cout);
  dtnn::PerfCounts perf;
  std::error_code ec;
  const bool named = h.check->get_option("--references")->count() > 0;
  if (named || std::filesystem::exists(h.references, ec)) {
    const std::vector<dtnn::PerfReference> refs = dtnn::load_references(h.references);
    const dtnn::ResultStore store = dtnn::ResultStore::open_read_only(h.db);
    perf = dtnn::check_references(store, refs, h.select, h.references, std::cout);
  }
  dtnn::write_ci_file(h.junit, dtnn::check_junit(c, dtnn::references_junit(perf)));
  dtnn::write_ci_file(h.markdown, dtnn::check_markdown(c, h.targets) +
                                      (perf.rows.empty() ? "" : dtnn::references_markdown(perf, h.references)));
  return c.fail + perf.fail > 0 ? 1 : 0;
}

int run_harness_command(HarnessCommands& h) {
  check_harness_files(h);
  if (h.run->parsed() && h.submit && !h.run_options.dry_run)
    return dtnn::submit_matrix(h.run_options, h.targets, h.sbatch_args, std::cout);
  if (h.run->parsed() && !h.sbatch_args.empty()) dtnn::fail("--sbatch-args needs --submit");
  if (h.run->parsed()) return cmd_run(h.run_options, h.targets);
  if (h.query->parsed()) return cmd_query(h.db, h.query_what, h.format, h.query_timeout_s);
  if (h.check->parsed()) return cmd_check(h);
  if (h.compare->parsed()) {
    h.compare_options.threshold = parse_fraction(h.threshold);
    const dtnn::ResultStore store = dtnn::ResultStore::open_read_only(h.db);
    const dtnn::Comparison c = dtnn::compare_runs(store, h.compare_options);
    dtnn::print_comparison(std::cout, c, h.compare_options);
    dtnn::write_ci_file(h.junit, dtnn::comparison_junit(c, h.compare_options));
    dtnn::write_ci_file(h.markdown, dtnn::comparison_markdown(c, h.compare_options));
    if (c.regressions > 0 || c.candidate_failures > 0) return 1;
    return c.unjudged > 0 ? 2 : 0;  // could not judge every trial: not a pass
  }
  if (h.history->parsed()) {
    h.history_options.threshold = parse_fraction(h.history_threshold);
    const dtnn::ResultStore store = dtnn::ResultStore::open_read_only(h.db);
    const dtnn::History hist = dtnn::load_history(store, h.history_options);
    if (h.history_format == "json") std::cout << dtnn::history_json(hist, h.history_options) << "\n";
    else dtnn::print_history(std::cout, hist, h.history_options);
    dtnn::write_ci_file(h.junit, dtnn::history_junit(hist, h.history_options));
    dtnn::write_ci_file(h.markdown, dtnn::history_markdown(hist, h.history_options));
    return h.fail_on_regression && hist.regressed_series > 0 ? 1 : 0;
  }
  if (h.report->parsed()) return cmd_report(h.db, h.out_dir, h.report_matrix, h.report_format);
  if (h.ingest->parsed()) return dtnn::run_ingest(h.ingest_options, std::cout);
  return 0;
}

// `dtnn predict` (analysis/perfmodel/predict_command.h). PyDTNN's performance-model options keep PyDTNN's
// names (--cpu_speed, --memory_bw, --network_bw, --network_lat, --network_alg).
// CLI11 would say only "A subcommand is required" for a misspelt command.
bool known_command(const CLI::App& app, int argc, char** argv) {
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known += (known.empty() ? "" : ", ") + sub->get_name();
      found |= sub->get_name() == argv[1];
    }
    if (!found) {
      print_usage_error(("unknown command '" + std::string(argv[1]) + "' (known: " + known + ")").c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

// `dtnn train --evaluate=`: an empty value for a boolean row, which CLI11 cannot tell from the bare flag
// (--evaluate, PyDTNN's True). Printed as the table's own refusal of '' would be; true when found.
bool empty_boolean_value(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "train") return false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (a.size() < 4 || a.compare(0, 2, "--") != 0 || a.back() != '=') continue;
    const dtnn::OptionSpec* s = dtnn::find_option(a.substr(2, a.size() - 3));
    if (!s || s->kind != dtnn::OptionKind::boolean) continue;
    try {
      dtnn::TrainOptions o;
      dtnn::set_option_text(*s, o, "");
    } catch (const std::exception& e) {
      print_usage_error(e.what());
      return true;
    }
  }
  return false;
}

// PyDTNN's parser is argparse, which takes any unambiguous prefix of an option's name (PyDTNN's own
// run_benchmarks.sh passes --history=FILE for --history_file): `dtnn train`'s arguments get the same
// reading. An exact name wins; a prefix of one name is that name; a prefix of several is refused with them
// (argparse's "ambiguous option"), exit 2. Other commands keep exact names. Returns false after the refusal.
bool expand_train_prefixes(const CLI::App& train, std::vector<std::string>& args) {
  if (args.size() < 2 || args[1] != "train") return true;
  std::vector<std::string> names;
  for (const CLI::Option* opt : train.get_options())
    for (const std::string& n : opt->get_lnames()) names.push_back(n);
  for (size_t i = 2; i < args.size(); ++i) {
    std::string& a = args[i];
    if (a == "--") break;
    if (a.size() < 3 || a.compare(0, 2, "--") != 0) continue;
    const size_t eq = a.find('=');
    const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    std::vector<std::string> matches;
    for (const std::string& n : names)
      if (n.compare(0, name.size(), name) == 0) matches.push_back("--" + n);
    if (matches.size() == 1) a = matches[0] + (eq == std::string::npos ? "" : a.substr(eq));
    if (matches.size() > 1) {
      print_usage_error(("ambiguous option: --" + name + " could match " + dtnn::join(matches, ", ")).c_str());
      return false;
    }
  }
  return true;
}

int main(int argc, char** argv) {
  dtnn::cpu::ensure_blas_core(argv);  // may start the program again, with OpenBLAS's right kernels
  std::signal(SIGXFSZ, SIG_IGN);  // past `ulimit -f`, a write fails with EFBIG and is reported, not fatal
  // A stop signal while an output is half written removes the partial `.tmp.<pid>` file (dtnn run's own
  // handlers replace these during its trials and put them back after).
  dtnn::remove_temp_files_on_stop_signals();
  CLI::App app{"dtnn: distributed training of neural networks (a C++ PyDTNN) and its benchmark suite"};
  app.require_subcommand(1);
  // "dtnn 0.9.0 (commit <sha>[+dirty]; <flags>)": the runner reads another build's commit from this line.
  app.set_version_flag("--version", std::string("dtnn " DTNN_VERSION " (commit ") + dtnn::build_commit_label() + "; " +
                                        dtnn::build_info().flags + ")");
  // As with PyDTNN's argparse, an option given twice takes its last value.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  EngineCommands engine;
  add_engine_commands(app, engine);
  HarnessCommands harness;
  add_harness_commands(app, harness);
  dtnn::cli::PredictCommand predict;
  dtnn::cli::add_predict_command(app, predict);
  if (!known_command(app, argc, argv)) return 2;
  std::vector<std::string> args(argv, argv + argc);
  if (!expand_train_prefixes(*engine.train, args)) return 2;
  std::vector<char*> expanded;
  for (std::string& a : args) expanded.push_back(a.data());
  expanded.push_back(nullptr);
  argv = expanded.data();
  if (empty_boolean_value(argc, argv)) return 2;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_usage_error(e.what());
    return 2;
  }

  std::unique_ptr<dtnn::Communicator> comm;
  try {
    if (engine.models->parsed()) return cmd_models();
    if (engine.algos->parsed()) return cmd_algos();
    if (engine.conv->parsed()) return dtnn::run_conv_command(engine.conv_options, std::cout);
    if (engine.layers->parsed()) return dtnn::run_layers_command(engine.layers_options, std::cout);
    if (engine.train->parsed()) return cmd_train(engine, comm);
    if (predict.app->parsed()) return dtnn::cli::cmd_predict(predict);
    return run_harness_command(harness);
  } catch (const dtnn::Unsupported& e) {
    print_error(e.what());
    if (comm && comm->size() > 1) comm->abort(dtnn::kUnsupportedExit);
    return dtnn::kUnsupportedExit;
  } catch (const std::bad_alloc&) {
    print_error(dtnn::kOutOfMemoryLine);
    if (comm && comm->size() > 1) comm->abort(1);
    return 1;
  } catch (const std::exception& e) {
    print_error(e.what());
    if (comm && comm->size() > 1) comm->abort(1);
    return harness.judging() ? kNoVerdictExit : 1;
  }
}
