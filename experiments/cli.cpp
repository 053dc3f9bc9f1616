// The dtnn command line: `dtnn train`, `models`, `algos`, `conv`, `layers` (the engine) and `run`, `query`, `check`,
// `compare`, `report` (the harness). The only translation unit that includes CLI11 (it is heavy to
// compile). Bad input prints one line, "dtnn: <what>", and exits non-zero: 2 for a malformed command line,
// 3 (kUnsupportedExit) for a valid request this build or machine cannot run, 1 for everything else.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "analysis/check.h"
#include "analysis/compare.h"
#include "analysis/query.h"
#include "backend/cpu/blas.h"
#include "backend/gpu.h"
#include "conv/conv_algorithm.h"
#include "core/error.h"
#include "experiments/conv_command.h"
#include "experiments/ingest.h"
#include "experiments/layers_command.h"
#include "experiments/runner.h"
#include "models/model.h"
#include "models/plan.h"
#include "parallel/communicator.h"
#include "results/store.h"
#include "train/run.h"

namespace {

using dtnn::TrainOptions;

void add_bool(CLI::App& app, const std::string& name, bool& value, const std::string& help) {
  // PyDTNN spells booleans as values (--test_as_validation=True); a bare flag means true.
  app.add_flag("--" + name, value, help)->default_str(value ? "True" : "False");
}

void add_train_options(CLI::App& app, TrainOptions& o) {
  app.add_option("--model", o.model_name, "Model name (see `dtnn models`)")->capture_default_str();
  app.add_option("--batch_size", o.batch_size, "Batch size per rank")->capture_default_str();
  app.add_option("--num_epochs", o.num_epochs, "Number of epochs")->capture_default_str();
  app.add_option("--steps_per_epoch", o.steps_per_epoch, "Global batches per epoch (0: whole epochs)")->capture_default_str();
  add_bool(app, "evaluate", o.evaluate, "Evaluate on the test set before training");
  add_bool(app, "evaluate_only", o.evaluate_only, "Only evaluate on the test set");
  add_bool(app, "evaluate_on_test", o.evaluate_on_test, "Evaluate on the test set after training");
  app.add_option("--weights_and_bias_filename", o.weights_and_bias_filename,
                 "NPZ weights: loaded before training if the file exists, stored after");
  app.add_option("--history_file", o.history_file, "Per-epoch history (PyDTNN format)");
  app.add_option("--tensor_format", o.tensor_format, "NHWC, NCHW or AUTO (NHWC on the CPU, NCHW on the GPU)")
      ->capture_default_str();
  app.add_option("--conv_algo", o.conv_algo, "Convolution algorithm: a name (see `dtnn algos`), auto (cache or heuristic) or best_of (time each layer)")->capture_default_str();
  add_bool(app, "enable_fused_bn_relu", o.enable_fused_bn_relu, "Fuse BatchNormalization + Relu");
  add_bool(app, "enable_fused_conv_relu", o.enable_fused_conv_relu, "Fuse Conv2D + Relu");
  add_bool(app, "enable_fused_conv_bn", o.enable_fused_conv_bn, "Fuse Conv2D + BatchNormalization");
  add_bool(app, "enable_fused_conv_bn_relu", o.enable_fused_conv_bn_relu, "Fuse Conv2D + BatchNormalization + Relu");
  add_bool(app, "enable_fused_add_relu", o.enable_fused_add_relu,
           "Apply the Relu after an AdditionBlock in the block's last addition (bit-identical results)");
  add_bool(app, "sync_batchnorm", o.sync_batchnorm, "BatchNormalization statistics over every rank's batch");
  app.add_option("--dataset", o.dataset_name, "Dataset name")->capture_default_str();
  add_bool(app, "use_synthetic_data", o.use_synthetic_data, "Use synthetic data of the dataset's shape");
  add_bool(app, "pad_to_cifar", o.pad_to_cifar, "Pad 28x28x1 MNIST-format images to 32x32x3 for CIFAR models");
  app.add_option("--dataset_train_path", o.dataset_train_path, "Directory of the training files");
  app.add_option("--dataset_test_path", o.dataset_test_path, "Directory of the test files (default: train path)");
  add_bool(app, "test_as_validation", o.test_as_validation, "Use the test set as the validation set");
  app.add_option("--validation_split", o.validation_split, "Fraction of the training set held out")->capture_default_str();
  add_bool(app, "flip_images", o.flip_images, "Randomly flip training images horizontally");
  app.add_option("--flip_images_prob", o.flip_images_prob, "Probability of a flip per sample")->capture_default_str();
  add_bool(app, "crop_images", o.crop_images, "Random pad-and-crop of training images");
  app.add_option("--crop_images_prob", o.crop_images_prob, "Probability of a crop per sample")->capture_default_str();
  app.add_option("--crop_images_padding", o.crop_images_padding, "Zero padding P of the crop (offsets in [-P, P])")
      ->capture_default_str();
  app.add_option("--crop_images_size", o.crop_images_size, "PyDTNN's crop: not supported (use --crop_images_padding)");
  add_bool(app, "prefetch", o.prefetch, "Load the next batch on a loader thread during the current step");
  app.add_option("--optimizer", o.optimizer.name, "sgd, rmsprop, adam or nadam")->capture_default_str();
  app.add_option("--learning_rate", o.optimizer.learning_rate, "Learning rate")->capture_default_str();
  add_bool(app, "learning_rate_scaling", o.learning_rate_scaling, "With --parallel=data and sgd, multiply lr by ranks");
  app.add_option("--momentum", o.optimizer.momentum, "SGD momentum")->capture_default_str();
  add_bool(app, "nesterov", o.optimizer.nesterov, "Nesterov momentum");
  app.add_option("--decay", o.optimizer.decay, "L2 decay applied to every trainable value")->capture_default_str();
  app.add_option("--beta1", o.optimizer.beta1, "Adam beta1")->capture_default_str();
  app.add_option("--beta2", o.optimizer.beta2, "Adam beta2")->capture_default_str();
  app.add_option("--rho", o.optimizer.rho, "RMSProp decay of the squared-gradient average")->capture_default_str();
  app.add_option("--epsilon", o.optimizer.epsilon, "RMSProp/Adam/Nadam epsilon (inside the square root)")->capture_default_str();
  app.add_option("--loss_func", o.loss_func, "categorical_cross_entropy or binary_cross_entropy")->capture_default_str();
  app.add_option("--metrics", o.metrics, "Comma-separated metrics")->capture_default_str();
  app.add_option("--parallel", o.parallel, "sequential or data (run under mpirun)")->capture_default_str();
  app.add_option("--threads", o.threads, "Threads per rank (0: OMP_NUM_THREADS, else cores/ranks)")->capture_default_str();
  add_bool(app, "enable_gpu", o.enable_gpu, "Train on the GPU (rank r uses GPU r % GPUs of its node)");
  add_bool(app, "allow_tf32", o.allow_tf32, "GPU: TF32 tensor-core math for float32 convolutions and GEMMs");
  add_bool(app, "enable_nccl", o.enable_nccl, "GPU + --parallel=data: allreduce gradients with NCCL");
  add_bool(app, "enable_cudnn_auto_conv_alg", o.enable_cudnn_auto_conv_alg,
           "GPU, --conv_algo=auto: time every cuDNN algorithm per layer (cudnnFind); False: PyDTNN's fixed algorithms");
  add_bool(app, "gpu_layer_times", o.gpu_layer_times, "GPU: measure per-layer times (synchronises after each layer)");
  app.add_option("--seed", o.seed, "Seed of every random choice")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {  // CLI11 would wrap -1 and saturate 1e30 into a uint64 silently
            errno = 0;
            char* end = nullptr;
            std::strtoull(v.c_str(), &end, 10);
            if (v.empty() || v[0] == '-' || *end != '\0' || errno == ERANGE)
              return "expected an integer in [0, 18446744073709551615], got '" + v + "'";
            return "";
          },
          "UINT64"));
  app.add_option("--report", o.report, "Write a JSON run report to this file");
  add_bool(app, "progress", o.progress, "Live progress bar on a terminal (False: one line per epoch)");
  dtnn::LRSchedulerOptions& s = o.lr_schedulers;
  app.add_option("--lr_schedulers", s.names,
                 "Comma list applied in order: warm_up, early_stopping, reduce_lr_on_plateau, reduce_lr_every_nepochs, "
                 "stop_at_loss, model_checkpoint (default none; PyDTNN's default list stops runs without validation)")
      ->expected(0, 1)  // --lr_schedulers= (empty) means none
      ->capture_default_str();
  app.add_option("--warm_up_epochs", s.warm_up_epochs, "warm_up: epochs of linear ramp from lr/ranks to lr")->capture_default_str();
  app.add_option("--early_stopping_metric", s.early_stopping_metric, "early_stopping: watched value (val_ prefix: validation)")->capture_default_str();
  app.add_option("--early_stopping_patience", s.early_stopping_patience, "early_stopping: epochs without improvement")->capture_default_str();
  app.add_option("--early_stopping_weights_filename", s.early_stopping_weights_filename,
                 "early_stopping: also store the best weights in this NPZ (default: memory only)");
  app.add_option("--reduce_lr_on_plateau_metric", s.reduce_lr_on_plateau_metric, "reduce_lr_on_plateau: watched value")->capture_default_str();
  app.add_option("--reduce_lr_on_plateau_factor", s.reduce_lr_on_plateau_factor, "reduce_lr_on_plateau: lr multiplier")->capture_default_str();
  app.add_option("--reduce_lr_on_plateau_patience", s.reduce_lr_on_plateau_patience, "reduce_lr_on_plateau: epochs without improvement")->capture_default_str();
  app.add_option("--reduce_lr_on_plateau_min_lr", s.reduce_lr_on_plateau_min_lr, "reduce_lr_on_plateau: lowest rate")->capture_default_str();
  app.add_option("--reduce_lr_every_nepochs_factor", s.reduce_lr_every_nepochs_factor, "reduce_lr_every_nepochs: lr multiplier")->capture_default_str();
  app.add_option("--reduce_lr_every_nepochs_nepochs", s.reduce_lr_every_nepochs_nepochs, "reduce_lr_every_nepochs: period in epochs")->capture_default_str();
  app.add_option("--reduce_lr_every_nepochs_min_lr", s.reduce_lr_every_nepochs_min_lr, "reduce_lr_every_nepochs: lowest rate")->capture_default_str();
  app.add_option("--stop_at_loss_metric", s.stop_at_loss_metric, "stop_at_loss: watched value")->capture_default_str();
  app.add_option("--stop_at_loss_threshold", s.stop_at_loss_threshold, "stop_at_loss: stop once the value is better than this")->capture_default_str();
  app.add_option("--model_checkpoint_metric", s.model_checkpoint_metric, "model_checkpoint: watched value")->capture_default_str();
  app.add_option("--model_checkpoint_save_freq", s.model_checkpoint_save_freq, "model_checkpoint: save only on epochs divisible by this")->capture_default_str();
  app.add_option("--checkpoint_file", o.checkpoint_file, "Rewrite this checkpoint (NPZ) after every epoch (rank 0)");
  app.add_option("--resume_from", o.resume_from, "Continue the run recorded in this checkpoint file");
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
  std::printf("BLAS: %s\nGPU backend: %s\n", dtnn::cpu::blas_version().c_str(), dtnn::gpu_description().c_str());
  return 0;
}

