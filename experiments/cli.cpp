// The dtnn command line: `dtnn train`, `dtnn models`, `dtnn algos`. The only translation unit that
// includes CLI11 (it is heavy to compile). Bad input prints one line, "dtnn: <what>", and exits non-zero:
// 2 for a malformed command line, 1 for everything else.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "backend/cpu/blas.h"
#include "backend/gpu.h"
#include "conv/conv_algorithm.h"
#include "core/error.h"
#include "models/model.h"
#include "parallel/communicator.h"
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
  app.add_option("--weights_and_bias_filename", o.weights_and_bias_filename,
                 "NPZ weights: loaded before training if the file exists, stored after");
  app.add_option("--history_file", o.history_file, "Per-epoch history (PyDTNN format)");
  app.add_option("--tensor_format", o.tensor_format, "NHWC or NCHW")->capture_default_str();
  app.add_option("--conv_algo", o.conv_algo, "Convolution algorithm (see `dtnn algos`; auto picks per layer)")->capture_default_str();
  app.add_option("--dataset", o.dataset_name, "Dataset name")->capture_default_str();
  add_bool(app, "use_synthetic_data", o.use_synthetic_data, "Use synthetic data of the dataset's shape");
  app.add_option("--dataset_train_path", o.dataset_train_path, "Directory of the training files");
  app.add_option("--dataset_test_path", o.dataset_test_path, "Directory of the test files (default: train path)");
  add_bool(app, "test_as_validation", o.test_as_validation, "Use the test set as the validation set");
  app.add_option("--validation_split", o.validation_split, "Fraction of the training set held out")->capture_default_str();
  app.add_option("--optimizer", o.optimizer.name, "sgd or adam")->capture_default_str();
  app.add_option("--learning_rate", o.optimizer.learning_rate, "Learning rate")->capture_default_str();
  add_bool(app, "learning_rate_scaling", o.learning_rate_scaling, "With --parallel=data and sgd, multiply lr by ranks");
  app.add_option("--momentum", o.optimizer.momentum, "SGD momentum")->capture_default_str();
  add_bool(app, "nesterov", o.optimizer.nesterov, "Nesterov momentum");
  app.add_option("--decay", o.optimizer.decay, "L2 decay applied to every trainable value")->capture_default_str();
  app.add_option("--beta1", o.optimizer.beta1, "Adam beta1")->capture_default_str();
  app.add_option("--beta2", o.optimizer.beta2, "Adam beta2")->capture_default_str();
  app.add_option("--epsilon", o.optimizer.epsilon, "Adam epsilon (inside the square root)")->capture_default_str();
  app.add_option("--loss_func", o.loss_func, "categorical_cross_entropy or binary_cross_entropy")->capture_default_str();
  app.add_option("--metrics", o.metrics, "Comma-separated metrics")->capture_default_str();
  app.add_option("--parallel", o.parallel, "sequential or data (run under mpirun)")->capture_default_str();
  app.add_option("--threads", o.threads, "Threads per rank (0: OMP_NUM_THREADS, else cores/ranks)")->capture_default_str();
  add_bool(app, "enable_gpu", o.enable_gpu, "Train on the GPU");
  app.add_option("--seed", o.seed, "Seed of every random choice")->capture_default_str();
  app.add_option("--report", o.report, "Write a JSON run report to this file");
  add_bool(app, "progress", o.progress, "Live progress bar on a terminal (False: one line per epoch)");
}

int cmd_models() {
  std::printf("%-12s %-8s %-14s %12s\n", "model", "dataset", "input (HWC)", "params");
  for (const dtnn::ModelInfo& info : dtnn::model_zoo()) {
    auto model = dtnn::create_model(info.name);
    dtnn::BuildContext ctx;
    ctx.max_batch = 1;
    model->build(ctx, 0);
    std::printf("%-12s %-8s %-14s %12lld\n", info.name, info.dataset, model->input_shape().str().c_str(),
                static_cast<long long>(model->num_params()));
  }
  return 0;
}

int cmd_algos() {
  std::printf("Convolution algorithms, in fallback order (--conv_algo=NAME or auto):\n");
  for (const dtnn::ConvAlgorithm* a : dtnn::conv_algorithms()) std::printf("  %s\n", std::string(a->name()).c_str());
  std::printf("BLAS: %s\nGPU backend: %s\n", dtnn::cpu::blas_version().c_str(), dtnn::gpu_description().c_str());
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
  // As with PyDTNN's argparse, an option given twice takes its last value.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  TrainOptions options;
  CLI::App* train = app.add_subcommand("train", "Train and evaluate one model (PyDTNN option names)");
  add_train_options(*train, options);
  CLI::App* models = app.add_subcommand("models", "List the model zoo");
  CLI::App* algos = app.add_subcommand("algos", "List the convolution algorithms of this build");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_error(e.what());
    return 2;
  }

  std::unique_ptr<dtnn::Communicator> comm;
  try {
    if (models->parsed()) return cmd_models();
    if (algos->parsed()) return cmd_algos();
    if (train->parsed()) {
      comm = options.parallel == "data" ? dtnn::make_mpi_communicator() : dtnn::make_local_communicator();
      return dtnn::run_training(options, *comm, std::cout);
    }
  } catch (const std::exception& e) {
    print_error(e.what());
    if (comm && comm->size() > 1) comm->abort(1);
    return 1;
  }
  return 0;
}