// Defaults that work from the repository root and from anywhere else.
const std::string kDefaultDb = "results/dtnn.db";
const std::string kDefaultTargets = std::string(DTNN_SOURCE_DIR) + "/analysis/targets.toml";

int cmd_query(const std::string& db, const std::string& what, const std::string& format) {
  if (what.empty()) {
    std::printf("Named views (dtnn query VIEW), or give one SQL statement:\n");
    for (const auto& [name, description] : dtnn::query_views()) std::printf("  %-13s %s\n", name.c_str(), description.c_str());
    return 0;
  }
  const std::string sql = dtnn::query_sql(what);
  if (format != "table" && format != "csv" && format != "json") dtnn::fail("unknown --format '", format, "' (table, csv or json)");
  const dtnn::ResultStore store = dtnn::ResultStore::open_read_only(db);
  dtnn::print_query(std::cout, store.query(sql), format);
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

// 'text' for a POSIX shell, single quotes inside escaped.
std::string shell_quote(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int cmd_report(const std::string& db, const std::string& out_dir, const std::string& matrix) {
  if (!std::ifstream(db)) dtnn::fail(db, ": no such results database (run `dtnn run` first)");
  std::string cmd = "/usr/bin/python3 " + shell_quote(std::string(DTNN_SOURCE_DIR) + "/analysis/plots/report.py") +
                    " --db " + shell_quote(db) + " --out " + shell_quote(out_dir);
  if (!matrix.empty()) cmd += " --matrix " + shell_quote(matrix);
  const int rc = std::system(cmd.c_str());
  if (rc != 0) return 1;  // report.py printed its one-line error
  std::printf("report: %s/report.md\n", out_dir.c_str());
  return 0;
}

void print_error(const char* what) {
  const std::string msg = what;
  std::cerr << (msg.rfind("dtnn: ", 0) == 0 ? "" : "dtnn: ") << msg << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dtnn: distributed training of neural networks (a C++ PyDTNN) and its benchmark suite"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dtnn " DTNN_VERSION);
  // As with PyDTNN's argparse, an option given twice takes its last value.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  TrainOptions options;
  CLI::App* train = app.add_subcommand("train", "Train and evaluate one model (PyDTNN option names)");
  add_train_options(*train, options);
  CLI::App* models = app.add_subcommand("models", "List the model zoo");
  CLI::App* algos = app.add_subcommand("algos", "List the convolution algorithms of this build");
  dtnn::ConvCommandOptions conv_options;
  CLI::App* conv = app.add_subcommand("conv", "Time one convolution problem over algorithms and directions");
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
  dtnn::LayersCommandOptions layers_options;
  CLI::App* layers = app.add_subcommand("layers", "Time every convolution layer of a model under each algorithm");
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

  dtnn::RunnerOptions run_options;
  CLI::App* run = app.add_subcommand("run", "Run an experiment matrix (experiments/*.toml) into the results store");
  run->add_option("matrix", run_options.matrix_path, "Matrix file")->required();
  run->add_option("--db", run_options.db_path, "Results database")->capture_default_str();
  run->add_flag("--resume", run_options.resume, "Skip runs already stored ok for this matrix and environment")
      ->disable_flag_override();
  run->add_flag("--dry-run", run_options.dry_run, "Print the expanded trials and their count; run nothing")
      ->disable_flag_override();
  run->add_option("--only", run_options.only, "Run only trials with this name=value (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run->add_option("--tag", run_options.tags, "Tag every run (repeatable); compare selects by tag=")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run->add_option("--dtnn", run_options.dtnn_binary, "The dtnn binary trials run (default: this one)");
  run->add_option("--commit", run_options.git_commit, "Git commit to record for the runs (with --dtnn of another build)");

  std::string db = kDefaultDb, query_what, format = "table";
  CLI::App* query = app.add_subcommand("query", "Named views or one read-only SQL statement over the results");
  query->add_option("view_or_sql", query_what, "A view name (list them with no argument) or an SQL statement");
  query->add_option("--db", db, "Results database")->capture_default_str();
  query->add_option("--format", format, "table, csv or json")->capture_default_str();

  std::string targets = kDefaultTargets, select;
  CLI::App* check = app.add_subcommand("check", "Check stored runs against the accuracy targets; exit 1 on a failure");
  check->add_option("--db", db, "Results database")->capture_default_str();
  check->add_option("--targets", targets, "Targets file")->capture_default_str();
  check->add_option("--select", select, "Only runs of this selection (commit=, matrix=, tag=, runs=)");

  dtnn::CompareOptions compare_options;
  std::string threshold = "5%";
  CLI::App* compare = app.add_subcommand("compare", "Compare throughput of two run selections; exit 1 on a regression");
  compare->add_option("--baseline", compare_options.baseline, "Baseline runs (commit=, matrix=, tag=, runs=)")->required();
  compare->add_option("--candidate", compare_options.candidate, "Candidate runs")->required();
  compare->add_option("--threshold", threshold, "Slowdown that counts as a regression (5% or 0.05)")->capture_default_str();
  compare->add_option("--db", db, "Results database")->capture_default_str();

  std::string out_dir, report_matrix;
  dtnn::IngestOptions ingest_options;
  CLI::App* ingest = app.add_subcommand("ingest", "Store convolution benchmarks (bench_conv or dtnn layers JSON)");
  ingest->add_option("files", ingest_options.files, "JSON files")->required();
  ingest->add_option("--db", ingest_options.db_path, "Results database")->capture_default_str();
  CLI::App* report = app.add_subcommand("report", "Markdown report with PNG plots from the results store");
  report->add_option("--out", out_dir, "Output directory")->required();
  report->add_option("--db", db, "Results database")->capture_default_str();
  report->add_option("--matrix", report_matrix, "Only runs of this matrix");
  if (argc > 1 && argv[1][0] != '-') {  // CLI11 would say only "A subcommand is required"
    std::string known;
    bool found = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known += (known.empty() ? "" : ", ") + sub->get_name();
      found |= sub->get_name() == argv[1];
    }
    if (!found) {
      print_error(("unknown command '" + std::string(argv[1]) + "' (known: " + known + ")").c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_error(e.what());
    return 2;
  }

  std::unique_ptr<dtnn::Communicator> comm;
  try {
    if (models->parsed()) return cmd_models();
    if (algos->parsed()) return cmd_algos();
    if (conv->parsed()) return dtnn::run_conv_command(conv_options, std::cout);
    if (layers->parsed()) return dtnn::run_layers_command(layers_options, std::cout);
    if (train->parsed()) {
      comm = options.parallel == "data" ? dtnn::make_mpi_communicator() : dtnn::make_local_communicator();
      return dtnn::run_training(options, *comm, std::cout);
    }
    if (run->parsed()) return dtnn::run_matrix(run_options, std::cout);
    if (query->parsed()) return cmd_query(db, query_what, format);
    if (check->parsed()) {
      dtnn::ResultStore store = dtnn::ResultStore::open_existing(db);
      return dtnn::check_targets(store, targets, select, std::cout).fail > 0 ? 1 : 0;
    }
    if (compare->parsed()) {
      compare_options.threshold = parse_fraction(threshold);
      const dtnn::ResultStore store = dtnn::ResultStore::open_read_only(db);
      const dtnn::Comparison c = dtnn::compare_runs(store, compare_options);
      dtnn::print_comparison(std::cout, c, compare_options);
      return c.regressions > 0 ? 1 : 0;
    }
    if (report->parsed()) return cmd_report(db, out_dir, report_matrix);
    if (ingest->parsed()) return dtnn::run_ingest(ingest_options, std::cout);
  } catch (const dtnn::Unsupported& e) {
    print_error(e.what());
    if (comm && comm->size() > 1) comm->abort(dtnn::kUnsupportedExit);
    return dtnn::kUnsupportedExit;
  } catch (const std::bad_alloc&) {
    print_error("out of memory: a size (--batch_size, a convolution's dimensions, --threads) or a file's declared "
                "contents need more memory than this machine has");
    if (comm && comm->size() > 1) comm->abort(1);
    return 1;
  } catch (const std::exception& e) {
    print_error(e.what());
    if (comm && comm->size() > 1) comm->abort(1);
    return 1;
  }
  return 0;
}
